"""A tab's answer kept as sent (toyviz.app.drawn): the same bytes as drawing it again, drawn once per view."""
import json

import plotly.graph_objects as go
import pytest

from toyviz.app.drawn import Drawn
from toyviz.app.widgets import plot_data


def renderer(calls: list):
    def render(prompt, layer, ablate, projector):
        calls.append((prompt, layer))
        if not prompt.strip():
            raise ValueError("The prompt is empty")
        figure = go.Figure(go.Heatmap(z=[[layer, len(prompt)], [len(ablate), 1]]), layout={"meta": {"filename": "f"}})
        return f"note on {prompt}", figure
    return render


def test_a_kept_answer_is_byte_for_byte_what_drawing_it_again_sends():
    calls = []
    draw = Drawn().remember("attention", renderer(calls))
    first = draw("To be", 1, ["L0 H1"], False)
    again = draw("To be", 1, ["L0 H1"], False)                  # a list input (a checkbox group) is keyed too
    assert again is first and len(calls) == 1
    note, figure = renderer([])("To be", 1, ["L0 H1"], False)
    assert first[0] == note and first[1].plot == plot_data(figure).plot
    assert json.loads(first[1].plot)["config"]["toImageButtonOptions"]["filename"] == "f"


def test_other_inputs_are_drawn_and_a_mistake_is_never_kept():
    calls = []
    draw = Drawn().remember("attention", renderer(calls))
    draw("To be", 1, [], False)
    assert draw("To be", 2, [], False)[1].plot != draw("To be", 1, [], False)[1].plot
    for _ in range(2):
        with pytest.raises(ValueError):
            draw("  ", 1, [], False)
    assert calls.count(("  ", 1)) == 2 and len(calls) == 4


def test_answers_are_bounded_in_bytes():
    drawn = Drawn(views=100, budget=20_000)
    draw = drawn.remember("attention", renderer([]))
    for layer in range(40):
        draw("To be", layer, [], False)
    assert 0 < drawn.answers.bytes() <= 20_000 + 5_000 and len(drawn.answers.items) < 40
