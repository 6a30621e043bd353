"""The Circuits tab's renderer (toyviz.app.views.circuits) on the shipped GPT and its transcoders: the worked
example's graph drawn once, its JSON the command's, an intervention the same as intervene's, supernodes from the
link's text, and the error nodes said in words."""
import json

import pytest

import toyviz
from toyviz import circuits as command
from toyviz.app.explorer import Explorer
from toyviz.app.figures import circuits as cf
from toyviz.app.views import circuits as view
from toyviz.errors import UserError
from toyviz.interpret.circuits.intervene import intervene, predicted_prob
from toyviz.interpret.circuits.nodes import NodeGraph
from toyviz.interpret.transcoders import FOLDER

from test_views import old_labels

PROMPT = view.EXAMPLES[0][1]            # the docs' induction example: " S" at p 0.97


@pytest.fixture(scope="module")
def explorer() -> Explorer:
    gpt = toyviz.load("gpt", device="cpu")
    from pathlib import Path
    if not (Path(gpt.source) / FOLDER / "transcoders.json").is_file():
        pytest.skip("no shipped transcoders")
    return Explorer(gpt, None)


def test_the_worked_example_is_drawn_from_one_graph(explorer, monkeypatch):
    note, fig, panel, about = view.circuits_view(explorer, PROMPT)
    assert "␣S" in about and "p = 0.970" in about and "Replacement score 0.85" in about
    assert "Error nodes (what the transcoders miss) carry 15%" in about and "does not know" not in about
    assert "Hover a node" in fig.layout.title.subtitle.text
    features = next(t for t in fig.data if t.name == cf.KIND_STYLE["feature"][2])
    assert all("Where it fires hardest" in c[1] for c in features.customdata)     # every feature's dashboard shipped
    assert "Where it fires hardest" in panel
    assert not old_labels(fig), old_labels(fig)                                # the one vocabulary (issue 54)
    # the graph is computed once: a redraw (projector, a supernode edit) reads it from the explorer's cache
    monkeypatch.setattr("toyviz.interpret.circuits.trace", lambda *a, **k: pytest.fail("computed again"))
    view.circuits_view(explorer, PROMPT, "", "", True)
    assert len(explorer.caches.circuits.items) == 1


def test_the_endpoints_json_is_the_commands(explorer, tmp_path):
    ours = view.circuit_json(explorer, PROMPT, " S")
    command.main([PROMPT, "--target", " S", "--out", str(tmp_path)])      # a folder: the graph is <slug>.json there
    theirs = json.loads((tmp_path / f"{ours['metadata']['slug']}.json").read_text())
    for graph in (ours, theirs):
        del graph["metadata"]["info"]["create_time_ms"]
    assert json.loads(json.dumps(ours)) == theirs


def test_a_clicked_feature_is_ablated_in_the_real_gpt_beside_the_graphs_prediction(explorer):
    circuit, _ = explorer.caches.circuit(PROMPT)
    fig = view.intervention_view(explorer, PROMPT, "", "0_1603_8", 0)
    index = view.feature_node(circuit, "0_1603_8")
    assert (int(circuit.graph.layer[index]), int(circuit.graph.feature[index]), int(circuit.graph.position[index])) \
        == (0, 1603, 8)
    transcoders, _ = explorer.caches.transcoders()
    expected = intervene(explorer.gpt.model, transcoders, circuit.graph, index, 0.0)
    bars = fig.data[0]
    assert list(bars.x) == pytest.approx([expected.prob_before, predicted_prob(expected.prob_before,
                                          expected.predicted_logit_change), expected.prob_after])
    assert expected.predicted_logit_change < expected.real_logit_change < 0       # docs: −2.04 predicted, −0.46 real
    steered = view.intervention_view(explorer, PROMPT, "", "0_1603_8", 2)
    # the graph is linear in the feature: doubling it predicts the opposite of removing it (the real GPT need not)
    assert f"logit {-expected.predicted_logit_change:+.2f}" in steered.data[0].text[1]
    assert steered.layout.title.text.startswith("Scaled × 2")
    for wrong, words in [("", "click a feature"), ("0_-1_8", "click a feature"), ("err_0_8", "click a feature"),
                         ("5_3_8", "click a feature"), ("3_2047_1", "not active")]:
        with pytest.raises(UserError, match=words):
            view.intervention_view(explorer, PROMPT, "", wrong, 0)


def test_supernodes_come_from_the_links_text(explorer):
    assert view.parse_supernodes("S copy: 0_1603_8, 0_962_8; 1_5_8") == {"S copy": ["0_1603_8", "0_962_8"],
                                                                         "group 2": ["1_5_8"]}
    assert view.parse_supernodes("") == {} and view.parse_supernodes(" ; :") == {}
    note, fig, _, _ = view.circuits_view(explorer, PROMPT, "", "S copy: 0_1603_8 0_962_8 9_9_9")
    groups = next(t for t in fig.data if t.name == cf.KIND_STYLE["group"][2])
    assert groups.customdata[0][0] == "S copy" and "9_9_9" in note


def test_when_errors_carry_most_of_the_influence_the_view_says_so():
    base = NodeGraph([], [], ["a"], "b", 0.5, 1, replacement=0.3, completeness=0.6, logit_errors=0.7)
    words = view.error_words(base)
    assert "Most of this prediction runs through error nodes" in words and "70%" in words
    base.replacement = 0.9
    assert "does not know" not in view.error_words(base)


def test_a_target_of_several_tokens_is_refused(explorer):
    with pytest.raises(UserError, match="one token"):
        view.circuits_view(explorer, "I pray you, good my", " lordship's")


def test_the_http_endpoints_answer_the_graph_and_an_ablation(explorer):
    """/circuit over HTTP is the command's JSON; /circuit_intervene the ablation's figure; /circuits the tab."""
    import os
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import app
    import gradio_client
    demo = app.build(explorer)
    demo.queue(default_concurrency_limit=4, max_size=64)
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False)
    try:
        client = gradio_client.Client(url, verbose=False, analytics_enabled=False)
        graph = client.predict(PROMPT, "", api_name="/circuit")
        local = view.circuit_json(explorer, PROMPT)
        assert graph["metadata"]["prompt_tokens"] == local["metadata"]["prompt_tokens"]
        assert graph["nodes"] == json.loads(json.dumps(local["nodes"])) and len(graph["links"]) == len(local["links"])
        ablated = client.predict(PROMPT, "", "0_1603_8", 0, False, api_name="/circuit_intervene")
        assert "Ablated: feature 0_1603_8" in json.loads(ablated["plot"])["layout"]["title"]["text"]
        note, drawn, panel, about = client.predict(PROMPT, "", "", False, api_name="/circuits")
        assert "Replacement score" in about and "Where it fires hardest" in panel
    finally:
        demo.close()
