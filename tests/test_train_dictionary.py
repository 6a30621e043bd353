"""`python -m toyviz.features`, the dictionary trainer, end to end: tiny, on the conftest GPT's checkpoint
and in-memory plays (no download), in a tmp folder. What it saves is loaded back, and every figure in
its metrics.json is recomputed here through the plain forward with torch's own hooks, not toyviz's
site reader and splicer."""
import json

import pytest
import torch
import torch.nn.functional as F

import toyviz
from toyviz.data import shakespeare
from toyviz.training import dictionary

from conftest import ENGLISH

HELD_OUT = ("Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds "
            "that loured upon our house in the deep bosom of the ocean buried. ") * 4
CE_WINDOWS = 2


def loss(logits, y) -> float:
    return float(F.cross_entropy(logits.flatten(0, 1).float(), y.flatten()))


def run_with_block_0(model, x, change=None):
    """Logits of windows x, and the stream after block 0 ("block0.resid_post"), optionally changed at every
    position but the BOS before the next block reads it."""
    seen = []

    def hook(module, args, out):
        seen.append(out.detach().clone())
        if change is not None:
            return torch.cat([out[:, :1], change(out[:, 1:])], dim=1)
    handle = model.blocks[0].register_forward_hook(hook)
    try:
        with torch.no_grad():
            return model(x)[0], seen[0]
    finally:
        handle.remove()


def test_the_trainer_saves_a_dictionary_that_does_what_its_metrics_say(tiny_checkpoints, monkeypatch, tmp_path,
                                                                       capsys):
    monkeypatch.setattr(shakespeare, "load_works", lambda fetch=True: {
        "hamlet": HELD_OUT, "tempest": ENGLISH, "twelfth_night": HELD_OUT})
    out = tmp_path / "features"
    metrics = dictionary.main(["--gpt", str(tiny_checkpoints["gpt"]), "--site", "block0.resid_post", "--width", "64",
                                     "--k", "4", "--tokens", "3000", "--steps", "60", "--batch", "256", "--lr", "3e-3",
                                     "--ce-windows", str(CE_WINDOWS), "--out", str(out), "--device", "cpu"])
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])          # the last line: the metrics
    assert printed["fve"] == round(metrics["fve"], 4) and printed["steps"] == metrics["steps"] == 60
    assert json.loads((out / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    gpt = toyviz.load(str(tiny_checkpoints["gpt"]), device="cpu")
    features = toyviz.load_features(gpt, out)
    sae = features.sae
    assert (features.site.name, len(features), sae.config.k) == ("block0.resid_post", 64, 4)

    # the held-out plays as the command reads them: whole windows, each BOS + all but its last token
    ids, T = gpt.tokenizer.encode(shakespeare.split(shakespeare.load_works())[1]), gpt.config.context
    y = torch.tensor(ids[: len(ids) // T * T]).view(-1, T)
    x = torch.cat([torch.full((len(y), 1), gpt.bos), y[:, :-1]], dim=1)
    logits, stream = run_with_block_0(gpt.model, x)
    acts = stream[:, 1:].flatten(0, 1)                                  # the BOS is left out everywhere
    with torch.no_grad():
        rebuilt = sae.decode(*sae.encode(acts))
        values = sae.encode(acts)[0]
    fve = 1 - float((acts - rebuilt).pow(2).sum() / (acts - acts.mean(0)).pow(2).sum())
    assert metrics["held_out_tokens"] == len(acts) and len(y) >= 3
    assert metrics["fve"] == pytest.approx(fve, abs=1e-4) and fve > 0.3           # it learned, and says how well
    l0 = float((values > 0).sum(-1).float().mean())                    # features active per token
    assert metrics["l0"] == pytest.approx(l0, abs=1e-4) and l0 <= 4

    # the next-token loss on the first windows: as it is, with the reconstruction, with zeros
    xs, ys = x[:CE_WINDOWS], y[:CE_WINDOWS]
    reconstruct = lambda a: sae.decode(*sae.encode(a.flatten(0, 1))).view_as(a)
    ce = {"gpt": loss(logits[:CE_WINDOWS], ys), "sae": loss(run_with_block_0(gpt.model, xs, reconstruct)[0], ys),
          "zero": loss(run_with_block_0(gpt.model, xs, torch.zeros_like)[0], ys)}
    for name, value in ce.items():
        assert metrics[f"ce_{name}"] == pytest.approx(value, abs=1e-4), name
    assert metrics["ce_recovered"] == pytest.approx((ce["zero"] - ce["sae"]) / (ce["zero"] - ce["gpt"]), abs=1e-3)
    assert metrics["ce_tokens"] == ys.numel()
