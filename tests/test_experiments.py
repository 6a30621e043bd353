import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from toyviz.training import experiments, variants
from toyviz.models.config import GPTConfig
from toyviz.models.gpt import ToyGPT
from toyviz.models.size import count_parameters

BASE = experiments.BASELINE
ROOT = Path(__file__).resolve().parent.parent


def test_variant_list_imports_no_training_code():
    """The app lists the variants from toyviz.training.variants; that must not pull in the training loop."""
    check = ("import sys, toyviz.training.variants as v; assert 'toyviz.training.loop' not in sys.modules, 'toyviz.training.loop imported'; "
             "assert 'toyviz.training.experiments' not in sys.modules; print(len(v.VARIANTS))")
    done = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(len(experiments.VARIANTS))
    assert experiments.VARIANTS is variants.VARIANTS


@pytest.mark.parametrize("name", list(experiments.VARIANTS))
def test_variants_differ_in_one_thing_and_keep_the_size(name):
    config = experiments.variant_config(name)
    differs = {k for k, v in vars(config).items() if getattr(BASE, k) != v}
    named = set(experiments.VARIANTS[name][1]) - ({"d_ff"} if name == "swiglu" else set())
    assert differs - {"d_ff"} == named
    base, mine = count_parameters(BASE)["total"], count_parameters(config)["total"]
    assert abs(mine - base) / base <= 0.05, (name, mine, base)


def test_honest_scoring_never_sees_the_future():
    torch.manual_seed(0)
    model = ToyGPT(GPTConfig(vocab_size=40, context=16, n_layer=2, n_head=2, d_model=16, causal=False)).eval()
    with torch.no_grad():                      # larger weights, so a leak shows up well above rounding
        for p in model.parameters():
            p.mul_(10)
    a = torch.randint(1, 40, (12,))
    b = a.clone()
    b[10] = (b[10] + 1) % 40                   # a later token changes; positions 0..9 must not notice
    honest = experiments.honest_position_nats(model, a, 0), experiments.honest_position_nats(model, b, 0)
    assert torch.equal(honest[0][:10], honest[1][:10])
    # the unmasked model as trained does read it: the same positions' losses move
    x = lambda w: torch.cat([torch.tensor([0]), w[:-1]])[None]
    full = [torch.nn.functional.cross_entropy(model(x(w))[0][0], w, reduction="none") for w in (a, b)]
    assert (full[0][:10] - full[1][:10]).abs().max() > 1e-3


@pytest.fixture
def tiny_corpus(tmp_path, monkeypatch):
    """A few lines of Shakespeare instead of the real split, with the evaluation made cheap."""
    from toyviz.data import shakespeare
    monkeypatch.setenv("TOYVIZ_DATA", str(tmp_path / "data"))
    verse = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer. "
    works = {"hamlet": verse * 4, "twelfth_night": "If music be the food of love, play on. " * 4,
             "lear": verse * 300, "tempest": "Full fathom five thy father lies. " * 300}
    monkeypatch.setattr(shakespeare, "load_works", lambda: works)
    monkeypatch.setattr(experiments, "HONEST_WINDOWS", 1)
    monkeypatch.setattr(experiments, "EVAL_EVERY", 2)


def test_a_tiny_run_writes_results_of_the_documented_shape(tmp_path, tiny_corpus):
    out = tmp_path / "exp"
    experiments.main(["--steps", "3", "--out", str(out), "--device", "cpu"])
    results = json.loads((out / "results.json").read_text())
    assert {"command", "tokens_per_variant", "context", "variants"} <= set(results)
    assert set(results["variants"]) == set(experiments.VARIANTS)
    for name, r in results["variants"].items():
        assert {"params", "minutes", "val_bits_per_char", "train_curve", "val_curve", "time_curve"} <= set(r)
        assert len(r["train_curve"]) == 3 and r["val_curve"]
    for name in experiments.POSITIONAL:
        assert set(results["variants"][name]["extrapolation"]) == {"1x", "2x", "4x"}
    assert results["variants"]["learned_pe"]["extrapolation"]["2x"] is None
    no_mask = results["variants"]["no_causal_mask"]
    assert "val_bits_per_char_as_trained" in no_mask
    import toyviz
    reloaded = toyviz.load(str(out / "no_causal_mask"), device="cpu")
    assert reloaded.config.causal is False
    card = (out / "no_causal_mask" / "README.md").read_text()
    assert "without the causal mask" in card and str(no_mask["val_bits_per_char_as_trained"]) in card
    assert reloaded.trace("To be, or not").attention.triu(1).sum() > 0


def test_a_time_budget_gives_every_variant_the_steps_the_first_one_reached(tmp_path, tiny_corpus):
    out = tmp_path / "exp"
    experiments.main(["--minutes-per-variant", "0.0001", "--variants", "rope,baseline", "--out", str(out),
                      "--device", "cpu"])
    results = json.loads((out / "results.json").read_text())
    steps = results["variants"]["rope"]["steps"]
    assert steps >= 10 and results["variants"]["baseline"]["steps"] == steps == results["steps"]
    assert results["tokens_per_variant"] == steps * experiments.BATCH * experiments.BASELINE.context
    assert "--minutes-per-variant" in results["command"]
