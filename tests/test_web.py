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
    monkeypatch.setattr(browser_model, "SCRIPT", tmp_path / "toyviz.js")
    why = browser_model.missing()
    assert why is not None and "npm run build" in why
    head = browser_model.head()
    assert '"backend": "server"' in head and why in head and "<script src" not in head
    assert browser_model.missing(tmp_path) is not None           # a folder without exported graphs


def test_the_page_fetches_the_weights_gzipped_once_made_and_as_they_are_where_it_cannot_write(tmp_path, monkeypatch):
    import gzip
    import hashlib
    from toyviz.app import browser_model
    monkeypatch.setenv("TOYVIZ_DATA", str(tmp_path / "data"))
    weights = (FOLDER / "model.safetensors").read_bytes()
    sent = browser_model.config()["files"]["weights"]
    assert sent.endswith("model.safetensors.gz") and str(tmp_path) in sent
    packed = next((tmp_path / "data" / "web").rglob("*.gz"))
    assert hashlib.sha256(gzip.decompress(packed.read_bytes())).hexdigest() == hashlib.sha256(weights).hexdigest()
    assert len(packed.read_bytes()) < 0.95 * len(weights)             # what a first visit saves
    made = packed.stat().st_mtime_ns
    browser_model.config()
    assert packed.stat().st_mtime_ns == made                         # made once per checkpoint
    (tmp_path / "a file").write_text("")                              # no folder can be made under it, even by root
    monkeypatch.setenv("TOYVIZ_DATA", str(tmp_path / "a file" / "data"))
    assert browser_model.config()["files"]["weights"].endswith("/model.safetensors")
