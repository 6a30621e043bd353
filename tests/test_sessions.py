"""Gradio's sessions share the page's default config until they write to it (toyviz.serving.sessions)."""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import gradio as gr
import pytest
from gradio import state_holder

from toyviz.serving import sessions


@pytest.fixture
def demo(monkeypatch):
    monkeypatch.setattr(state_holder.SessionState, "__init__", sessions._original_init)
    monkeypatch.setattr(state_holder.SessionState, "_update_value_in_config", sessions._original_update_value)
    with gr.Blocks() as demo:
        box = gr.Textbox("hello", label="prompt")
        gr.Slider(0, 10, value=3)
        gr.Button("go").click(lambda text: text.upper(), box, box)
    demo.box = box
    demo.gradios_own = state_holder.SessionState(demo)                # before the patch: Gradio's own session
    sessions.share_default_configs()
    return demo


def test_a_session_holds_the_same_config_and_fields_as_gradios_own(demo):
    first, second = state_holder.SessionState(demo), state_holder.SessionState(demo)
    for session in (first, second):
        assert session.config_values == demo.gradios_own.config_values
        assert set(vars(session)) == set(vars(demo.gradios_own))
        assert session.STATE_TTL_WHEN_CLOSED == demo.gradios_own.STATE_TTL_WHEN_CLOSED
    assert second.config_values[demo.box._id] is first.config_values[demo.box._id]     # shared, not rebuilt


def test_a_value_written_into_one_session_stays_in_that_session(demo):
    first, second = state_holder.SessionState(demo), state_holder.SessionState(demo)
    first._update_value_in_config(demo.box._id, "HELLO")
    assert first.config_values[demo.box._id]["props"]["value"] == "HELLO"
    assert second.config_values[demo.box._id]["props"]["value"] == "hello"
    assert state_holder.SessionState(demo).config_values[demo.box._id]["props"]["value"] == "hello"
