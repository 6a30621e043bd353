"""The lesson file format: a Markdown file read into a Lesson of Steps, each a view, a text and maybe a question.

A lesson is a Markdown file: a front matter (---, title: …, about: …, language: es if not English, ---), then steps, each from a heading "## Title"
to the next (docs/teach-with-it.md has the whole format, with an example). The lines right under a step's heading, up
to the first blank line, are its settings. A deep-link key of the app (toyviz.settings.controls.DEFAULTS: tab, prompt,
layer, …) sets the view; a step keeps the previous step's view and changes only what it names. `ask`, `choices` and
`answer` make its question; `answer` names what the model computes at reveal time (ANSWERS; toyviz.lessons.answers
computes it), never the answer itself, so a lesson cannot go stale. `misconceptions` names what a vote for each
wrong choice stands for (`" the": the commonest word wins | …`; the lecture's report counts them, toyviz.classroom.report).
`point` says what to show once the answer is out.
`train: induction` makes the step start a live run when it is shown (toyviz.training.live; the Watch it learn tab
draws it), which a question's `answer: induction step` then reads. Then the step's text, in Markdown. Mistakes in a
file raise one LessonError naming every one with its line (a heading with no title too: a step of its own, never
merged into the one above), so one run of `python -m toyviz.lessons FILE` finds them all.

No model here (and so no torch): the store keeps an Answer, the phones' routes read a Lesson.
"""
from __future__ import annotations

import json
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from toyviz.errors import UserError
from toyviz.i18n import LANGUAGES
from toyviz.settings import links
from toyviz.settings.controls import CHOICES, DEFAULTS, RANGES

FRONT_MATTER = ("title", "about", "language")      # language: the lecture's (toyviz.i18n.LANGUAGES; default en)
QUESTION = ("ask", "choices", "answer", "point", "misconceptions")
ASKING = ("ask", "choices", "answer", "misconceptions")      # the settings that make a step a question
TRAIN = "train"                         # a step that starts a live run when shown: `train: induction`
TRAINABLE = ("induction",)              # the text recipe needs a lecturer's pasted text: started from its tab
HEADING = re.compile(r"##(?!#)")     # a step's heading; "### …" inside a step's text is the text's own
SETTING = re.compile(r"([a-z_]+):(.*)$")        # "layer: 2"; a key is lowercase, as in a deep link
BETWEEN_CHOICES = re.compile(r'\|(?=(?:[^"]*"[^"]*")*[^"]*$)')    # a | outside quotes: "<|endoftext|>" is one
TRUE, FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
ANSWERS = {     # `answer:` → what the live model (or a live run) is asked, from the step's view (answers.COMPUTED)
    "top token": "the most likely next token after the prompt",
    "top probability": "the top token's probability at the view's temperature, against 1: higher/lower",
    "kept tokens": "how many tokens temperature, top-k and top-p leave a chance",
    "distinct draws": "how many different tokens 10 draws of the next token give (the view's seed)",
    "attended token": "the token the view's head attends to most from the view's query position",
    "leak": "without the causal mask, do earlier predictions move when the last word changes?",
    "kv speed-up": "how many times more positions generating costs without the KV cache",
    "confused encoding": "which sinusoidal variant has two positions that look most alike",
    "induction step": "the step at which the live run's induction head formed",
}
NEEDS_GPT_VIEW = ("attended token",)    # the others read the GPT whatever stack the first tabs show
LIVE_ANSWERS = ("induction step",)      # read off a live run (a `train:` step's), not the loaded models


class LessonError(UserError):
    """The mistakes in a lesson file, each (line, what): the message names the file and the line of each, one a
    line in the file's order, for the lecturer. `line` is the first one's."""

    def __init__(self, name: str, problems):
        self.name, self.problems = name, tuple(sorted(dict.fromkeys(problems), key=lambda p: p[0]))
        self.line = self.problems[0][0]
        super().__init__("\n".join(f"{name}, line {line}: {what}" for line, what in self.problems))


class Mistakes:
    """What is wrong in one file so far. A check `fail`s at its first mistake (raising LessonError); `each` notes it
    and lets the reading go on with the next line or step, so that every mistake is found in one go."""

    def __init__(self, name: str):
        self.name, self.found = name, []

    def fail(self, what: str, line: int):
        raise LessonError(self.name, [(line, what)])

    def note(self, what: str, line: int):       # a mistake after which the reading can go on
        self.found.append((line, what))

    @contextmanager
    def each(self):
        try:
            yield
        except LessonError as err:
            self.found.extend(err.problems)

    def raise_any(self):
        if self.found:
            raise LessonError(self.name, self.found)


@dataclass(frozen=True)
class Question:
    ask: str
    answer: str                   # what the model computes: a key of ANSWERS
    choices: tuple[str, ...]      # () → the class types its answer
    line: int                     # the `answer:` line
    # (choice, the misconception a vote for it stands for when it turns out wrong): the report counts them
    misconceptions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Step:
    title: str
    view: dict                    # a complete view state, as links.parse returns one
    text: str                     # Markdown
    question: Question | None
    point: str                    # what to show after the reveal ("" = nothing said)
    line: int                     # the heading's line
    origin: dict = field(default_factory=dict)     # view key → the line that set it (maybe in an earlier step)
    train: str = ""               # the live recipe the step starts when shown ("" = none)

    @property
    def link(self) -> str:
        """The step's view as the app's deep-link query ("?tab=…&…")."""
        return links.build(self.view)


@dataclass(frozen=True)
class Lesson:
    title: str
    about: str
    steps: tuple[Step, ...]
    name: str                     # the file it came from, as errors name it
    language: str = "en"          # the lecture's: its bar, its phones' page, its report (toyviz.i18n)


@dataclass(frozen=True)
class Answer:
    value: str                    # what a vote is compared with: a token's text, a number, "yes"…
    detail: str                   # one sentence for the reveal, with the figures behind the value
    choice: int | None            # the index of the choice that matches value (None: no choice does, or none given)


# ---------------------------------------------------------------- reading a file ----------

def unquote(raw: str, fail) -> str:
    """A value as written: surrounding spaces dropped, unless it is in double quotes (JSON: " be", "a\\nb")."""
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            fail(f"{raw} is not a valid quoted value (write it as a JSON string)")
    return raw


def view_value(key: str, raw: str, fail):
    """A view setting checked as the app's controls accept it (toyviz.settings.controls); model-dependent maxima
    (layer, head, query, …) are checked against a model by `check`."""
    default = DEFAULTS[key]
    if isinstance(default, bool):
        if raw.lower() not in TRUE + FALSE:
            fail(f"{key} is on or off ({'/'.join(TRUE)} or {'/'.join(FALSE)}), not {raw!r}")
        return raw.lower() in TRUE
    if isinstance(default, (int, float)):
        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        low, high = RANGES[key]
        if not math.isfinite(number) or (isinstance(default, int) and number != int(number)):
            fail(f"{key} must be {'a whole number' if isinstance(default, int) else 'a number'}, not {raw!r}")
        if number < low or (high is not None and number > high):
            fail(f"{key} must be from {low} to {'what the model has' if high is None else high}, not {raw}")
        return type(default)(number)
    if key in CHOICES and raw not in CHOICES[key]:
        fail(f"{key} must be one of {', '.join(CHOICES[key])}; not {raw!r}")
    if not raw.strip():
        fail(f"{key} is empty")
    if len(raw) > links.MAX_TEXT:
        fail(f"{key} is {len(raw):,} characters: a link carries at most {links.MAX_TEXT:,}")
    return raw


def misconceptions(raw: str, choices: tuple[str, ...], fail) -> tuple[tuple[str, str], ...]:
    """`" the": it picks the commonest word | 9-10: hotter means random` → ((choice, misconception), …): a choice
    (quoted when it has spaces at its ends, as in `choices:`), a colon, what a vote for it would mean were it wrong."""
    named = []
    for part in BETWEEN_CHOICES.split(raw):
        part = part.strip()
        quoted = re.match(r'("(?:[^"\\]|\\.)*")\s*:(.*)$', part)
        choice, colon, meaning = ((quoted[1], ":", quoted[2]) if quoted else part.partition(":"))
        choice, meaning = unquote(choice, fail), meaning.strip()
        if not colon or not choice.strip() or not meaning:
            fail(f"misconceptions are CHOICE: what a vote for it means, separated by |; not {part!r}")
        if choices and choice not in choices:
            fail(f"misconceptions name {choice!r}, which is not one of the choices ({' | '.join(map(repr, choices))})")
        if choice in dict(named):
            fail(f"misconceptions name {choice!r} twice")
        named.append((choice, meaning))
    return tuple(named)


def question(settings: dict, view: dict, fail) -> Question | None:
    """The step's question from its ask/choices/answer/misconceptions settings (each a (value, line)), or None."""
    if not set(ASKING) & settings.keys():
        return None
    first = min(line for key, (_, line) in settings.items() if key in ASKING)
    for needed in ("ask", "answer"):
        if needed not in settings:
            fail(f"a question needs both ask: and answer: (this one has no {needed}:)", first)
    kind, line = settings["answer"]
    if kind not in ANSWERS:
        fail(f"answer must be one of: {', '.join(ANSWERS)}; not {kind!r}", line)
    if kind in NEEDS_GPT_VIEW and view["model"] != "gpt":
        fail(f"answer {kind!r} reads the GPT, but this step's view shows model {view['model']!r}", line)
    choices = ()
    if "choices" in settings:
        raw, where = settings["choices"]
        choices = tuple(unquote(c, lambda what: fail(what, where)) for c in BETWEEN_CHOICES.split(raw))
        if len(choices) < 2 or not all(c.strip() for c in choices) or len(set(choices)) < len(choices):
            fail("choices are two or more different answers separated by |", where)
    named = ()
    if "misconceptions" in settings:
        raw, where = settings["misconceptions"]
        named = misconceptions(raw, choices, lambda what: fail(what, where))
    return Question(settings["ask"][0], kind, choices, line, named)


def parse(text: str, name: str = "<lesson>") -> Lesson:
    """A lesson file's text → a Lesson, its views checked against the app's controls (not yet against a model:
    see `check`). Raises LessonError naming every mistake: a setting that fails is left out and reading goes on."""
    lines, mistakes = text.splitlines(), Mistakes(name)
    fail, note = mistakes.fail, mistakes.note
    if not lines or lines[0].strip() != "---":
        fail("a lesson starts with its front matter: a line ---, then title: …, then ---", 1)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        fail("the front matter opened here is never closed by a line ---", 1)
    meta = {}
    for n in range(1, end):
        m = SETTING.match(lines[n].strip())
        if lines[n].strip() and (not m or m[1] not in FRONT_MATTER):
            note(f"the front matter takes {' and '.join(FRONT_MATTER)}, not {lines[n].strip()!r}", n + 1)
        elif m:
            with mistakes.each():
                meta[m[1]] = unquote(m[2], lambda what: fail(what, n + 1))
    if not meta.get("title"):
        note("the front matter has no title: …", 1)
    if meta.get("language", LANGUAGES[0]) not in LANGUAGES:
        note(f"the language is one of {', '.join(LANGUAGES)}, not {meta['language']!r}", 1)

    starts = [i for i in range(end + 1, len(lines)) if HEADING.match(lines[i])]
    stray = next((i for i in range(end + 1, starts[0] if starts else len(lines)) if lines[i].strip()), None)
    if stray is not None:
        note("text outside a step: a step starts with a heading '## …'", stray + 1)
    if not starts:
        note("the lesson has no steps: each starts with a heading '## …'", end + 1)
        mistakes.raise_any()

    steps, view, origin = [], dict(DEFAULTS), {}
    for start, stop in zip(starts, starts[1:] + [len(lines)]):
        view, origin, settings, n = dict(view), dict(origin), {}, start + 1
        title = lines[start][2:].strip()
        if not title:
            note("a step's heading has no title: write it after '## ' (this is a step of its own)", start + 1)
        elif not lines[start][2].isspace():
            note(f"a step's heading is '## ' and its title, with a space: '## {title}'", start + 1)
        while n < stop and (m := SETTING.match(lines[n].strip())) and lines[n].strip():
            key, raw, where = m[1], m[2], n + 1
            n += 1
            with mistakes.each():
                if key not in DEFAULTS and key not in QUESTION and key != TRAIN:
                    fail(f"unknown setting {key!r}: a step takes the app's view keys ({', '.join(DEFAULTS)}), "
                         f"{', '.join(QUESTION)} and {TRAIN}; leave a blank line before the step's text", where)
                if key == TRAIN and unquote(raw, lambda what: fail(what, where)) not in TRAINABLE:
                    fail(f"train: starts a live run of {' or '.join(TRAINABLE)}, not {raw.strip()!r}", where)
                if key in settings:
                    fail(f"{key} is set twice in this step (first on line {settings[key][1]})", where)
                # each choice is unquoted on its own: '" be" | " do"' is not one quoted value
                value = raw if key in ("choices", "misconceptions") else unquote(raw, lambda what: fail(what, where))
                settings[key] = (value, where)
                if key in DEFAULTS:
                    view[key], origin[key] = view_value(key, value, lambda what: fail(what, where)), where
        with mistakes.each():       # a step with a mistake is left out: the lesson is not returned anyway
            steps.append(Step(title, view, "\n".join(lines[n:stop]).strip(), question(settings, view, fail),
                              settings.get("point", ("", 0))[0], start + 1, origin, settings.get(TRAIN, ("", 0))[0]))
    mistakes.raise_any()
    return Lesson(meta["title"], meta.get("about", ""), tuple(steps), name, meta.get("language", LANGUAGES[0]))


# ---------------------------------------------------------------- a vote against the answer ----------

def matches(choice: str, value: str) -> bool:
    """A choice against the model's value: the same text up to spaces at the ends (a class types "be" for " be"),
    or for a number a range: "3-5", "10+"."""
    choice, value = choice.strip(), value.strip()
    if choice == value:
        return True
    numbers = re.fullmatch(r"(\d+)\s*(?:[-–]\s*(\d+)|(\+))", choice)
    if numbers and value.isdigit():
        low, high = int(numbers[1]), math.inf if numbers[3] else int(numbers[2])
        return low <= int(value) <= high
    return False
