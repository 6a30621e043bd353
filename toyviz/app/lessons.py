"""Lessons: a lecturer's steps through the app, each a view, a short text and a question the live model answers.

A lesson is a Markdown file: a front matter (---, title: …, about: …, ---), then steps, each from a heading "## Title"
to the next (docs/teach-with-it.md has the whole format, with an example). The lines right under a step's heading, up
to the first blank line, are its settings. A deep-link key of the app (toyviz.app.controls.DEFAULTS: tab, prompt,
layer, …) sets the view; a step keeps the previous step's view and changes only what it names. `ask`, `choices` and
`answer` make its question; `answer` names what the model computes at reveal time (ANSWERS), never the answer
itself, so a lesson cannot go stale. `point` says what to show once the answer is out. `train: induction` makes the
step start a live run when it is shown (toyviz.training.live; the Watch it learn tab draws it), which a question's
`answer: induction step` then reads. Then the step's text, in
Markdown. Mistakes in a file raise one LessonError naming every one with its line (a heading with no title too: a
step of its own, never merged into the one above), so one run of `python -m toyviz.app.lessons FILE` finds them all.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from toyviz.api import GPT
from toyviz.app import links
from toyviz.app.controls import CHOICES, DEFAULTS, RANGES
from toyviz.app.explorer import Explorer
from toyviz.app.figures.live import BORN_AT
from toyviz.app.figures.mask import first_difference, prediction_shift
from toyviz.app.figures.positional import distinguishability
from toyviz.errors import UserError
from toyviz.models.layers import ENCODING_VARIANTS, sinusoidal_encoding
from toyviz.models.sampling import draw, next_token_probs

SHIPPED = Path(__file__).with_name("lessons")
FRONT_MATTER = ("title", "about")
QUESTION = ("ask", "choices", "answer", "point")
TRAIN = "train"                         # a step that starts a live run when shown: `train: induction`
TRAINABLE = ("induction",)              # the text recipe needs a lecturer's pasted text: started from its tab
CROSSING = BORN_AT                      # an induction score this high: the head has formed, as the figures mark it
HEADING = re.compile(r"##(?!#)")     # a step's heading; "### …" inside a step's text is the text's own
SETTING = re.compile(r"([a-z_]+):(.*)$")        # "layer: 2"; a key is lowercase, as in a deep link
BETWEEN_CHOICES = re.compile(r'\|(?=(?:[^"]*"[^"]*")*[^"]*$)')    # a | outside quotes: "<|endoftext|>" is one
TRUE, FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
DRAWS = 10                  # "distinct draws": how many next tokens the class imagines drawing
FORMULA = (128, 64)         # the Positions tab's formula sliders start at 128 positions, d_model 64 (layout.py)
MASK_EDIT = "dream"         # the word the Inside-a-head tab puts in place of the prompt's last (its default)


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
    """A view setting checked as the app's controls accept it (toyviz.app.controls); model-dependent maxima
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


def question(settings: dict, view: dict, fail) -> Question | None:
    """The step's question from its ask/choices/answer settings (each a (value, line)), or None."""
    if not {"ask", "choices", "answer"} & settings.keys():
        return None
    first = min(line for key, (_, line) in settings.items() if key in ("ask", "choices", "answer"))
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
    return Question(settings["ask"][0], kind, choices, line)


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
                value = raw if key == "choices" else unquote(raw, lambda what: fail(what, where))
                settings[key] = (value, where)
                if key in DEFAULTS:
                    view[key], origin[key] = view_value(key, value, lambda what: fail(what, where)), where
        with mistakes.each():       # a step with a mistake is left out: the lesson is not returned anyway
            steps.append(Step(title, view, "\n".join(lines[n:stop]).strip(), question(settings, view, fail),
                              settings.get("point", ("", 0))[0], start + 1, origin, settings.get(TRAIN, ("", 0))[0]))
    mistakes.raise_any()
    return Lesson(meta["title"], meta.get("about", ""), tuple(steps), name)


# ---------------------------------------------------------------- against a model ----------

def explorer_of(models) -> Explorer:
    """What `check` and `answer` ask questions of: the app's Explorer, or one made around a bare GPT."""
    return models if isinstance(models, Explorer) else Explorer(models, None)


def stack_size(model: str, explorer: Explorer) -> tuple[str, int, int] | None:
    """(its name, layers, heads) of the stack a view shows; None when that model is not loaded."""
    if model == "gpt":
        return "the GPT", explorer.gpt.config.n_layer, explorer.gpt.config.n_head
    if explorer.translator is None:
        return None
    config = explorer.translator.config
    layers = config.n_encoder_layer if model == "encoder" else config.n_decoder_layer
    return f"the translator's {model}", layers, config.n_head


def check(lesson: Lesson, models) -> Lesson:
    """The lesson's views against a loaded model (an Explorer or a GPT): a layer, head, query position, snapshot
    or feature the model has not raises LessonError naming the line that set each. → the lesson."""
    explorer, mistakes = explorer_of(models), Mistakes(lesson.name)
    gpt, snapshots = explorer.need_gpt(), len(explorer.snapshots())
    for step in lesson.steps:
        v, limits = step.view, {}
        if stack := stack_size(v["model"], explorer):
            name, layers, heads = stack
            limits = {"layer": (layers, f"{name} has {layers} layers"), "head": (heads, f"{name} has {heads} heads")}
        tokens = len(gpt.encode(v["prompt"])[0])
        limits["query"] = (tokens, f"the prompt is {tokens} tokens (BOS first), positions 0 to {tokens - 1}")
        limits["snapshot"] = (snapshots, f"the GPT has {snapshots} snapshots (the last is the final model)")
        if max(v["feature"], v["steer_feature"]) >= 0:          # the dictionary is loaded only when a step uses it
            features = len(explorer.features())
            limits["feature"] = limits["steer_feature"] = (features, f"the GPT's dictionary has {features} features")
        for key, (size, why) in limits.items():
            if v[key] >= size:          # a step after the one that set it repeats the mistake: named once
                mistakes.note(f"{key} {v[key]}: {why}", step.origin.get(key, step.line))
    mistakes.raise_any()
    return lesson


def load(path, models=None) -> Lesson:
    """Read, parse and (given a model) check a lesson file."""
    path = Path(path)
    lesson = parse(path.read_text(encoding="utf-8"), path.name)
    return check(lesson, models) if models is not None else lesson


def shipped() -> list[Path]:
    """The lessons that come with toyviz."""
    return sorted(SHIPPED.glob("*.md"))


def available() -> dict[str, Path]:
    """The lessons a page may open by name (?lesson=NAME, the Lessons picker): the shipped ones, and the lecturer's
    own *.md in the folder $TOYVIZ_LESSONS names (same name: the lecturer's). Only these: a name from a visitor's
    link is never a path, so no file elsewhere on the server is read (and quoted in an error message)."""
    folder = os.environ.get("TOYVIZ_LESSONS")
    own = sorted(Path(folder).expanduser().glob("*.md")) if folder else []
    return {path.stem: path for path in shipped() + own}


def catalogue() -> list[tuple[str, str]]:
    """(title, name) of each available lesson, for the app's Lessons picker (one that does not parse is named
    by its file, and says what is wrong when opened)."""
    def title(path: Path) -> str:
        try:
            return load(path).title
        except (OSError, LessonError):
            return path.name
    return [(title(path), name) for name, path in available().items()]


# ---------------------------------------------------------------- the answers ----------

def quoted(piece: str) -> str:
    return json.dumps(piece, ensure_ascii=False)


def last_logits(explorer: Explorer, view: dict) -> torch.Tensor:
    return explorer.trace(view["prompt"])[0].logits[-1]


def top_token(explorer, view):
    probs = next_token_probs(last_logits(explorer, view))
    p, i = probs.max(0)
    piece = explorer.gpt.tokenizer.piece(int(i))
    return piece, f"the model's top next token is {quoted(piece)}, with probability {p:.0%}"


def top_probability(explorer, view):
    logits, t = last_logits(explorer, view), view["temperature"]
    at_t, at_1 = float(next_token_probs(logits, t).max()), float(next_token_probs(logits).max())
    value = "higher" if at_t > at_1 + 1e-6 else "lower" if at_t < at_1 - 1e-6 else "the same"
    return value, f"the top token has {at_t:.1%} at temperature {t:g} and {at_1:.1%} at temperature 1"


def kept_tokens(explorer, view):
    probs = next_token_probs(last_logits(explorer, view), view["temperature"], view["top_k"], view["top_p"])
    kept = int((probs > 0).sum())
    return str(kept), (f"{kept} of {probs.numel():,} tokens keep some probability at temperature "
                       f"{view['temperature']:g}, top-k {view['top_k']}, top-p {view['top_p']:g}")


def distinct_draws(explorer, view):
    probs = next_token_probs(last_logits(explorer, view), view["temperature"], view["top_k"], view["top_p"])
    generator = torch.Generator().manual_seed(view["seed"])
    drawn = [explorer.gpt.tokenizer.piece(draw(probs, generator)) for _ in range(DRAWS)]
    return str(len(set(drawn))), f"{DRAWS} draws (seed {view['seed']}): " + ", ".join(map(quoted, drawn))


def attended_token(explorer, view):
    trace = explorer.trace(view["prompt"])[0]
    layer, head = explorer.layer_head(trace, view["layer"], view["head"])
    query = explorer.position(trace, view["query"], "query")
    weights = trace.attention[layer, head, query]
    key = int(weights.argmax())
    return trace.tokens[key], (f"head {layer}.{head} puts {float(weights[key]):.0%} of position {query} "
                               f"({quoted(trace.tokens[query])})'s attention on {quoted(trace.tokens[key])} "
                               f"at position {key}")


def leak(explorer, view):
    masked, edited, unmasked, edited_unmasked = explorer.mask_experiment(view["prompt"], MASK_EDIT)
    upto = first_difference(masked.token_ids, edited.token_ids)
    # upto ≥ 1: both prompts start with the same BOS
    shut = float(prediction_shift(masked, edited, upto).max())
    open_ = float(prediction_shift(unmasked, edited_unmasked, upto).max())
    return ("yes" if open_ > 1e-4 else "no"), (
        f"with the last word changed to {quoted(MASK_EDIT)}, the earlier predictions move by up to {open_:.2g} "
        f"without the causal mask and by {shut:.2g} with it")


def kv_speedup(explorer, view):
    r = explorer.kv_cache_benchmark(view["prompt"])
    w, wo = r["with_cache"]["positions_processed"], r["without_cache"]["positions_processed"]
    return str(round(wo / w)), (f"{r['new_tokens']} new tokens: {wo:,} positions computed without the KV cache, "
                                f"{w:,} with it ({wo / w:.1f}× fewer)")


def confused_encoding(explorer, view):
    length, d_model = FORMULA
    distance = {v: distinguishability(sinusoidal_encoding(length, d_model, v)) for v in ENCODING_VARIANTS}
    worst = min(distance, key=distance.get)
    return worst, ("the smallest distance between two positions' encodings: " +
                   ", ".join(f"{v} {d:.3f}" for v, d in distance.items()))


def induction_step(explorer, view):
    """The step at which the live run's induction head formed (its best head's induction score reached CROSSING):
    read off the run a `train: induction` step started, as it stands. A run still on its plateau is not an answer
    yet: the reveal is refused with why, and nothing is stored."""
    from toyviz.app.watch import shared_runs
    from toyviz.training.live import crossing_step
    run = shared_runs().current()
    if run is None or run.recipe != "induction":
        raise UserError("no induction run to read: a step with 'train: induction' starts one when it is shown "
                        "(or press Start on the Watch it learn tab)")
    step = crossing_step(run, CROSSING)
    last = run.records[-1]["step"] if run.records else 0
    if step is None and run.running:
        raise UserError(f"the run is still training (step {last} of {run.settings['steps']}) and no head has "
                        f"formed yet: reveal once the in-context loss has dropped")
    if step is None:
        return "never", f"no head's induction score reached {CROSSING} in this run ({run.state} at step {last})"
    return str(step), (f"the best head's induction score reached {CROSSING} at step {step} of this run "
                       f"(seed {run.seed}), where the in-context loss drops")


ANSWERS = {     # `answer:` → what the live model (or code) computes, from the step's view
    "top token": top_token,                  # the most likely next token after the prompt
    "top probability": top_probability,      # the top token's probability at the view's temperature, against 1: higher/lower
    "kept tokens": kept_tokens,              # how many tokens temperature, top-k and top-p leave a chance
    "distinct draws": distinct_draws,        # how many different tokens 10 draws of the next token give (the view's seed)
    "attended token": attended_token,        # the token the view's head attends to most from the view's query position
    "leak": leak,                            # without the causal mask, do earlier predictions move when the last word changes?
    "kv speed-up": kv_speedup,               # how many times more positions generating costs without the KV cache
    "confused encoding": confused_encoding,  # which sinusoidal variant has two positions that look most alike
    "induction step": induction_step,        # the step at which the live run's induction head formed
}
NEEDS_GPT_VIEW = ("attended token",)
LIVE_ANSWERS = ("induction step",)           # read off a live run (a `train:` step's), not the loaded models         # the others read the GPT whatever stack the first tabs show


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


def answer(step: Step, models) -> Answer:
    """The step's question answered by the live model (an Explorer or a GPT) on the step's view."""
    if step.question is None:
        raise ValueError(f"step {step.title!r} asks no question")
    explorer = explorer_of(models)
    value, detail = ANSWERS[step.question.answer](explorer, step.view)
    choice = next((i for i, c in enumerate(step.question.choices) if matches(c, value)), None)
    return Answer(value, detail, choice)


def main(paths: list[str]) -> int:
    """python -m toyviz.app.lessons [FILE …]: check lessons (the shipped ones by default) on the shipped
    models, and print each step's link and its question's answer, or every mistake of a file with its line —
    what to run before class. → 1 when any file has a mistake."""
    import toyviz
    explorer, failed = explorer_of(toyviz.load("gpt")), 0
    for path in paths or shipped():
        try:
            lesson = load(path, explorer)
        except (OSError, LessonError) as err:           # every mistake, one a line, each naming its file and line
            print(err)
            failed = 1
            continue
        print(f"{lesson.title} ({lesson.name}): {len(lesson.steps)} steps")
        for n, step in enumerate(lesson.steps, start=1):
            print(f"  {n}. {step.title}  {step.link}")
            if step.question and step.question.answer in LIVE_ANSWERS:
                print("     answer read off the live run this lesson starts, at the reveal")
            elif step.question:
                a = answer(step, explorer)
                among = "no choice matches" if step.question.choices and a.choice is None else ""
                print(f"     answer {quoted(a.value)} {among}— {a.detail}")
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
