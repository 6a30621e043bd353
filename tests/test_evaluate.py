import math

import pytest
import torch

import toyviz
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.training.evaluate import bits_per_char, gpt_nats


def test_bits_per_char_known_case():
    # a model that is always 50/50 between two characters spends exactly one bit per character
    assert bits_per_char(total_nats=1000 * math.log(2), n_chars=1000) == pytest.approx(1.0)
    # tokens of 4 characters at 8 bits each: 2 bits per character
    assert bits_per_char(total_nats=250 * 8 * math.log(2), n_chars=1000) == pytest.approx(2.0)


class Uniform(torch.nn.Module):
    """Same logits everywhere: every token costs ln(V) nats."""

    def __init__(self, vocab=50, context=16):
        super().__init__()
        self.config = type("C", (), {"context": context})()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.vocab = vocab

    def forward(self, x):
        return torch.zeros(*x.shape, self.vocab) + self.w, None


def test_gpt_nats_scores_every_token_once():
    ids = torch.randint(0, 50, (37,))                           # 2 full windows of 16 and a short one
    assert gpt_nats(Uniform(), ids, bos=0) == pytest.approx(37 * math.log(50), rel=1e-5)


shipped = pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(), reason="no shipped checkpoints")


@shipped
def test_shipped_gpt_writes_text():
    gpt = toyviz.load("gpt", device="cpu")
    text = "".join(s.text for s in gpt.generate("ROMEO:", 40, temperature=0.8, top_k=50, seed=0))
    assert len(text.strip()) > 20 and sum(c.isalpha() for c in text) > 15


@shipped
def test_shipped_translator_translates_a_held_in_verse():
    mt = toyviz.load("translator", device="cpu")
    out = mt.translate("In the beginning God created the heavens and the earth.", beam=4).text
    reference = "En el principio crió Dios los cielos y la tierra."
    shared = set(out.lower().strip(".").split()) & set(reference.lower().strip(".").split())
    assert {"principio", "dios", "cielos", "tierra"} <= shared, out


@shipped
def test_shipped_gpt_copies_in_context_with_an_induction_head():
    """Issue 18's targets on the probe set's repeated random sequences: a head with induction score
    >= 0.6, the repeat's loss <= 40 % of the first copy's, and the previous-token head that feeds it."""
    from toyviz.training.evaluate import head_facts

    gpt = toyviz.load("gpt", device="cpu")
    text = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun. " * 6
    facts = head_facts(gpt, text)
    assert facts["induction_score_max"] >= 0.6 and facts["in_context_drop"] <= 0.4, facts
    assert facts["previous_token_score_max_on_repeats"] >= 0.6, facts


def test_in_context_drop_is_the_second_copys_loss_over_the_first(tiny_gpt):
    from toyviz.training.evaluate import in_context_drop
    from toyviz.interpret.heads import make_probe_set

    probes = make_probe_set(tiny_gpt.bos, tiny_gpt.config.vocab_size, list(range(100)), n=2, period=10)
    ids = torch.tensor(probes.repeats)
    logits, _ = tiny_gpt.model(ids[:, :-1])
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
    expected = (losses[:, 10:].mean() / losses[:, :10].mean()).item()
    assert in_context_drop(tiny_gpt.model, probes.repeats, probes.period) == pytest.approx(expected, rel=1e-5)


def test_the_training_sample_is_fixed_and_scores_a_perfect_translator_100(monkeypatch):
    """The sample is evenly spaced (the same verses every time), and a translator that returns the
    reference scores chrF 100 with the known verses exact."""
    from types import SimpleNamespace

    from toyviz.training.evaluate import TRAINING_SAMPLE, training_sample_facts
    pairs = [SimpleNamespace(ref="Gen.1.1" if i == 0 else "Gen.1.3" if i == 2 else f"Ps.{i}.1",
                             en=f"verse {i}", es=f"versículo número {i} del libro") for i in range(1000)]
    by_en = {p.en: p.es for p in pairs}
    perfect = SimpleNamespace(translate_text=lambda text, beam, register: by_en[text])
    facts = training_sample_facts(perfect, pairs)
    assert facts["train_sample_verses"] == TRAINING_SAMPLE and facts["train_sample_beam4_chrf"] == 100
    assert facts["known_verses_exact"] == {"Gen.1.1": True, "Gen.1.3": True}
    wrong = SimpleNamespace(translate_text=lambda text, beam, register: "nada")
    low = training_sample_facts(wrong, pairs)
    assert low["train_sample_beam4_chrf"] < 10 and not any(low["known_verses_exact"].values())


# ---------------------------------------------------------------- the command, end to end ----

HELD_OUT = ("Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds "
            "that loured upon our house in the deep bosom of the ocean buried. ") * 4


@pytest.fixture
def gpt_folder(tmp_path, gpt_tokenizer):
    """A tiny random GPT saved as a checkpoint, its context long enough for the probe set's repeats
    (BOS + 2 × 50 random tokens)."""
    from toyviz.models.checkpoint import save_folder
    from toyviz.models.gpt import ToyGPT
    from conftest import tiny_gpt_config

    torch.manual_seed(0)
    model = ToyGPT(tiny_gpt_config(gpt_tokenizer.vocab_size, context=128)).eval()
    save_folder(model, {"tokenizer": gpt_tokenizer}, tmp_path / "gpt", dtype=torch.float32)
    return tmp_path / "gpt"


def test_evaluate_main_scores_a_gpt_on_its_held_out_plays(gpt_folder, monkeypatch, capsys):
    """`python -m toyviz.evaluate gpt --checkpoint DIR` on in-memory plays (no download): its bits per
    character are the plain forward's loss on the held-out plays, recomputed here window by window."""
    import json as json_
    from toyviz.training import evaluate
    from toyviz.data import shakespeare
    from conftest import ENGLISH

    monkeypatch.setattr(shakespeare, "load_works", lambda fetch=True: {
        "hamlet": HELD_OUT, "tempest": ENGLISH, "twelfth_night": HELD_OUT[:150]})
    result = evaluate.main(["gpt", "--checkpoint", str(gpt_folder), "--device", "cpu"])
    assert json_.loads(capsys.readouterr().out.strip().splitlines()[-1]) == json_.loads(json_.dumps(result))

    gpt = toyviz.load(str(gpt_folder), device="cpu")
    text = shakespeare.split(shakespeare.load_works())[1]              # Hamlet, a blank line, Twelfth Night
    ids = gpt.tokenizer.encode(text)
    context, nats = gpt.config.context, 0.0
    for start in range(0, len(ids), context):                          # each window read after a BOS
        y = torch.tensor(ids[start: start + context])
        x = torch.tensor([gpt.bos, *ids[start: start + len(y) - 1]])
        with torch.no_grad():
            nats += float(torch.nn.functional.cross_entropy(gpt.model(x[None])[0][0], y, reduction="sum"))
    assert result["val_tokens"] == len(ids) > context and result["val_chars"] == len(text)
    assert result["val_bits_per_char"] == pytest.approx(nats / len(text) / math.log(2), rel=1e-5)
    assert result["params"] == sum(p.numel() for p in gpt.model.parameters())
    assert set(result["files"]) == {f.name for f in gpt_folder.iterdir()}
    assert 0 <= result["induction_score_max"] <= 1 and result["in_context_drop"] > 0


def test_evaluate_main_scores_a_translator_on_its_test_books(tiny_checkpoints, tiny_translator, monkeypatch):
    """`python -m toyviz.evaluate translator --checkpoint DIR` on in-memory verses: only the test books
    are scored, with the greedy translations the translator gives here and sacreBLEU's own scores, and
    the held-out loss is the teacher-forced loss recomputed verse by verse."""
    import sacrebleu
    from toyviz.training import evaluate
    from toyviz.data import bible
    from toyviz.data.bible import TEST_BOOKS, VersePair

    verses = [("Gen", "In the beginning God created the heavens and the earth.",
               "En el principio crió Dios los cielos y la tierra."),
              (TEST_BOOKS[0], "And the earth was formless and empty.", "Y la tierra estaba desordenada y vacía."),
              ("Gen", "The earth was formless.", "La tierra estaba desordenada."),
              (TEST_BOOKS[1], "God created the earth.", "Dios crió la tierra.")]
    pairs = [VersePair(f"{book}.1.{i}", book, en, es) for i, (book, en, es) in enumerate(verses, 1)]
    monkeypatch.setattr(bible, "load_pairs", lambda source="web": pairs)
    result = evaluate.main(["translator", "--checkpoint", str(tiny_checkpoints["translator"]), "--device", "cpu",
                            "--beams", "1"])

    test = [p for p in pairs if p.book in TEST_BOOKS]
    hyps = [tiny_translator.translate(p.en, 1).text for p in test]
    assert result["test_pairs"] == 2 and [e["hyp"] for e in result["greedy_examples"]] == hyps
    assert result["greedy_chrf"] == round(sacrebleu.corpus_chrf(hyps, [[p.es for p in test]]).score, 2)
    assert result["greedy_bleu"] == round(sacrebleu.corpus_bleu(hyps, [[p.es for p in test]]).score, 2)
    src_tok, tgt_tok, model = tiny_translator.src_tok, tiny_translator.tgt_tok, tiny_translator.model
    nats, count = 0.0, 0
    for p in test:                                                     # EOS ends the source; BOS starts the target
        src = torch.tensor([src_tok.encode(p.en) + [src_tok.special("<|eos|>")]])
        target = tgt_tok.encode(p.es) + [tgt_tok.special("<|eos|>")]
        decoder_in = torch.tensor([[tgt_tok.special("<|bos|>")] + target[:-1]])
        with torch.no_grad():
            logits = model(src.to(tiny_translator.device), decoder_in.to(tiny_translator.device))[0].cpu()
        nats += float(torch.nn.functional.cross_entropy(logits.float(), torch.tensor(target), reduction="sum"))
        count += len(target)
    assert result["heldout_loss"] == pytest.approx(nats / count, abs=1e-4)
    assert result["train_sample_verses"] == 2 and set(result["known_verses_exact"]) == {"Gen.1.1", "Gen.1.3"}
