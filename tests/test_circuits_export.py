"""A folder of attribution graphs as circuit-tracer opens it (toyviz.interpret.circuits.export): every node and
link has the fields and types circuit-tracer's pydantic models declare, ids are circuit-tracer's (error nodes
"<layer>_-1_<pos>" since its issue #78 fix), and the folder's graph-metadata.json lists the graphs. Checked
against the schema as read from circuit-tracer's source (always), and against circuit-tracer's own models,
URL decoder and local server where it is installed (`pip install --no-deps circuit-tracer`: its frontend
needs pydantic alone)."""
import json
import socket
import urllib.parse
import urllib.request

import pytest

from toyviz import circuits as command
from toyviz.interpret.circuits import export, trace
from test_circuits import PROMPT, random_transcoders

# circuit_tracer/frontend/graph_models.py (decoderesearch/circuit-tracer main, and v0.5.0 on PyPI): each model's
# fields and their types; a `None` in a tuple is a field that may be null
METADATA = {"slug": str, "scan": str, "transcoder_list": list, "prompt_tokens": list, "prompt": str,
            "node_threshold": (float, int, type(None)), "schema_version": (int, type(None))}
QPARAMS = {"pinnedIds": list, "supernodes": list, "linkType": str, "clickedId": str, "sg_pos": str}
NODE = {"node_id": str, "feature": int, "layer": str, "ctx_idx": int, "feature_type": str, "token_prob": (float, int),
        "is_target_logit": bool, "run_idx": int, "reverse_ctx_idx": int, "jsNodeId": str, "clerp": str,
        "influence": (float, int, type(None)), "activation": (float, int, type(None))}
LINK = {"source": str, "target": str, "weight": (float, int)}
KINDS = {"cross layer transcoder", "mlp reconstruction error", "embedding", "logit"}


@pytest.fixture(scope="module")
def circuit(tiny_gpt):
    return trace(tiny_gpt, random_transcoders(tiny_gpt.config), PROMPT)


@pytest.fixture(scope="module")
def folder(circuit, tmp_path_factory):
    """Two graphs saved into one folder, the first saved twice (its index entry replaced, not doubled)."""
    root = tmp_path_factory.mktemp("graphs")
    for slug in ("to-be", "again", "to-be"):
        export.save(circuit.to_json(slug), root)
    return root


def typed(record: dict, fields: dict) -> bool:
    return all(isinstance(record[k], t) and not (t is int and isinstance(record[k], bool)) for k, t in fields.items())


def test_a_graph_has_every_field_circuit_tracer_writes_with_its_type(folder):
    graph = json.loads((folder / "to-be.json").read_text())
    assert set(graph) == {"metadata", "qParams", "nodes", "links"}
    assert typed(graph["metadata"], METADATA) and typed(graph["qParams"], QPARAMS)
    assert all(set(node) == set(NODE) and typed(node, NODE) for node in graph["nodes"])
    assert list(graph["nodes"][0]) == list(NODE)                          # circuit-tracer's order, too
    assert all(set(link) == set(LINK) and typed(link, LINK) for link in graph["links"])
    assert {node["feature_type"] for node in graph["nodes"]} == KINDS     # the random transcoders miss a lot
    ids = {node["node_id"] for node in graph["nodes"]}
    assert all(link["source"] in ids and link["target"] in ids for link in graph["links"])


def test_node_ids_are_circuit_tracers(circuit):
    graph, L = circuit.to_json(), circuit.graph.n_layers
    for node in graph["nodes"]:
        kind, layer, pos, feature = node["feature_type"], node["layer"], node["ctx_idx"], node["feature"]
        if kind == "mlp reconstruction error":
            assert (node["node_id"], node["jsNodeId"], feature) == (f"{layer}_-1_{pos}", f"{layer}_-1-{pos}", -1)
        elif kind == "cross layer transcoder":
            number = int(node["node_id"].split("_")[1])
            assert node["node_id"] == f"{layer}_{number}_{pos}" and node["jsNodeId"] == f"{layer}_{number}-0"
            assert feature == export.cantor(int(layer), number)
        elif kind == "embedding":
            token = circuit.graph.prompt.ids[pos]
            assert (node["node_id"], node["jsNodeId"], layer, feature) == (f"E_{token}_{pos}", f"E_{token}-{pos}", "E", pos)
        else:
            assert node["node_id"] == f"{L + 1}_{feature}_{pos}" and node["jsNodeId"] == f"L_{feature}-{pos}"
    for key in ("node_id", "jsNodeId"):
        values = [node[key] for node in graph["nodes"]]
        assert len(values) == len(set(values))


def test_error_ids_parse_as_circuit_tracers_decoder_reads_them(circuit):
    """decode_url_features: `layer, feature_idx, pos = map(int, node_id.split("_"))`: three integers, the
    feature -1; and toyviz's own parser reads every id back to the node it names (the old "err_" form too)."""
    graph, L = circuit.to_json(), circuit.graph.n_layers
    errors = [node for node in graph["nodes"] if node["feature_type"] == "mlp reconstruction error"]
    assert errors
    for node in errors:
        assert tuple(map(int, node["node_id"].split("_"))) == (int(node["layer"]), -1, node["ctx_idx"])
    kinds = {"cross layer transcoder": "feature", "mlp reconstruction error": "error", "embedding": "token",
             "logit": "logit"}
    for node in graph["nodes"]:
        named = export.parse(node["node_id"], L)
        assert named.kind == kinds[node["feature_type"]] and named.position == node["ctx_idx"]
        assert named.layer == (None if named.kind == "token" else int(node["layer"]))
    assert export.parse("err_1_7") == export.parse("1_-1_7") == export.NodeId("error", 1, None, 7)
    assert [export.parse(text) for text in ("", "1_-2_3", "-1_2_3", "E_-1_2", "a_1_2", "1_2")] == [None] * 6


def test_the_folder_is_indexed_as_circuit_tracers_server_reads_it(folder, circuit):
    index = json.loads((folder / export.INDEX).read_text())
    assert [entry["slug"] for entry in index["graphs"]] == ["again", "to-be"]
    for entry in index["graphs"]:
        assert set(entry) == set(METADATA) and typed(entry, METADATA)
        assert entry == {k: json.loads((folder / f"{entry['slug']}.json").read_text())["metadata"][k] for k in METADATA}


def test_the_command_writes_into_a_folder_or_names_the_graph_by_its_file(tiny_gpt, tiny_checkpoints, tmp_path, capsys):
    random_transcoders(tiny_gpt.config).save(tmp_path / "tc")          # the checkpoint is tiny_gpt saved
    common = [PROMPT, "--gpt", str(tiny_checkpoints["gpt"]), "--transcoders", str(tmp_path / "tc"), "--device", "cpu"]
    into = command.main(common + ["--out", str(tmp_path / "graphs")])
    named = command.main(common + ["--target", " the", "--out", str(tmp_path / "graphs" / "the.json")])
    capsys.readouterr()
    index = json.loads((tmp_path / "graphs" / export.INDEX).read_text())
    slugs = [entry["slug"] for entry in index["graphs"]]
    assert named["out"] == str(tmp_path / "graphs" / "the.json") and slugs[1] == "the" and len(slugs) == 2
    assert json.loads((tmp_path / "graphs" / f"{slugs[0]}.json").read_text())["metadata"]["slug"] == slugs[0]
    assert into["index"] == named["index"] == str(tmp_path / "graphs" / export.INDEX)


# ---------------------------------------------------------------- circuit-tracer's own code, where installed -----

def test_circuit_tracers_models_validate_the_graph_and_its_index(folder):
    models = pytest.importorskip("circuit_tracer.frontend.graph_models")
    graph = json.loads((folder / "to-be.json").read_text())
    model = models.Model.model_validate(graph)
    assert len(model.nodes) == len(graph["nodes"]) and len(model.links) == len(graph["links"])
    # what it writes back is what we wrote (our extra metadata keys aside, which its Metadata ignores)
    dumped = json.loads(model.model_dump_json())
    assert dumped["nodes"] == graph["nodes"] and dumped["qParams"] == graph["qParams"]
    assert all(models.Link.model_validate(link) for link in graph["links"])
    for entry in json.loads((folder / export.INDEX).read_text())["graphs"]:
        assert models.Metadata.model_validate(entry).model_dump() == entry


def test_circuit_tracers_url_decoder_reads_pinned_and_grouped_error_nodes(circuit):
    decoder = pytest.importorskip("circuit_tracer.utils.decode_url_features")
    graph = circuit.to_json()
    errors = [n for n in graph["nodes"] if n["feature_type"] == "mlp reconstruction error"][:3]
    features = [n for n in graph["nodes"] if n["feature_type"] == "cross layer transcoder"][:2]
    pinned = [n["node_id"] for n in errors + features]
    supernodes = [["errors", *(n["node_id"] for n in errors)]]
    url = ("http://localhost:8032/?" + urllib.parse.urlencode(
        {"pinnedIds": ",".join(pinned), "supernodes": json.dumps(supernodes)}))
    grouped, singles = decoder.decode_url_features(url)
    expected = [decoder.Feature(int(n["layer"]), n["ctx_idx"], -1) for n in errors]
    assert grouped == {"errors": expected}
    assert singles[:len(errors)] == expected
    assert [(f.layer, f.pos, f.feature_idx) for f in singles[len(errors):]] == [
        tuple(map(int, (n["layer"], n["ctx_idx"], n["node_id"].split("_")[1]))) for n in features]


def test_circuit_tracers_local_server_serves_the_folder(folder):
    server_module = pytest.importorskip("circuit_tracer.frontend.local_server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = server_module.serve(data_dir=str(folder), port=port)
    try:
        read = lambda path: json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).read())
        graphs = read("/data/graph-metadata.json")["graphs"]
        assert [g["slug"] for g in graphs] == ["again", "to-be"]
        for g in graphs:                                  # what its page fetches for a graph chosen from the list
            assert read(f"/graph_data/{g['slug']}.json") == json.loads((folder / f"{g['slug']}.json").read_text())
    finally:
        server.stop()
