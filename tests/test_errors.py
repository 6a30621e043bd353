"""Errors say whose they are (toyviz.errors, toyviz.app.widgets): a user's mistake is their message in place;
a bug's exception — an IndexError as much as any — is a fault of ours, logged with its traceback under an id,
and the page and the HTTP caller are told only that, never that their input was wrong."""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import ast  # noqa: E402
import functools  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

import gradio as gr  # noqa: E402
import pytest  # noqa: E402
from gradio_client import Client  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402

import app  # noqa: E402
import toyviz  # noqa: E402
from toyviz import errors  # noqa: E402
from toyviz.app import widgets  # noqa: E402
from toyviz.app.views.inside import inside_view  # noqa: E402
from toyviz.app.views.size import size_view  # noqa: E402
from toyviz.app.explorer import Explorer  # noqa: E402
from toyviz.app.figures import inside as inside_figs  # noqa: E402
from toyviz.errors import UserError  # noqa: E402

OURS = re.compile(r"Something went wrong on our side \(id ([0-9a-f]{6})\)")
BUG = "list index out of range in head_steps"                 # the bug's own text: never for the user's eyes


@pytest.fixture(scope="module")
def explorer(tiny_gpt) -> Explorer:
    return Explorer(tiny_gpt, None)


def buggy_head_steps(*args, **kwargs):
    """The Inside-a-head tab's first figure, with a bug."""
    raise IndexError(BUG)


@pytest.fixture
def buggy_renderer(explorer, monkeypatch):
    """The Inside-a-head renderer with a bug in one of its figures, bound as app.py binds it."""
    monkeypatch.setattr(inside_figs, "head_steps", buggy_head_steps)
    return widgets.friendly(functools.partial(inside_view, explorer))


def outputs() -> list:
    """The Inside-a-head tab's outputs: its note and three figures."""
    return [gr.Markdown(), widgets.plot("a"), widgets.plot("b"), widgets.plot("c")]


def figure_title(value) -> str:
    return value.layout.title.text


def test_the_errors_module_is_a_leaf():
    tree = ast.parse(Path(errors.__file__).read_text())
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert imported and not [name for name in imported if name.split(".")[0] == "toyviz"]


def test_the_users_mistake_is_one_type_and_still_a_value_error():
    assert issubclass(UserError, ValueError)                  # callers catching ValueError keep catching it
    assert toyviz.PromptError is UserError is toyviz.UserError
    from toyviz.lessons.format import LessonError
    from toyviz.classroom.store import NotPresenter
    assert issubclass(LessonError, UserError) and issubclass(NotPresenter, UserError)


def test_a_bugs_index_error_in_a_renderer_is_not_shown_as_the_users_mistake(buggy_renderer, caplog):
    caplog.set_level(logging.INFO, "toyviz")
    note, *figures = widgets.in_place(buggy_renderer, outputs())("To be, or not to be", 0, 0, -1, "dream", False)
    said = OURS.search(note)
    assert said and BUG not in note and "IndexError" not in note
    assert all(figure_title(f) == "⚠ Nothing drawn: something went wrong on our side" for f in figures)
    assert not any("the input needs a change" in figure_title(f) for f in figures)
    # logged as a fault, with its traceback and the id the page shows; not as rejected input
    faults = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(faults) == 1 and said[1] in faults[0].getMessage() and "inside_view" in faults[0].getMessage()
    assert faults[0].exc_info[0] is IndexError and str(faults[0].exc_info[1]) == BUG
    assert not any("rejected input" in r.getMessage() for r in caplog.records)


def test_an_http_caller_gets_the_same_fault_message_not_the_bugs_text(buggy_renderer):
    with pytest.raises(gr.Error) as raised:
        buggy_renderer("To be, or not to be", 0, 0, -1, "dream", False)
    assert isinstance(raised.value, widgets.Fault) and OURS.match(raised.value.message)
    assert BUG not in raised.value.message and raised.value.duration is None       # it stays until closed


def test_each_fault_has_its_own_id(buggy_renderer):
    ids = set()
    for _ in range(3):
        with pytest.raises(widgets.Fault) as raised:
            buggy_renderer("To be", 0, 0, -1, "dream", False)
        ids.add(OURS.match(raised.value.message)[1])
    assert len(ids) == 3


def test_a_users_mistake_is_their_message_in_place_with_no_traceback(explorer, caplog):
    caplog.set_level(logging.INFO, "toyviz")
    fn = widgets.friendly(functools.partial(inside_view, explorer))
    note, *figures = widgets.in_place(fn, outputs())("   ", 0, 0, -1, "dream", False)
    assert "The prompt is empty" in note and not OURS.search(note)
    assert all(figure_title(f) == "⚠ Nothing drawn: the input needs a change" for f in figures)
    assert [r.levelno for r in caplog.records] == [logging.WARNING] and caplog.records[0].exc_info is None
    with pytest.raises(gr.Error, match="The prompt is empty") as raised:            # and for an HTTP caller
        fn("   ", 0, 0, -1, "dream", False)
    assert not isinstance(raised.value, widgets.Fault)


def test_a_streams_fault_is_shown_in_place_after_what_it_sent(caplog):
    def stream(prompt):
        yield "first words", None
        raise KeyError("a bug after the first update")
    updates = list(widgets.in_place(widgets.friendly(stream), [gr.Markdown(), widgets.plot("p")])("x"))
    assert updates[0][0] == "first words"
    assert OURS.search(updates[-1][0]) and "a bug" not in updates[-1][0]
    assert figure_title(updates[-1][1]) == "⚠ Nothing drawn: something went wrong on our side"


def test_an_error_already_said_passes_through_as_it_was():
    def refused():
        raise gr.Error("too many requests: wait a minute")
    with pytest.raises(gr.Error) as raised:
        widgets.friendly(refused)()
    assert raised.value.message == "too many requests: wait a minute" and not isinstance(raised.value, widgets.Fault)


def test_a_size_the_calculator_cannot_build_is_the_users_mistake(explorer):
    with pytest.raises(UserError, match="the heads must divide d_model: 768 is not divisible by 5 heads"):
        size_view(explorer, "custom", layers=2, heads=5, d_model=768)
    with pytest.raises(UserError, match="RoPE rotates pairs of dimensions, so a head needs an even size"):
        size_view(explorer, "custom", layers=2, heads=4, d_model=36, positional="rope")
    with pytest.raises(UserError, match="positional must be one of"):
        size_view(explorer, "custom", layers=2, heads=4, d_model=32, positional="sideways")


def test_through_http_a_fault_is_ours_and_a_mistake_is_the_callers(explorer, monkeypatch):
    """The named endpoints as gradio_client sees them: a bug's IndexError comes back as our fault with an id,
    an empty prompt as the caller's message; the server goes on answering."""
    demo = app.build(explorer)
    demo.queue()
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False)
    try:
        client = Client(url, verbose=False, analytics_enabled=False)
        call = lambda *args: client.submit(*args, api_name="/inside").result(timeout=120)
        note = call("To be, or not to be", 0, 0, -1, "dream", False)[0]
        assert "Something went wrong" not in note                       # it answers before the bug is put in
        monkeypatch.setattr(inside_figs, "head_steps", buggy_head_steps)
        with pytest.raises(AppError) as raised:         # a view not drawn before (a drawn one is kept: app.drawn)
            call("To be, or not to be, that is", 0, 0, -1, "dream", False)
        assert OURS.search(str(raised.value)) and BUG not in str(raised.value)
        with pytest.raises(AppError, match="The prompt is empty") as raised:
            call("  ", 0, 0, -1, "dream", False)
        assert not OURS.search(str(raised.value))
        monkeypatch.undo()
        assert not OURS.search(call("To be", 0, 0, -1, "dream", False)[0])        # and answers again once mended
    finally:
        demo.close()
