"""Lesson files (toyviz.lessons): the shipped lessons parse, fit the shipped model, open the views they
name and have their questions answered by the live model; a mistake in a file gives one message naming its line."""
import html
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qsl

import pytest

import toyviz
from toyviz.app.explorer import Explorer
from toyviz.errors import UserError
from toyviz.lessons import answers, library
from toyviz.lessons.check import check
from toyviz.lessons.format import LIVE_ANSWERS, Lesson, LessonError, Question, matches, parse
from toyviz.settings import links
from toyviz.settings.controls import DEFAULTS

SHIPPED_GPT = Path(__file__).resolve().parent.parent / "checkpoints" / "gpt" / "config.json"
needs_shipped = pytest.mark.skipif(not SHIPPED_GPT.is_file(), reason="the shipped GPT checkpoint is missing")

HEAD = "---\ntitle: A test lesson\n---\n\n"          # 4 lines: a step's heading is line 5


def lesson(body: str) -> Lesson:
    return parse(HEAD + body, "test.md")


def error(body: str, *models, **dictionary) -> LessonError:
    """The LessonError of a lesson's body, parsed and (given the models: GPT, translator) checked against them."""
    with pytest.raises(LessonError) as caught:
        parsed = lesson(body)
        if models:
            check(parsed, *models, **dictionary)
    return caught.value


@pytest.fixture(scope="module")
def shipped_explorer():
    if not SHIPPED_GPT.is_file():
        pytest.skip("the shipped GPT checkpoint is missing")
    return Explorer(toyviz.load("gpt"), None)


# ---------------------------------------------------------------- the format ----------

def test_a_step_keeps_the_previous_view_and_changes_what_it_names():
    parsed = lesson("## One\ntab: inside\nlayer: 1\nprompt: \" two spaces  \"\n\nSome *text*.\n\n"
                    "## Two\nhead: 2\nask: Which?\nchoices: \" be\" | b\nanswer: top token\npoint: the bars\n")
    one, two = parsed.steps
    assert (one.title, one.text, one.question, one.line) == ("One", "Some *text*.", None, 5)
    assert one.view == {**DEFAULTS, "tab": "inside", "layer": 1, "prompt": " two spaces  "}
    assert two.view == {**one.view, "head": 2}
    assert two.question == Question("Which?", "top token", (" be", "b"), 16)
    assert two.point == "the bars" and two.origin == {"tab": 6, "layer": 7, "prompt": 8, "head": 13}


def test_a_bar_inside_quotes_is_part_of_a_choice():
    parsed = lesson('## S\nask: ?\nchoices: "<|endoftext|>" | " be" |a\nanswer: top token\n')
    assert parsed.steps[0].question.choices == ("<|endoftext|>", " be", "a")


@pytest.mark.parametrize("body, line, says", [
    ("## S\ntab: atention\n", 6, "tab must be one of"),
    ("## S\ntab: sample\nlayr: 2\n", 7, "unknown setting 'layr'"),
    ("## S\n\ntext\n\n## T\ntemperature: hot\n", 10, "temperature must be a number"),
    ("## S\ntop_p: 3\n", 6, "top_p must be from 0.05 to 1.0"),
    ("## S\nlayer: 1.5\n", 6, "layer must be a whole number"),
    ("## S\nprojector: maybe\n", 6, "projector is on or off"),
    ("## S\nhead: 1\nhead: 2\n", 7, "head is set twice"),
    ("## S\ntab: sample\nask: What comes next?\n", 7, "no answer:"),
    ("## S\nchoices: a | b\nanswer: top token\n", 6, "no ask:"),
    ("## S\nask: ?\nanswer: the future\n", 7, "answer must be one of"),
    ("## S\nask: ?\nchoices: only one\nanswer: top token\n", 7, "two or more different answers"),
    ("## S\nmodel: encoder\nask: ?\nanswer: attended token\n", 8, "reads the GPT"),
    ("Hello class\n\n## S\n", 5, "text outside a step"),
    ("\n", 3, "no steps"),     # the line that closes the front matter
])
def test_each_mistake_gives_one_message_naming_its_line(body, line, says):
    err = error(body)
    assert err.line == line and says in str(err), str(err)
    assert str(err).startswith(f"test.md, line {line}: ")


@pytest.mark.parametrize("text, line, says", [
    ("title: no opening\n", 1, "starts with its front matter"),
    ("---\ntitle: never closed\n", 1, "never closed"),
    ("---\nabout: no title\n---\n## S\n", 1, "no title"),
    ("---\ntitle: T\nauthor: me\n---\n## S\n", 3, "the front matter takes title and about"),
])
def test_a_broken_front_matter_is_named_too(text, line, says):
    with pytest.raises(LessonError) as caught:
        parse(text, "front.md")
    assert caught.value.line == line and says in str(caught.value)


def test_number_choices_match_ranges():
    assert matches("be", " be") and matches("2-4", "3") and matches("201+", "354")
    assert not matches("2-4", "5") and not matches("bee", " be") and not matches("1", "10")


# ---------------------------------------------------------------- against a model ----------

def test_a_view_the_model_has_not_is_refused_at_the_line_that_set_it(tiny_gpt):
    # the tiny GPT has 2 layers × 4 heads and a context of 64; the layer was set two steps earlier
    err = error("## S\nlayer: 2\nhead: 0\n\n## T\n\n## U\nquery: 3\n", tiny_gpt)
    assert err.line == 6 and "layer 2: the GPT has 2 layers" in str(err)
    err = error("## S\nhead: 4\n", tiny_gpt)
    assert err.line == 6 and "the GPT has 4 heads" in str(err)
    err = error("## S\nprompt: a b\n\n## T\nquery: 60\n", tiny_gpt)
    assert err.line == 9 and "query 60: the prompt is" in str(err)
    assert check(lesson("## S\nlayer: 1\nhead: 3\nquery: -1\n"), tiny_gpt).steps[0].view["layer"] == 1


def test_a_translator_view_is_checked_against_the_translator(tiny_gpt, tiny_translator):
    both = (tiny_gpt, tiny_translator)
    err = error("## S\nmodel: decoder\nlayer: 2\n", *both)
    assert err.line == 7 and "the translator's decoder has 2 layers" in str(err)
    check(lesson("## S\nmodel: encoder\nlayer: 1\nhead: 3\n"), *both)


def test_answers_come_from_the_model_not_the_file(tiny_gpt):
    """A random tiny model answers too: the answer is whatever the model at hand computes, per prompt."""
    parsed = lesson("## S\nprompt: In the beginning\nask: ?\nanswer: top token\n\n"
                    "## T\nprompt: and the earth was\nask: ?\nanswer: top token\n\n"
                    "## U\nlayer: 1\nhead: 2\nquery: 2\nanswer: attended token\nask: ?\n")
    for step in parsed.steps[:2]:
        logits = tiny_gpt.trace(step.view["prompt"]).logits[-1]
        assert answers.answer(step, tiny_gpt).value == tiny_gpt.tokenizer.piece(int(logits.argmax()))
    assert answers.answer(parsed.steps[0], tiny_gpt).choice is None      # no choices given: the class types it
    step = parsed.steps[2]
    weights = tiny_gpt.trace(step.view["prompt"]).attention[1, 2, 2]
    got = answers.answer(step, tiny_gpt)
    assert got.value == tiny_gpt.trace(step.view["prompt"]).tokens[int(weights.argmax())]
    assert got.choice is None and f"{float(weights.max()):.0%}" in got.detail


@needs_shipped
def test_the_shipped_answer_changes_with_the_prompt(shipped_explorer):
    base = lesson("## S\ntab: sample\nprompt: To be, or not to\nask: ?\nchoices: be | king\nanswer: top token\n")
    other = lesson("## S\ntab: sample\nprompt: The king is dead. Long live the\nask: ?\nchoices: be | king\n"
                   "answer: top token\n")
    first, second = (answers.answer(p.steps[0], shipped_explorer.gpt) for p in (base, other))
    assert (first.value, first.choice, second.value, second.choice) == (" be", 0, " king", 1)


@needs_shipped
def test_a_feature_the_shipped_dictionary_has_not_is_refused(shipped_explorer):
    features = len(shipped_explorer.caches.features())
    check(lesson(f"## S\ntab: features\nfeature: {features - 1}\n"), shipped_explorer.gpt, features=shipped_explorer.caches.features)
    err = error(f"## S\ntab:features\nfeature:{features}\n", shipped_explorer.gpt, features=shipped_explorer.caches.features)      # no space after ":" is fine
    assert err.line == 7 and f"dictionary has {features} features" in str(err)


# ---------------------------------------------------------------- the shipped lessons ----------

@needs_shipped
@pytest.mark.parametrize("path", library.shipped(), ids=lambda p: p.stem)
def test_a_shipped_lesson_fits_the_model_and_every_view_opens(path, shipped_explorer):
    parsed = check(library.load(path), shipped_explorer.gpt, features=shipped_explorer.caches.features)
    assert len(parsed.steps) >= 5 and sum(s.question is not None for s in parsed.steps) >= 3
    for step in parsed.steps:
        assert step.text or step.point, step.title
        assert links.parse(dict(parse_qsl(step.link[1:]))) == step.view, step.title


@needs_shipped
@pytest.mark.parametrize("path", library.shipped(), ids=lambda p: p.stem)
def test_every_shipped_question_is_answered_by_the_model_among_its_choices(path, shipped_explorer):
    lesson = library.load(path)
    for step in lesson.steps:
        if step.question and step.question.answer not in LIVE_ANSWERS:   # a live run's: test_lesson_training
            got = answers.answer(step, shipped_explorer.gpt, lang=lesson.language)     # "más alta" in Spanish
            assert got.value and got.detail
            assert got.choice is not None, f"{step.title}: the model says {got.value!r}, no choice matches"


def test_the_picker_lists_the_shipped_lessons_and_the_lecturers_own(tmp_path, monkeypatch):
    (tmp_path / "mine.md").write_text(HEAD + "## S\n", encoding="utf-8")
    (tmp_path / "broken.md").write_text("no front matter\n", encoding="utf-8")
    monkeypatch.setenv("TOYVIZ_LESSONS", str(tmp_path))
    english = [("Attention from the ground up", "attention-from-the-ground-up"), ("Sampling", "sampling"),
               ("Watch it learn", "watch-it-learn")]
    spanish = [("La atención desde cero", "attention-from-the-ground-up.es"), ("Muestreo", "sampling.es"),
               ("Míralo aprender", "watch-it-learn.es")]
    mine = [("broken.md", "broken"), ("A test lesson", "mine")]
    assert library.catalogue("en") == english + mine                   # a broken file is listed in every language
    assert library.catalogue("es") == spanish + [("broken.md", "broken")]
    assert sorted(library.catalogue()) == sorted(english + spanish + mine) == sorted(library.catalogue("fr"))


def test_a_spanish_lesson_is_the_english_one_asked_in_spanish():
    """Issue 56: each shipped lesson has a Spanish twin with the same steps, views and answers; its questions and
    texts are Spanish, its token choices the GPT's (Shakespeare's English)."""
    for path in library.shipped():
        if path.name.endswith(".es.md"):
            continue
        english, spanish = library.load(path), library.load(path.with_name(path.stem + ".es.md"))
        assert (english.language, spanish.language) == ("en", "es")
        assert [s.view for s in english.steps] == [s.view for s in spanish.steps]
        assert [s.question and s.question.answer for s in english.steps] == \
               [s.question and s.question.answer for s in spanish.steps]
        for a, b in zip(english.steps, spanish.steps):
            assert a.title != b.title and (not a.question or a.question.ask != b.question.ask)
            if a.question:
                tokens = [c for c in a.question.choices if c.startswith(" ") or c.startswith("<") or c[0].isdigit()]
                assert all(c in b.question.choices for c in tokens), (a.title, tokens)


def test_a_lesson_names_its_language():
    assert lesson("## S\n").language == "en"
    assert parse("---\ntitle: T\nlanguage: es\n---\n\n## S\n", "t.md").language == "es"
    with pytest.raises(LessonError, match="the language is one of en, es, not 'fr'"):
        parse("---\ntitle: T\nlanguage: fr\n---\n\n## S\n", "t.md")


def test_the_lessons_are_shipped_as_package_data():
    assert [p.name for p in library.shipped()] == ["attention-from-the-ground-up.es.md", "attention-from-the-ground-up.md",
                                                    "sampling.es.md", "sampling.md", "watch-it-learn.es.md",
                                                    "watch-it-learn.md"]
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert '"shipped/*.md"' in pyproject



def test_the_lessons_load_neither_gradio_nor_plotly():
    """toyviz.lessons sits below the app: a command-line check or a test reads and answers lessons without the
    page's libraries."""
    code = ("import sys, toyviz.lessons.__main__, toyviz.lessons.answers, toyviz.lessons.check, toyviz.lessons.library; "
            "print(sorted(m for m in ('gradio', 'plotly') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------- the presenter ----------

PRESENTED = HEAD + ("## Tokens\ntab: tokens\nprompt: In the beginning\n\nThe *text* first.\n\n"
                    "## Which next?\ntab: sample\ntemperature: 0.5\nask: The next token?\nchoices: a | b\n"
                    "answer: top token\npoint: the bars\n\n"
                    "## Projected\nprojector: on\n")


@pytest.fixture
def presenting(tmp_path, tiny_gpt, monkeypatch):
    """A Presenter over a store in tmp_path and the lecturer's own lesson there ($TOYVIZ_LESSONS), the tiny GPT
    answering → (presenter, the lesson's name)."""
    from toyviz.app.presenter import Presenter
    from toyviz.classroom.store import Lectures
    (tmp_path / "three-steps.md").write_text(PRESENTED, encoding="utf-8")
    monkeypatch.setenv("TOYVIZ_LESSONS", str(tmp_path))
    explorer = Explorer(tiny_gpt, None)
    return Presenter(explorer, Lectures(tmp_path / "lectures.sqlite3")), "three-steps"


def test_a_lesson_link_starts_a_lecture_whose_steps_are_deep_links(presenting):
    from toyviz.app import presenter
    lectern, name = presenting
    shown = lectern.open({"lesson": name})
    assert (shown.lecture.step, shown.lecture.steps, shown.hides) == (0, 3, False)
    for n, step in enumerate(shown.lesson.steps):
        assert presenter.view(shown) == links.parse(dict(parse_qsl(step.link[1:]))) == step.view
        shown = lectern.move(shown.secret, +1)
        assert shown.lecture.step == min(n + 1, 2)                     # Next on the last step stays there
    shown = lectern.move(shown.secret, -5)
    assert shown.lecture.step == 0
    bar = presenter.bar(shown, lectern.lectures, "http://hall:7860/")
    assert "1 / 3" in bar and "<em>text</em>" in bar and shown.lecture.code in bar and "<svg" in bar
    assert "hall:7860/class/" + shown.lecture.code in bar
    assert shown.secret not in bar and shown.secret not in str(presenter.view(shown))


def test_a_question_is_covered_until_reveal_then_the_model_answers_beside_the_votes(presenting, tiny_gpt):
    from toyviz.app import presenter
    lectern, name = presenting
    shown = lectern.move(lectern.open({"lesson": name}).secret, +1)
    code = shown.lecture.code
    assert shown.hides and presenter.client(shown) == {"code": code, "secret": shown.secret, "hide": True,
                                                       "prev": False, "next": False,      # steps 1 and 3 ask nothing
                                                       "hidden": "Hidden until Reveal: predict first",
                                                       "copied": "Copied: keep it private"}
    for device, choice in [("phone-aaaa", "a"), ("phone-bbbb", "a"), ("phone-cccc", "b")]:
        assert lectern.lectures.vote(code, device, choice)
    waiting = presenter.bar(shown, lectern.lectures, "/")
    assert "3 votes so far" in waiting and "The model:" not in waiting and "the bars" not in waiting
    shown = lectern.reveal(shown.secret)
    assert not shown.hides and not presenter.client(shown)["hide"]
    truth = answers.answer(shown.step, tiny_gpt)
    revealed = presenter.bar(shown, lectern.lectures, "/")
    assert f"The model:</b> {html.escape(presenter.shown_text(truth.value))} — {html.escape(truth.detail)}" in revealed
    assert "the class: 3 votes" in revealed and "the bars" in revealed
    assert revealed.count("<tr") == 2 and ">2</td>" in revealed and ">1</td>" in revealed


def test_a_presenter_link_reopens_the_lecture_after_a_restart(presenting, tmp_path):
    from toyviz.app.presenter import Presenter
    from toyviz.classroom.store import Lectures
    lectern, name = presenting
    shown = lectern.move(lectern.open({"lesson": name}).secret, +1)
    lectern.lectures.vote(shown.lecture.code, "phone-aaaa", "b")
    restarted = Presenter(lectern.explorer, Lectures(tmp_path / "lectures.sqlite3"))
    again = restarted.open({"present": shown.secret})
    assert (again.lecture.code, again.lecture.step) == (shown.lecture.code, 1)
    assert restarted.open({"lecture": shown.lecture.code}, stored=shown.secret).lecture.step == 1
    assert restarted.lectures.tally(shown.lecture.code, 1) == {"b": 1}


@pytest.mark.parametrize("query, stored, says", [
    ({"lesson": "no-such-lesson"}, "", r"no lesson 'no-such-lesson': the lessons here are attention-from-the-ground-up\.es, "
                                       r"attention-from-the-ground-up, sampling\.es, sampling, watch-it-learn\.es, "
                                       "watch-it-learn, three-steps"),
    ({"lesson": "/etc/passwd"}, "", "no lesson '/etc/passwd'"),          # a name, never a path to read
    ({"lesson": "../lessons/sampling"}, "", "no lesson"),
    ({"present": "guessed"}, "", "presenter link is unknown"),
    ({"lecture": "ABCDEF"}, "", "does not hold the presenter's key of lecture ABCDEF"),
    ({"lecture": "ABCDEF"}, "guessed", "does not hold the presenter's key"),
])
def test_a_link_that_opens_no_lecture_says_why(presenting, query, stored, says):
    lectern, _ = presenting
    with pytest.raises(UserError, match=says):
        lectern.open(query, stored)
    assert lectern.open({"tab": "sample"}) is None                       # a plain deep link opens no lecture
