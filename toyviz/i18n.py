"""The visitor's language: the words of the page and of every message the server writes, from one catalogue per
language (toyviz/locales/<lang>.toml, edited by translators without reading code).

The language of an event is resolved once, from its request: the page's `?lang=` (a deep link, the header's
switch), else the browser's Accept-Language, else English (`language`). `limited` (toyviz.serving.limits), through
which every page event passes, runs the event in it (`in_visitors_language`); then `t(key)` anywhere below says the
key in that language, and a user's mistake raised with a key (`UserError(text, key, **fields)`) is said in it
(`said`). Gradio's own gr.I18n is not used: it picks the language from `navigator.language` in the browser, so it
follows neither `?lang=` nor the Accept-Language the server sees, and it cannot translate text the server makes.

A leaf as toyviz.errors is (it imports nothing of toyviz but that): every layer may say a key.
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import string
import tomllib
from contextlib import contextmanager
from pathlib import Path

from toyviz.errors import UserError

LANGUAGES = ("en", "es")            # the first is the fallback: a key a catalogue lacks is said in it
FOLDER = Path(__file__).parent / "locales"
_current = contextvars.ContextVar("toyviz_language", default=LANGUAGES[0])


class Term(str):
    """A catalogue key given as a message's field (the box a message names): said in the message's language."""


def _flat(table: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for key, value in table.items():
        out.update(_flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key: value})
    return out


@functools.cache
def catalogue(lang: str) -> dict[str, str]:
    """key ("tabs.tokens") → text, from toyviz/locales/<lang>.toml (its tables make the key's first parts)."""
    return _flat(tomllib.loads((FOLDER / f"{lang}.toml").read_text(encoding="utf-8")))


def placeholders(text: str) -> set[str]:
    """The {names} a text formats (a catalogue's two languages must use the same)."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def t(key: str, lang: str | None = None, **fields) -> str:
    """The key's text in `lang` (default: the current event's), its {fields} filled (a Term field said too)."""
    lang = lang if lang in LANGUAGES else _current.get()
    text = catalogue(lang).get(key) or catalogue(LANGUAGES[0])[key]
    said = {name: t(value, lang) if isinstance(value, Term) else value for name, value in fields.items()}
    return text.format(**said) if said else text


def parts(key: str, lang: str | None = None, **fields) -> list[tuple[str, str | None]]:
    """The key's text as `t` says it, cut at its fields: [(text, None) for the words, (value, field name) for each
    field], so a caller can make a field a link (the Why paragraph's numbers point at their panels) while a
    translator moves the fields about in the sentence."""
    lang = lang if lang in LANGUAGES else _current.get()
    text = catalogue(lang).get(key) or catalogue(LANGUAGES[0])[key]
    out = []
    for literal, name, spec, conversion in string.Formatter().parse(text):
        if literal:
            out.append((literal, None))
        if name is not None:
            value = fields[name]
            value = t(value, lang) if isinstance(value, Term) else value
            out.append((format(str(value) if conversion == "s" else value, spec or ""), name))
    return out


def best(accept_language: str | None) -> str | None:
    """The Accept-Language header's most wanted language of ours ("es-MX,es;q=0.9,en;q=0.8" → "es"), or None."""
    wanted = []
    for n, part in enumerate((accept_language or "").split(",")):
        tag, _, q = part.strip().partition(";q=")
        try:
            weight = float(q) if q else 1.0
        except ValueError:
            continue
        wanted.append((-weight, n, tag.strip().split("-")[0].lower()))
    return next((lang for _, _, lang in sorted(wanted) if lang in LANGUAGES), None)


def language(request) -> str:
    """A request's language: its page's ?lang=, else its Accept-Language, else the first of LANGUAGES. A request
    of any kind (Gradio's, Starlette's) or None."""
    query = getattr(request, "query_params", None) or {}
    if query.get("lang") in LANGUAGES:
        return query["lang"]
    headers = getattr(request, "headers", None) or {}
    return best(headers.get("accept-language")) or LANGUAGES[0]


def current() -> str:
    """The language of the event being answered (English outside one)."""
    return _current.get()


@contextmanager
def speaking(lang: str):
    """`t` says keys in `lang` within this block."""
    token = _current.set(lang if lang in LANGUAGES else LANGUAGES[0])
    try:
        yield
    finally:
        _current.reset(token)


def in_visitors_language(fn):
    """fn(request, *args), a generator too, run in the request's language. A generator's each step is run in it:
    Gradio runs each in a fresh copy of the context, where a language set by the step before is gone."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(request, *args):
            lang, steps = language(request), fn(request, *args)
            while True:
                with speaking(lang):
                    try:
                        step = next(steps)
                    except StopIteration:
                        return
                yield step
        return stream

    @functools.wraps(fn)
    def wrapper(request, *args):
        with speaking(language(request)):
            return fn(request, *args)
    return wrapper


def said(err: Exception | str) -> str:
    """A user's mistake in the current language: its key's text where it was raised with one, else its own (a
    text as it is)."""
    key = getattr(err, "key", None)
    return t(key, **err.fields) if key else str(err)


def mistake(key: str, error: type = UserError, /, **fields) -> UserError:
    """A user's mistake written once, in the catalogues: its English text (logs, Python callers), its key and fields
    to say it in the page's language; `error` a UserError of a kind its catcher tells apart (live.RunRefused)."""
    return error(t(key, LANGUAGES[0], **fields), key, **fields)
