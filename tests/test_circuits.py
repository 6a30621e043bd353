"""Attribution graphs (toyviz.interpret.circuits) checked against the frozen model itself: an edge is what
zeroing its source changes in its target, edges + bias add up to each node's value, the frozen model with
the errors put back is the GPT, and pruning keeps the share of influence it is told to. On the tiny GPT with
random transcoders (fast; float64 so the checks can be tight), and on the shipped GPT with the shipped
transcoders where they exist."""
import copy
import json
from pathlib import Path

import pytest
import torch

import toyviz
from toyviz.errors import UserError
from toyviz.interpret.circuits import export, frozen, load_transcoders, trace
from toyviz.interpret.circuits.graph import attribute
from toyviz.interpret.circuits.intervene import intervene
from toyviz.interpret.circuits.prune import normalised, prune, scores
from toyviz.interpret.transcoders import FOLDER, Transcoder, TranscoderConfig, TranscoderSet
from toyviz import circuits as command

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "gpt" / FOLDER
PROMPT = "To be, or not to be, that is the question"


def random_transcoders(config, width: int = 64, k: int = 4, seed: int = 0) -> TranscoderSet:
    torch.manual_seed(seed)
    layers = []
    for layer in range(config.n_layer):
        t = Transcoder(TranscoderConfig(config.d_model, width, k, layer))
        with torch.no_grad():
            t.b_dec.normal_(0, 0.1)
            t.b_enc.normal_(0, 0.1)
        layers.append(t.eval())
    return TranscoderSet(layers)


def in_double(gpt, transcoders):
    model = copy.deepcopy(gpt.model).double().eval()
    return model, TranscoderSet([copy.deepcopy(t).double() for t in transcoders])


@pytest.fixture(scope="module", params=["tiny", "shipped"])
def case(request, tiny_gpt):
    """(model, transcoders, ids, target) in float64: the tiny GPT with random transcoders, or the shipped ones."""
    if request.param == "tiny":
        gpt, transcoders = tiny_gpt, random_transcoders(tiny_gpt.config)
    else:
        if not (SHIPPED / "transcoders.json").is_file():
            pytest.skip("no shipped transcoders")
        gpt = toyviz.load("gpt", device="cpu")
        transcoders = load_transcoders(gpt, SHIPPED)
    ids = gpt.encode(PROMPT)[0][:12]
    model, transcoders = in_double(gpt, transcoders)
    with torch.no_grad():
        target = int(model(torch.tensor([ids], device=gpt.device))[0][0, -1].argmax())
    return model, transcoders, ids, target


@pytest.fixture(scope="module")
def graph(case):
    model, transcoders, ids, target = case
    return attribute(model, transcoders, ids, target, batch=7)        # several batches, one per layer at least


def test_with_the_errors_added_back_the_frozen_model_is_the_gpt(case):
    model, transcoders, ids, target = case
    prompt = frozen.record(model, transcoders, ids, target)
    values = frozen.run(model, transcoders, prompt, prompt.leaves)
    torch.testing.assert_close(values.logits, prompt.logits, rtol=1e-10, atol=1e-10)
    assert float(values.logit) == pytest.approx(float(prompt.logits[-1, target] - prompt.logits[-1].mean()), rel=1e-10)
    # and the features it reads are the transcoders' own activations on the GPT's MLP inputs
    torch.testing.assert_close(values.features, prompt.leaves.acts[prompt.active()], rtol=1e-10, atol=1e-10)
    assert len(values.features) > 0


def test_incoming_edges_plus_bias_reproduce_every_target(graph):
    kinds = graph.kinds()
    targets = (kinds == 0) | (kinds == 3)
    rebuilt = graph.adjacency.sum(1) + graph.bias
    torch.testing.assert_close(rebuilt[targets], graph.values[targets], rtol=1e-9, atol=1e-9)
    assert graph.adjacency[~targets].abs().sum() == 0                 # errors and tokens have no inputs
    assert graph.adjacency[:, graph.logit_index].abs().sum() == 0     # and the logit no outputs


def test_an_edge_is_the_change_of_its_target_when_its_source_is_zeroed(case, graph):
    """Each kind of source into each kind of target, the strongest edge and a random one, by perturbing
    the source in the frozen model (never through the backward passes that made the edges)."""
    model, transcoders, ids, target = case
    prompt, kinds = graph.prompt, graph.kinds()
    layer, position, slot = prompt.active()
    full = frozen.run(model, transcoders, prompt, prompt.leaves)
    full = torch.cat([full.features, full.logit[None]])
    target_rows = torch.cat([torch.arange(graph.n_features), torch.tensor([graph.logit_index])])
    generator = torch.Generator().manual_seed(0)
    checked = 0
    for source_kind in (0, 1, 2):
        columns = (kinds == source_kind).nonzero(as_tuple=True)[0]
        block = graph.adjacency[target_rows][:, columns]
        nonzero = block.nonzero()
        picks = [divmod(int(block.abs().argmax()), len(columns))]
        picks += [tuple(nonzero[int(torch.randint(len(nonzero), (1,), generator=generator))].tolist())]
        for row, column in picks:
            source = int(columns[column])
            if source_kind == 0:
                leaves = prompt.leaves.zeroed("acts", (layer[source], position[source], slot[source]))
            elif source_kind == 1:
                leaves = prompt.leaves.zeroed("errors", divmod(source - graph.n_features, graph.n_positions))
            else:
                leaves = prompt.leaves.zeroed("tokens", source - graph.token_index(0))
            changed = frozen.run(model, transcoders, prompt, leaves)
            changed = torch.cat([changed.features, changed.logit[None]])
            effect = float(full[row] - changed[row])
            edge = float(graph.adjacency[target_rows[row], source])
            assert edge != 0 and effect == pytest.approx(edge, rel=1e-4), (source_kind, row, column)
            checked += 1
    assert checked == 6


@pytest.mark.parametrize("node_threshold, edge_threshold", [(0.8, 0.98), (0.5, 0.9), (0.95, 0.99)])
def test_a_pruned_graph_keeps_at_least_the_configured_share_of_influence(graph, node_threshold, edge_threshold):
    pruned = prune(graph, node_threshold, edge_threshold)
    # influence recomputed independently: w · (Â + Â² + …) = w · Â (I − Â)⁻¹
    shares = normalised(graph.adjacency)
    weights = torch.zeros(len(shares), dtype=shares.dtype)
    weights[graph.logit_index] = 1
    expected = torch.linalg.solve((torch.eye(len(shares), dtype=shares.dtype) - shares).T, shares.T @ weights)
    torch.testing.assert_close(pruned.influence, expected, rtol=1e-6, atol=1e-9)
    kept = float(expected[pruned.nodes].sum() / expected.sum())
    assert kept >= node_threshold and pruned.node_share == pytest.approx(kept)
    assert pruned.edge_share >= edge_threshold
    assert pruned.nodes.sum() < len(pruned.nodes)                      # it did prune
    kinds = graph.kinds()
    assert pruned.nodes[kinds >= 2].all()                              # tokens and the logit stay
    assert not (pruned.edges & ~(pruned.nodes[:, None] & pruned.nodes[None, :])).any()


def test_the_scores_measure_what_runs_through_the_errors(graph):
    replacement, completeness = scores(graph)
    assert 0 < replacement < 1 and 0 < completeness < 1
    kinds = graph.kinds()
    without_errors = copy.copy(graph)
    without_errors.adjacency = graph.adjacency.clone()
    without_errors.adjacency[:, kinds == 1] = 0
    assert scores(without_errors) == pytest.approx((1.0, 1.0))
    louder = copy.copy(graph)
    louder.adjacency = graph.adjacency.clone()
    louder.adjacency[:, kinds == 1] *= 10
    assert scores(louder)[0] < replacement and scores(louder)[1] < completeness


def test_the_json_follows_the_graph_viewers_schema(tiny_gpt):
    transcoders = random_transcoders(tiny_gpt.config)
    circuit = trace(tiny_gpt, transcoders, PROMPT)
    graph = circuit.to_json("a-test")
    assert set(graph) == {"metadata", "qParams", "nodes", "links"}
    meta = graph["metadata"]
    assert {"slug", "scan", "prompt_tokens", "prompt"} <= set(meta) and meta["prompt"] == PROMPT
    assert meta["prompt_tokens"] == circuit.pieces and meta["scores"]["replacement"] == circuit.replacement
    required = {"node_id", "feature", "layer", "ctx_idx", "feature_type", "jsNodeId", "clerp"}
    assert all(required <= set(node) for node in graph["nodes"])
    ids = [node["node_id"] for node in graph["nodes"]]
    assert len(ids) == len(set(ids)) == int(circuit.pruned.nodes.sum())
    assert {link["source"] for link in graph["links"]} | {link["target"] for link in graph["links"]} <= set(ids)
    assert len(graph["links"]) == int(circuit.pruned.edges.sum()) > 0
    logits = [node for node in graph["nodes"] if node["feature_type"] == "logit"]
    assert len(logits) == 1 and logits[0]["is_target_logit"] and logits[0]["feature"] == circuit.graph.prompt.target
    by_kind = {kind: sum(node["feature_type"] == kind for node in graph["nodes"])
               for kind in ("embedding", "cross layer transcoder", "mlp reconstruction error")}
    assert by_kind["embedding"] == circuit.graph.n_positions and by_kind["cross layer transcoder"] > 0
    # a link's weight is the adjacency's entry for the nodes its ids name
    index = {node_id: i for i, node_id in zip(circuit.pruned.nodes.nonzero(as_tuple=True)[0].tolist(), ids)}
    for link in graph["links"][:50]:
        assert link["weight"] == float(circuit.graph.adjacency[index[link["target"]], index[link["source"]]])
    assert json.loads(json.dumps(graph)) == graph


def test_the_command_writes_the_graph(tiny_checkpoints, tmp_path, capsys):
    gpt = toyviz.load(str(tiny_checkpoints["gpt"]), device="cpu")
    random_transcoders(gpt.config).save(tmp_path / "tc")
    summary = command.main([PROMPT, "--gpt", str(tiny_checkpoints["gpt"]), "--transcoders", str(tmp_path / "tc"),
                            "--target", " the", "--out", str(tmp_path / "g.json"), "--device", "cpu"])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == summary
    written = json.loads((tmp_path / "g.json").read_text())
    assert summary["target"] == " the" and len(written["nodes"]) == summary["nodes_kept"]
    assert written["metadata"]["scores"]["completeness"] == pytest.approx(summary["completeness"], abs=1e-4)


def test_a_target_must_be_one_token(tiny_gpt):
    with pytest.raises(UserError, match="one token"):
        trace(tiny_gpt, random_transcoders(tiny_gpt.config), PROMPT, target=" question and more")


def test_cantor_pairing_is_circuit_tracers():
    assert [export.cantor(x, y) for x, y in ((0, 0), (1, 0), (0, 1), (2, 3))] == [0, 1, 2, 18]


def test_the_graphs_prediction_of_an_intervention_is_the_frozen_model_with_features_following(case, graph):
    """Doubling a feature: the graph's predicted logit change equals the frozen model's when every later
    feature is set to what the change makes of its pre-activation (active set held), layer after layer; and
    the real GPT, given the same edit, moves its logit the same way for a strong early feature."""
    model, transcoders, ids, target = case
    prompt = graph.prompt
    layer, position, slot = prompt.active()
    node = int(graph.adjacency[graph.logit_index, :graph.n_features].abs().argmax())
    result = intervene(model, transcoders, graph, node, 2.0)
    index = (layer[node], position[node], slot[node])
    acts = prompt.leaves.acts.clone()
    acts[index] *= 2
    later = layer > layer[node]
    for _ in range(graph.n_layers):
        values = frozen.run(model, transcoders, prompt, frozen.Leaves(prompt.leaves.tokens, acts, prompt.leaves.errors))
        acts[layer[later], position[later], slot[later]] = values.features[later]
    before = frozen.run(model, transcoders, prompt, prompt.leaves).logit
    assert result.predicted_logit_change == pytest.approx(float(values.logit - before), rel=1e-6)
    assert result.predicted_logit_change != 0 and result.real_logit_change != 0
    assert result.prob_before == pytest.approx(float(prompt.logits[-1].softmax(-1)[target]))
    assert intervene(model, transcoders, graph, node, 1.0).real_logit_change == pytest.approx(0, abs=1e-9)


def test_feature_labels_name_the_features_in_the_json(tiny_gpt):
    transcoders = random_transcoders(tiny_gpt.config)
    labels = [[f"layer {layer} feature {f}" for f in range(64)] for layer in range(tiny_gpt.config.n_layer)]
    graph = trace(tiny_gpt, transcoders, PROMPT, labels=labels).to_json()
    features = [node for node in graph["nodes"] if node["feature_type"] == "cross layer transcoder"]
    assert features and all(node["clerp"] == "layer {} feature {}".format(*map(int, node["node_id"].split("_")[:2]))
                            for node in features)


def test_a_capped_graph_folds_the_weaker_features_into_the_errors_and_stays_exact(case):
    """At most `max_features` feature nodes (issue 51: a long prompt's graph took a worker's memory): the ones
    writing the most stay, what the others wrote joins the errors, so the frozen model still is the GPT, and
    every edge still adds up to its target."""
    model, transcoders, ids, target = case
    whole = frozen.record(model, transcoders, ids, target)
    active = int((whole.leaves.acts > 0).sum())
    capped = frozen.record(model, transcoders, ids, target, max_features=active // 3)
    assert int((capped.leaves.acts > 0).sum()) == active // 3 and capped.folded == active - active // 3
    values = frozen.run(model, transcoders, capped, capped.leaves)
    torch.testing.assert_close(values.logits, capped.logits, rtol=1e-10, atol=1e-10)
    sizes = lambda acts: acts * torch.stack([t.W_dec.norm(dim=-1) for t in transcoders])[
        torch.arange(len(acts))[:, None, None], whole.slots]
    kept = capped.leaves.acts > 0
    assert float(sizes(whole.leaves.acts)[kept].min()) >= float(sizes(whole.leaves.acts)[~kept & (whole.leaves.acts > 0)].max())
    graph = attribute(model, transcoders, ids, target, batch=7, max_features=active // 3)
    kinds = graph.kinds()
    targets = (kinds == 0) | (kinds == 3)
    rebuilt = graph.adjacency.sum(1) + graph.bias
    torch.testing.assert_close(rebuilt[targets], graph.values[targets], rtol=1e-9, atol=1e-9)


def test_a_long_prompt_is_traced_over_its_last_tokens_with_a_note(tiny_gpt):
    transcoders = random_transcoders(tiny_gpt.config)
    long = " ".join(["the king and the queen went to the fair"] * 20)
    circuit = trace(tiny_gpt, transcoders, long, max_tokens=16, max_features=40)
    assert circuit.graph.n_positions == 16 and circuit.graph.n_features <= 40
    assert circuit.cut == len(tiny_gpt.tokenizer.encode(long)) - 15
    assert long.endswith(circuit.prompt) and circuit.pieces[0] == tiny_gpt.tokenizer.piece(tiny_gpt.bos)
    assert "last 16 tokens" in circuit.limits_note() and f"the {circuit.cut} before them" in circuit.limits_note()
    assert circuit.folded == 0 or "folded into the error nodes" in circuit.limits_note()
    short = trace(tiny_gpt, transcoders, PROMPT)
    assert short.cut == 0 and short.limits_note() == "" and short.prompt == PROMPT


def test_a_graph_past_its_memory_is_refused_before_it_is_made(case, monkeypatch):
    import toyviz.interpret.circuits.graph as graph_module
    model, transcoders, ids, target = case
    monkeypatch.setattr(graph_module, "MAX_GRAPH_BYTES", 1000)
    with pytest.raises(UserError, match="past the 0 MB a graph may take: shorten the prompt"):
        attribute(model, transcoders, ids, target)
