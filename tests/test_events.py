"""How the page's events are wired (built, not served): each tab is drawn by one event, always the last, whichever
asks; the buttons that ask for a tab's drawing press that event's button. An event per trigger let a page's earlier
draw land after a later one, and Gradio's default "once" dropped a slider's input while a draw was pending: three
quick presses of the layer slider's arrow key left the slider at 3 over the figure of layer 1 (test_browser)."""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

import pytest

from toyviz.app.tabs import TABS


@pytest.fixture(scope="module")
def demo(tiny_checkpoints):
    import app
    from toyviz.app.explorer import Explorer

    return app.build(Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu"))


def events_of(demo, component, trigger: str) -> list:
    return [f for f in demo.fns.values() if (component._id, trigger) in set(f.targets)]


@pytest.mark.parametrize("name", list(TABS))
def test_each_tab_is_drawn_by_one_event_that_runs_after_the_last(demo, name):
    ui, tab = demo.ui, TABS[name]
    selected = events_of(demo, getattr(ui, f"tab_{name}"), "select")
    [drawing] = [event for event in selected if ui.current in event.outputs]
    outputs = set(ui.registry[name][2])             # the tab's figures and note: drawn by that event alone
    assert not [event for event in selected if event is not drawing and outputs & set(event.outputs)]
    assert drawing.trigger_mode == "always_last" and drawing.fn is not None
    redraw = next(block for block in demo.blocks.values() if getattr(block, "elem_id", None) == f"redraw-{name}")
    assert (redraw._id, "click") in set(drawing.targets)
    for control in tab.controls:
        asking = events_of(demo, getattr(ui, control), "input")
        if name == "sample":                # the page's model first (js only); what it leaves presses the redraw
            assert [event.fn for event in asking] == [None]
        else:
            assert asking == [drawing], control


def test_translate_enter_and_an_example_press_the_translate_tabs_redraw(demo):
    ui = demo.ui
    for component, trigger in ((ui.translate_button, "click"), (ui.source, "submit")):
        [event] = events_of(demo, component, trigger)
        assert event.fn is None and "redraw-translate" in event.js, (component, trigger)
