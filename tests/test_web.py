"""The browser's graphs (python -m toyviz.web) against the Python model, with onnxruntime: no browser needed."""
import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

import toyviz
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.models.gpt import window_start
from toyviz.web import export

FOLDER = CHECKPOINTS / "gpt"
GRAPHS = {name: FOLDER / "web" / f"{name}.onnx" for name in export.GRAPHS}


@pytest.fixture(scope="module")
def gpt():
    return toyviz.load("gpt")


@pytest.fixture(scope="module", params=["committed", "exported now"])
def sessions(request, gpt, tmp_path_factory):
    """The committed graphs, and graphs `python -m toyviz.web` writes from today's model code: the command
    must keep working after a retrain (a data-dependent branch in the forward once broke it unnoticed)."""
    graphs = GRAPHS
    if request.param == "exported now":
        graphs = export.export(gpt.model, FOLDER, tmp_path_factory.mktemp("web"))
    return {name: export.session(path, FOLDER) for name, path in graphs.items()}


def test_the_committed_graphs_come_from_the_shipped_checkpoint():
    """Fails when model.safetensors changed and `python -m toyviz.web` was not run again."""
    digest = export.sha256(FOLDER / export.WEIGHTS)
    assert json.loads((FOLDER / "web" / export.MANIFEST).read_text())["sha256"] == digest
    for name, path in GRAPHS.items():
        assert export.metadata(path)[export.HASH_KEY] == digest, f"{path} is stale: run python -m toyviz.web"
        assert path.stat().st_size < 10 * 2**20


def prompts(gpt):
    rng = np.random.default_rng(0)
    texts = ["To be, or not to be, that is the question:", "ROMEO:\nWhat light through yonder window breaks?",
             "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak."]
    ids = [[gpt.bos]] + [gpt.encode(t)[0] for t in texts]                         # T = 1: BOS alone
    ids.append(rng.integers(0, gpt.config.vocab_size, gpt.config.context).tolist())   # T = 256, the full context
    return ids


def test_prefill_equals_the_python_trace(gpt, sessions):
    lengths = []
    for ids in prompts(gpt):
        trace = gpt.model.trace(ids)
        logits, attention, keys, values = sessions["prefill"].run(None, {"ids": np.array([ids], dtype=np.int64)})
        lengths.append(len(ids))
        assert np.abs(logits - trace.logits.numpy()).max() <= 1e-4
        assert np.abs(attention - trace.attention.numpy()).max() <= 1e-5
        assert np.abs(keys - trace.k.numpy()).max() <= 1e-4
        assert np.abs(values - trace.v.numpy()).max() <= 1e-4
    assert 1 in lengths and gpt.config.context in lengths


def greedy(sessions, ids, n, context):
    """What the page does: prefill the window, then one step a token with the cache, re-reading the window
    when it overflows (the same rule as ToyGPT.generate_ids)."""
    seq, start, keys, values, out = list(ids), max(0, len(ids) - context), None, None, []
    for _ in range(n):
        jumped = window_start(len(seq), start, context)
        if keys is None or jumped != start:
            start = jumped
            logits, _, keys, values = sessions["prefill"].run(None, {"ids": np.array([seq[start:]], dtype=np.int64)})
            logits = logits[-1]
        else:
            logits, keys, values = sessions["step"].run(None, {"ids": np.array([seq[-1:]], dtype=np.int64),
                                                               "past_keys": keys, "past_values": values})
        seq.append(int(logits.argmax()))
        out.append(seq[-1])
    return out


@pytest.mark.parametrize("text", ["To be, or not to be", "KING HENRY:\n" + "Once more unto the breach, dear friends. " * 22])
def test_step_graph_generates_what_the_python_model_generates(gpt, sessions, text):
    """Greedy, 64 tokens; the long prompt makes the window jump (re-read) partway through."""
    ids = gpt.encode(text)[0]
    expected = [s.token for s in gpt.generate(text, 64, temperature=0)]
    assert greedy(sessions, ids, 64, gpt.config.context) == expected


def test_without_the_page_build_the_page_says_the_server_runs_the_model(tmp_path, monkeypatch):
    from toyviz.app import browser_model
    from toyviz.serving.static import Shelf
    monkeypatch.setattr(browser_model, "SCRIPT", tmp_path / "toyviz.js")
    why = browser_model.missing()
    assert why is not None and "npm run build" in why
    head = browser_model.head(Shelf())
    assert '"backend": "server"' in head and why in head and "<script src" not in head
    assert browser_model.missing(tmp_path) is not None           # a folder without exported graphs


def test_every_file_the_page_fetches_has_its_sha256_and_an_address_named_by_it(tmp_path):
    import hashlib
    from toyviz.app import browser_model
    from toyviz.serving.static import Shelf
    shelf = Shelf()
    config = browser_model.config(shelf, origin="")
    assert set(config["files"]) == set(config["hashes"]) == {"prefill", "step", "weights", "ranks", "wasm"}
    weights = (FOLDER / "model.safetensors").read_bytes()
    assert config["hashes"]["weights"] == hashlib.sha256(weights).hexdigest() == config["sha256"]
    for name, address in config["files"].items():
        assert address.startswith("toyviz/files/") and ("/" + address) in shelf.named
    assert config["files"]["weights"].split("/")[2] == config["hashes"]["weights"][:16]
    cdn = browser_model.config(Shelf(), origin="https://cdn.example/r/", wasm_url="https://npm.example/ort.wasm")
    assert cdn["files"]["weights"] == "https://cdn.example/r/checkpoints/gpt/model.safetensors"
    assert cdn["files"]["wasm"] == "https://npm.example/ort.wasm" and cdn["hashes"] == config["hashes"]


def test_a_checkpoint_changed_since_its_graphs_were_exported_turns_the_pages_model_off(tmp_path):
    import shutil
    from toyviz.app import browser_model
    from toyviz.serving.static import Shelf
    folder = tmp_path / "gpt"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("snapshots", "features"))
    assert browser_model.missing(folder) is None
    weights = bytearray((folder / "model.safetensors").read_bytes())
    weights[-1] ^= 1                                              # one byte of one weight
    (folder / "model.safetensors").write_bytes(bytes(weights))
    why = browser_model.missing(folder)
    assert why is not None and "exported from other weights" in why and "toyviz export web" in why
    head = browser_model.head(Shelf(), folder)
    assert '"backend": "server"' in head and "exported from other weights" in head
