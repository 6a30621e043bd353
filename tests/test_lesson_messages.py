"""Issue 44: lessons and phones that say what happened. Every mistake in a lesson file is named with its line
(a heading without a title too, never merged into the step above), by the checker and by the picker's bar; Reveal
is offered only on a question's step and the picker names the lesson open; a phone's vote refused says why; the
Why-this-token box answers typed digits in tokens, not ids."""
import inspect

import fastapi
import pytest
from fastapi.testclient import TestClient

import toyviz
from toyviz.app import presenter
from toyviz.app.views.why import why_token
from toyviz.app.explorer import Explorer
from toyviz.classroom import routes, store
from toyviz.classroom.store import LONGEST_CHOICE, Lectures
from toyviz.errors import UserError
from toyviz.lessons.__main__ import main
from toyviz.lessons.check import check
from toyviz.lessons.format import LessonError, parse

HEAD = "---\ntitle: A test lesson\n---\n\n"          # 4 lines: a step's heading is line 5
# three steps, four mistakes: the second heading has no title, the third no space after ##
BROKEN = HEAD + ("## One\ntab: sample\nlayr: 2\ntemperature: hot\n\nText.\n\n"
                 "##\ntemperature: 0.5\nask: Up or down?\n\nMore text.\n\n"
                 "##Three\ntop_p: 3\n")
# a lesson the tiny GPT can run: a step that asks and one that does not
TWO_STEPS = HEAD + ("## Look\ntab: tokens\n\nJust look.\n\n"
                    "## Guess\ntab: sample\nask: The next token?\nchoices: a | b\nanswer: top token\n")


def mistakes(text: str, models=None) -> list[tuple[int, str]]:
    with pytest.raises(LessonError) as caught:
        parsed = parse(text, "test.md")
        if models is not None:
            check(parsed, models)
    return list(caught.value.problems)


def test_every_mistake_in_a_file_is_named_with_its_line():
    found = mistakes(BROKEN)
    assert [line for line, _ in found] == [7, 8, 12, 14, 18, 19], found
    said = dict(found)
    assert "unknown setting 'layr'" in said[7] and "temperature must be a number" in said[8]
    assert "heading has no title" in said[12] and "has no answer:" in said[14]
    assert "'## Three'" in said[18] and "top_p must be from 0.05 to 1.0" in said[19]
    with pytest.raises(LessonError) as caught:
        parse(BROKEN, "test.md")
    assert str(caught.value).splitlines() == [f"test.md, line {line}: {what}" for line, what in found]


def test_a_heading_without_a_title_is_a_step_of_its_own_not_text_of_the_one_above():
    found = mistakes(HEAD + "## One\n\nText.\n\n## \ntemperature: 0.5\n")
    assert found == [(9, "a step's heading has no title: write it after '## ' (this is a step of its own)")]
    fixed = parse(HEAD + "## One\n\nText.\n\n## Two\ntemperature: 0.5\n\n### A sub-heading is text\n")
    assert [s.title for s in fixed.steps] == ["One", "Two"] and fixed.steps[0].text == "Text."
    assert fixed.steps[1].view["temperature"] == 0.5 and "### A sub-heading" in fixed.steps[1].text


def test_the_front_matter_and_the_steps_are_both_checked_in_one_go():
    found = mistakes("---\ncolour: red\n---\n\nstray\n\n## S\nhead: -1\n")
    assert [line for line, _ in found] == [1, 2, 5, 8], found     # no title, unknown key, stray text, head


def test_a_model_mistake_is_named_once_at_the_line_that_set_it(tiny_gpt):
    found = mistakes(HEAD + "## A\nlayer: 7\nhead: 9\n\n## B\ntab: sample\n\n## C\nquery: 200\n", tiny_gpt)
    assert [line for line, _ in found] == [6, 7, 13], found       # layer 7 stays for B and C: said once
    assert "layer 7: the GPT has 2 layers" in found[0][1] and "the GPT has 4 heads" in found[1][1]


def test_the_checker_prints_every_mistake_and_goes_on_to_the_next_file(tmp_path, tiny_gpt, monkeypatch, capsys):
    (tmp_path / "broken.md").write_text(BROKEN, encoding="utf-8")
    (tmp_path / "fine.md").write_text(TWO_STEPS, encoding="utf-8")
    monkeypatch.setattr(toyviz, "load", lambda name: tiny_gpt)
    assert main([str(tmp_path / "broken.md"), str(tmp_path / "fine.md")]) == 1
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines()[:6]] == [f"broken.md, line {n}" for n in (7, 8, 12, 14, 18, 19)]
    assert "A test lesson (fine.md): 2 steps" in out
    assert main([str(tmp_path / "fine.md")]) == 0


def test_the_bar_lists_each_mistake_on_a_line_of_its_own():
    with pytest.raises(LessonError) as caught:
        parse(BROKEN, "test.md")
    bar = presenter.problem(str(caught.value))
    assert bar.count("<br>") == 5 and "test.md, line 12: a step&#x27;s heading has no title" in bar


# ---------------------------------------------------------------- the page: picker and Reveal ----------

@pytest.fixture
def page(tmp_path, tiny_checkpoints, monkeypatch):
    """The app on the tiny models with the lecturer's own lessons in tmp_path → (ui, `press`: a component's
    click or input handler, whose answer maps each output component to its value)."""
    import app
    (tmp_path / "two-steps.md").write_text(TWO_STEPS, encoding="utf-8")
    (tmp_path / "broken.md").write_text(BROKEN, encoding="utf-8")
    monkeypatch.setenv("TOYVIZ_LESSONS", str(tmp_path))
    explorer = Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu")
    demo = app.build(explorer, Lectures(tmp_path / "lectures.sqlite3"))
    ui = demo.ui
    def press(component):
        event = next(f for f in demo.fns.values() if {(component._id, "click"), (component._id, "input")} & set(f.targets))
        def answer(*inputs):                 # a streamed answer (Prev / Next: the bar, then the tab): each output's last
            out = event.fn(*inputs)
            updates = list(out) if inspect.isgenerator(out) else [out]
            return {o: v for update in updates for o, v in zip(event.outputs, update) if v != {"__type__": "update"}}
        return answer
    press.demo = demo
    yield ui, press
    demo.close()


def test_the_picker_names_the_open_lesson_and_reveal_is_offered_on_a_question_only(page):
    ui, press = page
    first = press(ui.lesson_pick)("two-steps", {"root": "/"}, False)
    assert first[ui.lesson_pick] == "two-steps"                         # the picker shows what is open
    assert first[ui.lesson_reveal].visible is False                  # step 1 asks nothing
    lecture = first[ui.lecture]
    values = [c.value for c in ui.all_inputs]
    second = press(ui.lesson_next)(lecture, *values)
    assert second[ui.lesson_reveal].visible is True and second[ui.lesson_reveal].interactive is True
    revealed = press(ui.lesson_reveal)(lecture)
    assert revealed[ui.lesson_reveal].interactive is False           # pressed once: the answer is out
    assert "The model:" in revealed[ui.lesson_bar]


def test_a_refused_reveal_is_a_line_in_the_bar_not_an_error(page, monkeypatch):
    """Issue 55: Reveal before the run's head formed says why in the bar (kept by the votes' refresh); nothing raises,
    so Gradio draws no red "Error" over the bar, its buttons and the picker; the next Reveal that works clears it."""
    ui, press = page
    values = [c.value for c in ui.all_inputs]
    lecture = press(ui.lesson_pick)("two-steps", {"root": "/"}, False)[ui.lecture]
    lecture = press(ui.lesson_next)(lecture, *values)[ui.lecture]
    def still_training(*args):
        raise UserError("the run is still training (step 40 of 600) and no head has formed yet")
    answer = presenter.answers.answer
    monkeypatch.setattr(presenter.answers, "answer", still_training)
    refused = press(ui.lesson_reveal)(lecture)
    assert "no head has formed yet" in refused[ui.lesson_bar] and "lesson-said" in refused[ui.lesson_bar]
    assert refused[ui.lesson_reveal].interactive is True and "The model:" not in refused[ui.lesson_bar]
    tick = next(f for f in press.demo.fns.values() if (ui.lesson_tick._id, "tick") in set(f.targets))
    assert "no head has formed yet" in tick.fn(refused[ui.lecture])          # the votes' refresh keeps the line
    monkeypatch.setattr(presenter.answers, "answer", answer)
    revealed = press(ui.lesson_reveal)(refused[ui.lecture])
    assert "The model:" in revealed[ui.lesson_bar] and "lesson-said" not in revealed[ui.lesson_bar]


def test_a_revealed_step_is_revealed_when_the_presenter_comes_back(page):
    """Issue 55: Next then Prev back to a revealed step shows its answer, Reveal spent, and its votes stay closed
    (on the phones too: the lecture's row says revealed)."""
    ui, press = page
    values = [c.value for c in ui.all_inputs]
    lecture = press(ui.lesson_pick)("two-steps", {"root": "/"}, False)[ui.lecture]
    lecture = press(ui.lesson_next)(lecture, *values)[ui.lecture]
    press(ui.lesson_reveal)(lecture)
    away = press(ui.lesson_prev)(lecture, *values)
    assert "1 / 2" in away[ui.lesson_bar]
    back = press(ui.lesson_next)(lecture, *values)
    assert "The model:" in back[ui.lesson_bar] and back[ui.lesson_reveal].interactive is False
    assert back[ui.lecture_info]["hide"] is False                    # the figures not covered
    lectures = ui.presenter.lectures
    code = back[ui.lecture_info]["code"]
    assert lectures.now(code).revealed and not lectures.vote(code, "phone-late", "a")


def test_a_broken_lesson_picked_shows_every_mistake_in_the_bar(page):
    ui, press = page
    bar = press(ui.lesson_pick)("broken", {"root": "/"}, False)[ui.lesson_bar]
    assert [f"broken.md, line {n}:" in bar for n in (7, 8, 12, 14, 18, 19)] == [True] * 6


# ---------------------------------------------------------------- phones ----------

@pytest.fixture
def phones(tmp_path):
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    (tmp_path / "typed.md").write_text(HEAD + "## Type it\nask: The next token?\nanswer: top token\n", encoding="utf-8")
    app = fastapi.FastAPI()
    routes.attach(app, lectures)
    code, secret = lectures.start(str(tmp_path / "typed.md"), 1)
    ballot = lambda device, choice: TestClient(app).post(f"/class/{code}/vote",
                                                         json={"device": device, "step": 0, "choice": choice})
    return TestClient(app), code, ballot, lectures


def test_a_vote_too_long_or_empty_is_refused_with_its_reason(phones):
    _, code, ballot, lectures = phones
    long = ballot("phone-aaaa", "x" * 3000)
    assert long.status_code == 422 and long.json() == {
        "counted": False, "step": 0, "why": f"the answer is 3,000 characters; one holds at most {LONGEST_CHOICE} "
                                            "(a token or a number): shorten it and vote again"}
    assert "empty" in ballot("phone-aaaa", "   ").json()["why"]
    assert ballot("phone-aaaa", "x" * LONGEST_CHOICE).json()["counted"]          # the most a vote holds counts
    assert lectures.tally(code, 0) == {"x" * LONGEST_CHOICE: 1}


def test_a_full_ballot_box_says_so_not_already_voted(phones, monkeypatch):
    _, _, ballot, _ = phones
    monkeypatch.setattr(store, "VOTES_PER_STEP", 2)
    assert ballot("phone-aaaa", "a").json()["counted"]
    assert ballot("phone-aaaa", "b").json()["why"] == "this phone has already voted on this step"
    assert ballot("phone-bbbb", "b").json()["counted"]
    assert ballot("phone-cccc", "c").json()["why"] == "this step's ballot box is full (2 votes): yours was not counted"


def test_the_phone_page_limits_the_typed_answer_to_what_a_vote_holds(phones):
    client, code, _, _ = phones
    page = client.get(f"/class/{code}").text
    assert f'maxlength="{LONGEST_CHOICE}"' in page and "__LONGEST_CHOICE__" not in page
    assert 'id="typed-note"' in page


# ---------------------------------------------------------------- why this token? ----------

def test_the_why_box_reads_typed_text_as_tokens_and_says_what_to_type(tiny_gpt):
    explorer = Explorer(tiny_gpt, None)
    tokenizer = tiny_gpt.tokenizer
    piece = next(tokenizer.piece(i) for i in range(tiny_gpt.config.vocab_size) if tokenizer.piece(i).startswith(" ")
                 and len(tokenizer.piece(i)) > 2 and len(tokenizer.encode(tokenizer.piece(i))) == 1)
    assert why_token(explorer, piece)[0] == why_token(explorer, "␣" + piece[1:])[0] == tokenizer.encode(piece)[0]
    assert why_token(explorer, "") == ("", "") and why_token(explorer, 3) == (3, "")    # the top one; the API's id
    with pytest.raises(UserError) as caught:
        why_token(explorer, "999999")
    said = str(caught.value)
    assert said.startswith("“999999” is not a token of the GPT's vocabulary: the model reads it as")
    assert "Type one token as the other tabs show tokens" in said and " id" not in said
