"""Held-out evaluation: bits per character for the GPT, sacreBLEU and chrF for the translator (the
held-out Bible books in the 1909 register; the everyday dev set in today's Spanish, with the share of
its words a Spanish spelling dictionary accepts).

    toyviz evaluate gpt           # last line: one JSON object
    toyviz evaluate translator
"""
from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from toyviz.training.batches import translation_batch


def bits_per_char(total_nats: float, n_chars: int) -> float:
    """Total negative log-likelihood (nats) of a text → bits per character of that text.
    Comparable across tokenizers because it counts characters, not tokens."""
    return total_nats / n_chars / math.log(2)


@torch.no_grad()
def gpt_nats(model, ids: torch.Tensor, bos: int, context: int | None = None, batch: int = 16) -> float:
    """Total nats of every token in ids (1-D), read in non-overlapping windows of `context`
    tokens, each window fed as BOS + all but its last token, as the model saw text in training.
    `context` may exceed the model's own (length-extrapolation tests)."""
    model.eval()
    device = next(model.parameters()).device
    windows = ids.split(context or model.config.context)
    total = 0.0
    for i in range(0, len(windows), batch):
        chunk = windows[i: i + batch]
        T = max(len(w) for w in chunk)
        x = torch.full((len(chunk), T), bos, dtype=torch.long)
        y = torch.full((len(chunk), T), -1, dtype=torch.long)
        for row, w in enumerate(chunk):
            x[row, 1: len(w)] = w[:-1]
            y[row, : len(w)] = w
        logits, _ = model(x.to(device))
        total += F.cross_entropy(logits.flatten(0, 1).float(), y.flatten().to(device),
                                 ignore_index=-1, reduction="sum").item()
    return total


def evaluate_gpt(gpt, val_text: str, context: int | None = None) -> dict:
    ids = torch.tensor(gpt.tokenizer.encode(val_text), dtype=torch.long)
    nats = gpt_nats(gpt.model, ids, gpt.bos, context)
    return {"val_loss_per_token": nats / len(ids), "val_bits_per_char": bits_per_char(nats, len(val_text)),
            "val_tokens": len(ids), "val_chars": len(val_text)}


@torch.no_grad()
def in_context_drop(model, repeats: list[list[int]], period: int) -> float:
    """Mean loss on the second copy of BOS + r + r over the mean loss on the first copy (r random
    tokens): near 1 without in-context copying, near 0 when an induction circuit predicts the repeat."""
    model.eval()
    device = next(model.parameters()).device
    ids = torch.tensor(repeats, dtype=torch.long, device=device)            # (N, 1 + 2P)
    logits, _ = model(ids[:, :-1])
    losses = F.cross_entropy(logits.transpose(1, 2).float(), ids[:, 1:], reduction="none")   # (N, 2P)
    return (losses[:, period:].mean() / losses[:, :period].mean()).item()


def head_facts(gpt, val_text: str) -> dict:
    """The strongest induction and previous-token heads over the probe set, and the in-context drop.
    The previous-token score is measured on the held-out text (as the Model tab's timeline) and on the
    repeated random sequences, where the induction head reads it: on text a previous-token head also
    looks at the first token and at earlier words, so the two differ."""
    from toyviz.interpret.heads import make_probe_set, pattern_scores, probe_scores

    probes = make_probe_set(gpt.bos, gpt.model.config.vocab_size, gpt.tokenizer.encode(val_text))
    scores = probe_scores(gpt.model, probes)
    on_repeats = np.mean([[[pattern_scores(a, ids)["previous-token"] for a in layer]
                           for layer in gpt.model.trace(ids).attention] for ids in probes.repeats], axis=0)
    return {"induction_score_max": max(map(max, scores["induction"])),
            "previous_token_score_max": max(map(max, scores["previous-token"])),
            "previous_token_score_max_on_repeats": round(float(on_repeats.max()), 4),
            "in_context_drop": in_context_drop(gpt.model, probes.repeats, probes.period)}


def encode_pair(translator, en: str, es: str, register: str = "1909") -> tuple[list[int], list[int]]:
    """A pair as the translator trains on it: source ids + the register's token + EOS, target ids (BOS and
    EOS added by the batch)."""
    return translator.encode(en, register)[0], translator.tgt_tok.encode(es)


@torch.no_grad()
def teacher_forced_loss(model, rows, specials: dict, batch: int = 64) -> float:
    """Mean cross-entropy (nats) per target token of (src ids, tgt ids) rows, each target fed its own
    prefix: the held-out loss in which the translator's BLEU is close to a straight line."""
    model.eval()
    total, count = 0.0, 0
    device = next(model.parameters()).device
    for i in range(0, len(rows), batch):
        src, tgt_in, tgt_out = (t.to(device) for t in translation_batch(rows[i: i + batch], **specials))
        logits = model(src, tgt_in, src != specials["src_pad"])
        total += F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=-1,
                                 reduction="sum").item()
        count += int((tgt_out != -1).sum())
    return total / count


def translator_specials(translator) -> dict:
    src, tgt = translator.src_tok, translator.tgt_tok
    return {"src_pad": src.special("<|pad|>"), "tgt_pad": tgt.special("<|pad|>"), "bos": tgt.special("<|bos|>"),
            "eos": tgt.special("<|eos|>")}


def evaluate_translator(translator, pairs, beams=(1, 4)) -> dict:
    """The held-out Bible books, in the 1909 register."""
    import sacrebleu

    refs = [p.es for p in pairs]
    rows = [encode_pair(translator, p.en, p.es) for p in pairs]
    result = {"test_pairs": len(pairs),
              "heldout_loss": round(teacher_forced_loss(translator.model, rows, translator_specials(translator)), 4)}
    for beam in beams:
        start = time.time()
        hyps = [translator.translate_text(p.en, beam=beam, register="1909") for p in pairs]
        name = "greedy" if beam == 1 else f"beam{beam}"
        result[f"{name}_bleu"] = round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2)
        result[f"{name}_chrf"] = round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2)
        result[f"{name}_seconds"] = round(time.time() - start, 1)
        result[f"{name}_examples"] = [{"en": p.en, "ref": p.es, "hyp": h} for p, h in list(zip(pairs, hyps))[:3]]
    return result


def evaluate_everyday(translator, pairs, beam: int = 4) -> dict:
    """The everyday dev set (sentences a class types, Spanish written by hand) in the translator's default
    register: chrF, BLEU, and the share of output words hunspell's es_ES dictionary accepts."""
    import sacrebleu

    hyps = [translator.translate_text(p.en, beam=beam) for p in pairs]
    refs = [p.es for p in pairs]
    return {"everyday_pairs": len(pairs), "everyday_register": translator.registers[0],
            f"everyday_beam{beam}_chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
            f"everyday_beam{beam}_bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
            f"everyday_beam{beam}_spelled": round(spelled_share(hyps), 4),
            "everyday_examples": [{"en": p.en, "ref": p.es, "hyp": h} for p, h in list(zip(pairs, hyps))[:5]]}


WORD = re.compile(r"[^\W\d_]+")


def spelled_share(texts: list[str]) -> float:
    """The share of the words in `texts` that `hunspell -d es_ES` (Debian's hunspell-es: inflections
    included) accepts: an invented word ("escolino") is rejected, a real one in the wrong place is not."""
    from toyviz.data.everyday import ensure_packages

    ensure_packages()
    words = [w for text in texts for w in WORD.findall(text)]
    if not words:
        return 1.0
    # one word a line: -l prints each rejected word once per line it is on
    done = subprocess.run(["hunspell", "-d", "es_ES", "-l"], input="\n".join(words) + "\n",
                          capture_output=True, text=True, check=True)
    return 1 - len(done.stdout.split()) / len(words)


TRAINING_SAMPLE = 300                  # training verses the translator should know well
KNOWN_VERSES = ("Gen.1.1", "Gen.1.3")  # verses a student tries first: their 1909 text, exactly


def training_sample_facts(translator, train_pairs, beam: int = 4) -> dict:
    """How well the translator knows its own data: chrF and BLEU on a fixed sample of TRAINING_SAMPLE
    training verses (evenly spaced through the books, so the sample never changes), and whether
    KNOWN_VERSES come out exactly as the 1909 text."""
    import sacrebleu

    step = max(1, len(train_pairs) // TRAINING_SAMPLE)
    sample = train_pairs[::step][:TRAINING_SAMPLE]
    hyps = [translator.translate_text(p.en, beam=beam, register="1909") for p in sample]
    refs = [p.es for p in sample]
    known = {p.ref: p for p in train_pairs if p.ref in KNOWN_VERSES}
    exact = {ref: translator.translate_text(p.en, beam=beam, register="1909") == p.es for ref, p in known.items()}
    return {"train_sample_verses": len(sample),
            f"train_sample_beam{beam}_chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
            f"train_sample_beam{beam}_bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
            "known_verses_exact": exact}


def checkpoint_facts(model, folder: Path) -> dict:
    folder = Path(folder)
    return {"params": sum(p.numel() for p in model.parameters()),
            "files": {f.name: f.stat().st_size for f in sorted(folder.iterdir()) if f.is_file()}}


def main(argv=None):
    from toyviz import load
    from toyviz.data import bible, everyday, shakespeare

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["gpt", "translator"], help="which model to evaluate")
    parser.add_argument("--checkpoint", help="folder or Hub repo id (default: the shipped one)")
    parser.add_argument("--device")
    parser.add_argument("--beams", default="1,4", help="translator: comma-separated beam widths")
    args = parser.parse_args(argv)
    model = load(args.checkpoint or args.kind, device=args.device)
    if args.kind == "gpt":
        _, val_text = shakespeare.split(shakespeare.load_works())
        result = evaluate_gpt(model, val_text) | head_facts(model, val_text)
    else:
        train, test = bible.split(bible.load_pairs())
        result = evaluate_translator(model, test, tuple(int(b) for b in args.beams.split(","))) | \
            training_sample_facts(model, train) | evaluate_everyday(model, everyday.dev_pairs())
    folder = Path(model.source)
    result.update(checkpoint_facts(model.model, folder))
    card = folder / "training.json"
    if card.is_file():
        facts = json.loads(card.read_text())
        result.update({k: facts[k] for k in ("command", "train_minutes", "device") if k in facts})
    print(json.dumps(result))
    return result

