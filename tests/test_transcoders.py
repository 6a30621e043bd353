"""Transcoders (toyviz.interpret.transcoders) and their trainer (python -m toyviz.transcoders): the splice is
the MLP swapped for the transcoder, checked through torch's own module hooks rather than toyviz's; the
trainer, end to end on the tiny GPT and in-memory plays, saves what its metrics say, and resumes where it
stopped; the shipped transcoders' card is made from their metrics.json and each file is under 10 MiB."""
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import toyviz
from toyviz.data import shakespeare
from toyviz.training import transcoders as train_transcoders
from toyviz.interpret.dashboards import Dashboards
from toyviz.interpret.transcoders import DASHBOARDS, FOLDER, Transcoder, TranscoderConfig, TranscoderSet, splicing

from conftest import ENGLISH

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "gpt" / FOLDER
HELD_OUT = ("Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds "
            "that loured upon our house in the deep bosom of the ocean buried. ") * 4


def run_with_mlps(model, x, replace=None):
    """Logits of x, and each block's MLP input and output, through torch's forward hooks on the MLP modules;
    replace(layer, mlp_input) → a new output for that MLP at every position but the first."""
    seen, handles = {}, []
    for layer, block in enumerate(model.blocks):
        def hook(module, args, out, layer=layer):
            seen[layer] = (args[0].detach(), out.detach())
            if replace is not None:
                return torch.cat([out[:, :1], replace(layer, args[0])[:, 1:]], dim=1)
        handles.append(block.mlp.register_forward_hook(hook))
    try:
        with torch.no_grad():
            return model(x)[0], seen
    finally:
        for h in handles:
            h.remove()


def small_set(config, width=64, k=4) -> TranscoderSet:
    torch.manual_seed(0)
    return TranscoderSet([Transcoder(TranscoderConfig(config.d_model, width, k, layer)).eval()
                          for layer in range(config.n_layer)])


def test_splicing_swaps_each_mlp_for_its_transcoder(tiny_gpt):
    model, transcoders = tiny_gpt.model, small_set(tiny_gpt.config)
    x = torch.tensor([tiny_gpt.encode(ENGLISH)[0][:40]])
    with torch.no_grad():
        spliced = model(x, hooks=splicing(transcoders, keep_first=True))[0]
        plain = model(x)[0]
    expected, _ = run_with_mlps(model, x, lambda layer, a: transcoders[layer].predict(a))
    torch.testing.assert_close(spliced, expected, rtol=1e-5, atol=1e-5)
    assert (spliced - plain).abs().max() > 1e-3                       # it did change something


def test_a_transcoder_keeps_k_features_and_its_loss_is_the_unexplained_share(tiny_gpt):
    t = small_set(tiny_gpt.config)[0]
    x, y = torch.randn(50, 32), torch.randn(50, 32)
    with torch.no_grad():
        y_hat, values, indices, loss = t(x, y)
    assert values.shape == indices.shape == (50, 4) and (values >= 0).all()
    assert loss.item() == pytest.approx(float((y - y_hat).pow(2).sum() / (y - y.mean(0)).pow(2).sum()), rel=1e-5)


def test_the_trainer_saves_transcoders_that_do_what_their_metrics_say(tiny_checkpoints, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shakespeare, "load_works", lambda fetch=True: {
        "hamlet": HELD_OUT, "tempest": ENGLISH, "twelfth_night": HELD_OUT})
    out = tmp_path / "tc"
    metrics = train_transcoders.main(["--gpt", str(tiny_checkpoints["gpt"]), "--width", "64", "--k", "4",
                                      "--minutes", "0.05", "--windows", "8", "--batch", "128", "--lr", "3e-3",
                                      "--eval-windows", "4", "--out", str(out), "--device", "cpu"])
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["steps"] == metrics["steps"] > 0 and not (out / "resume.pt").exists()
    assert json.loads((out / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    assert (out / "README.md").read_text() == train_transcoders.card(metrics)
    gpt = toyviz.load(str(tiny_checkpoints["gpt"]), device="cpu")
    transcoders = TranscoderSet.load(out)
    assert [t.transcoder_config.layer for t in transcoders] == [0, 1]

    # the figures again, through torch's module hooks: FVE and L0 per layer, the loss with all spliced in
    ids, T = gpt.tokenizer.encode(HELD_OUT + "\n\n" + HELD_OUT), gpt.config.context
    every = torch.tensor(ids[: len(ids) // T * T]).view(-1, T)          # the held-out windows; metrics read 4
    y = every[:4]
    x = torch.cat([torch.full((len(y), 1), gpt.bos), y[:, :-1]], dim=1)
    logits, seen = run_with_mlps(gpt.model, x)
    for layer, t in enumerate(transcoders):
        a, b = (v[:, 1:].flatten(0, 1) for v in seen[layer])
        with torch.no_grad():
            values, indices = t.encode(a)
            fve = 1 - float((b - t.predict(a)).pow(2).sum() / (b - b.mean(0)).pow(2).sum())
        assert metrics["layers"][layer]["fve"] == pytest.approx(fve, abs=1e-4)
        assert metrics["layers"][layer]["l0"] == pytest.approx(float((values > 0).sum(-1).float().mean()), abs=1e-4)
        # every feature's dashboard, made on all the held-out windows: on these first 4, a feature fires at
        # most as often as the dashboard's frequency allows over all of them
        board = Dashboards.load(out / DASHBOARDS / f"layer{layer}")
        assert len(board.labels) == 64 and board.tokens == every[:, 1:].numel()
        fired = torch.bincount(indices[values > 0], minlength=64)
        assert (fired <= board.frequency * board.tokens + 1e-3).all() and fired.sum() > 0
    loss = lambda out: float(F.cross_entropy(out[:, 1:].flatten(0, 1), y[:, 1:].flatten()))
    spliced, _ = run_with_mlps(gpt.model, x, lambda layer, a: transcoders[layer].predict(a))
    zeroed, _ = run_with_mlps(gpt.model, x, lambda layer, a: torch.zeros_like(a))
    ce = {"gpt": loss(logits), "spliced": loss(spliced), "zero": loss(zeroed)}
    for name, value in ce.items():
        assert metrics[f"ce_{name}"] == pytest.approx(value, abs=1e-4), name
    recovered = (metrics["ce_zero"] - metrics["ce_spliced"]) / (metrics["ce_zero"] - metrics["ce_gpt"])
    # on its own figures: the untrained tiny GPT's MLPs barely matter, so CE_zero − CE_gpt is ~1e-4 here
    assert metrics["ce_recovered"] == pytest.approx(recovered, rel=1e-9)
    assert metrics["held_out_tokens"] == y[:, 1:].numel()
    # --describe rebuilds the dashboards (and the card) of the saved transcoders without training
    (out / DASHBOARDS / "layer1" / "dashboards.json").unlink()
    (out / "README.md").unlink()
    assert train_transcoders.main(["--gpt", str(tiny_checkpoints["gpt"]), "--out", str(out), "--describe",
                                   "--device", "cpu"]) == metrics
    assert Dashboards.load(out / DASHBOARDS / "layer1").labels == board.labels
    assert (out / "README.md").read_text() == train_transcoders.card(metrics)


def test_training_resumes_where_it_stopped(tiny_checkpoints, tmp_path):
    gpt = toyviz.load(str(tiny_checkpoints["gpt"]), device="cpu")
    ids = torch.tensor(gpt.tokenizer.encode(ENGLISH), dtype=torch.int32)
    resume, lines = tmp_path / "resume.pt", []
    settings = dict(width=64, k=4, windows=4, batch=64, reuse=1, lr=1e-3, seed=0, resume=resume, save_every=0,
                    log=lines.append)
    _, first = train_transcoders.train(gpt, ids, minutes=0.02, **settings)
    saved = torch.load(resume, weights_only=False)
    assert saved["step"] == first["steps"] > 0 and saved["elapsed"] >= 0.02 * 60 * 0.5
    _, second = train_transcoders.train(gpt, ids, minutes=0.04, **settings)
    assert any(line.startswith(f"resumed at step {first['steps']},") for line in lines)
    assert second["steps"] > first["steps"] and second["chunks"] > first["chunks"]


@pytest.mark.skipif(not (SHIPPED / "metrics.json").is_file(), reason="no shipped transcoders")
def test_the_shipped_card_is_made_from_the_shipped_metrics():
    metrics = json.loads((SHIPPED / "metrics.json").read_text())
    card = (SHIPPED / "README.md").read_text()
    assert card == train_transcoders.card(metrics)
    for m in metrics["layers"]:                                       # and says each layer's figures
        assert f"| {m['layer']} | {m['fve']:.4f} | {m['l0']:.2f} | {m['dead']:.4f} |" in card
    assert f"**{metrics['ce_recovered']:.4f}**" in card
    assert all(f.stat().st_size < 10 * 2 ** 20 for f in SHIPPED.iterdir())
    transcoders = TranscoderSet.load(SHIPPED)
    assert len(transcoders) == 4 and transcoders[0].config.width == metrics["width"]
