"""The translator's recipe: Bible verses in one or more English wordings → the 1909 Spanish, and (with
--everyday N) N everyday sentences → today's Spanish written by a teacher (toyviz.data.everyday), each
pair tagged with its register by a source token; a BPE per side (or one shared), length-grouped
batches, label-smoothed cross-entropy, and a validation set held out of training."""
from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from toyviz.api import PAD, REGISTERS, TRANSLATOR_SPECIALS, Translator
from toyviz.data import everyday
from toyviz.data.tokens import cached_tokenizer
from toyviz.models.config import TranslatorConfig
from toyviz.models.tokenizer import Tokenizer
from toyviz.models.translator import ToyTranslator
from toyviz.training import evaluate
from toyviz.training.batches import VerseBatches, translation_batch
from toyviz.training.card import PUBLIC_DOMAIN
from toyviz.training.distributed import Distributed
from toyviz.training.run import Recipe, continued

VAL_VERSES = 500                       # the translator's validation verses (fewer for a tiny corpus)
VAL_EVERYDAY = 300                     # and everyday pairs (fewer for a tiny set)


@dataclass
class VerseData:
    """What the translator trained on: verse pairs, one per English wording (`sources`) of each verse."""
    train_chars: int
    train_pairs: int
    train_verses: int
    sources: list[str]
    everyday_pairs: int = 0

    def card_text(self) -> str:
        return self.bible_text() + (
            f" Today's Spanish: {self.everyday_pairs:,} everyday English sentences (templates filled with "
            "everyday words ranked by PyPI `wordfreq`, and the sentence-like English strings of the installed "
            "Debian packages' `es` message catalogues) translated at training time by Debian's rule-based "
            "`apertium-eng-spa` (GPL-2; its output is not committed): sequence-level distillation (Kim & Rush "
            "2016). Each pair is tagged with its register by a source token (`<|today|>`, `<|1909|>`) before EOS."
            if self.everyday_pairs else "")

    def licence(self) -> tuple[str, str]:
        """What the card's Data and Licence sections say of the training texts."""
        if not self.everyday_pairs:
            return "Texts are public domain.", PUBLIC_DOMAIN
        return ("The Bible texts are public domain; the everyday Spanish is apertium-eng-spa's output (GPL-2).",
                PUBLIC_DOMAIN.replace("Training texts", "Bible texts") + " The everyday pairs are made at training "
                "time by apertium-eng-spa (GPL-2, Universitat d'Alacant and others) and are not distributed.")

    def bible_text(self) -> str:
        return ("Bible verses: World English Bible (Debian `sword-text-web`)"
                + (" and the King James Version (Debian `sword-text-kjv`), one English wording drawn per "
                   "verse per epoch," if "kjv" in self.sources else "")
                + " → Reina-Valera 1909 (Debian `sword-text-sparv`), aligned on OSIS references. Held out "
                  "as the test set: Ruth, Jonah, Philippians, James (in every source).")


def translator_recipe(args, dist: Distributed) -> Recipe:
    from toyviz.data import bible

    sources = args.sources.split(",")
    unknown = set(sources) - set(bible.ENGLISH)
    if unknown:
        raise SystemExit(f"unknown --sources {sorted(unknown)}: choose from {', '.join(bible.ENGLISH)}")
    with dist.rank0_first():                            # one process fetches the corpus; the others read its cache
        by_source = {source: bible.split(bible.load_pairs(source)) for source in sources}
    train_pairs, test_pairs = by_source[sources[0]]     # the first source's English: validation and test
    english = [p.en for source in sources for p in by_source[source][0]]
    spanish = [p.es for p in train_pairs]
    with dist.rank0_first():
        name = "bible-en" + "".join(f"-{s}" for s in sources if s != "web")   # the WEB-only cache keeps its name
        if args.shared_vocab:                           # one BPE over both sides (see TranslatorConfig)
            src_tok = tgt_tok = cached_tokenizer(f"{name}-es", english + spanish, args.vocab, TRANSLATOR_SPECIALS)
        else:
            src_tok = cached_tokenizer(name, english, args.vocab, TRANSLATOR_SPECIALS)
            tgt_tok = cached_tokenizer("bible-es", spanish, args.vocab, TRANSLATOR_SPECIALS)
    if args.everyday:
        if args.shared_vocab:
            raise SystemExit("--everyday adds register tokens to the source vocabulary: use separate vocabularies")
        src_tok = with_registers(src_tok)
    eos_src, eos_tgt = src_tok.special("<|eos|>"), tgt_tok.special("<|eos|>")
    tail = {r: ([src_tok.special(token)] if args.everyday else []) + [eos_src] for r, token in REGISTERS.items()}

    def encoded(pair, register="1909"):
        s, t = src_tok.encode(pair.en) + tail[register], tgt_tok.encode(pair.es)
        return (s, t) if len(s) <= args.context and len(t) < args.context else None

    # validation: verses drawn at random, held out of training in every source
    gen = torch.Generator().manual_seed(args.seed)
    n_val = min(VAL_VERSES, len(train_pairs) // 10)
    val_refs = {train_pairs[i].ref for i in torch.randperm(len(train_pairs), generator=gen)[:n_val].tolist()}
    val = [row for row in map(encoded, (p for p in train_pairs if p.ref in val_refs)) if row]
    versions = collections.defaultdict(list)            # ref → its (src, tgt) rows, one per source
    for source in sources:
        for pair in by_source[source][0]:
            row = encoded(pair) if pair.ref not in val_refs else None
            if row:
                versions[pair.ref].append(row)
    everyday_rows = everyday_pairs(args, encoded)
    val += everyday_rows[0]
    batches = VerseBatches(list(versions.values()) + [[row] for row in everyday_rows[1]], args.batch, args.seed)
    torch.manual_seed(args.seed)
    if args.init:
        sample = "\n".join(p.en + "\n" + p.es for p in train_pairs[:500])
        model, earlier = continued(Path(args.init), "translator", {"source": src_tok, "target": tgt_tok}, sample,
                                   args.device)
        if model.config.src_vocab_size < src_tok.vocab_size:     # a 1909-only checkpoint meets the registers
            model.grow_source(src_tok.vocab_size, like=eos_src)
    else:
        config = TranslatorConfig(src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size,
                                  context=args.context, n_encoder_layer=args.layers, n_decoder_layer=args.layers,
                                  n_head=args.heads, d_model=args.d_model, d_ff=args.d_ff,
                                  feed_forward=args.feed_forward, norm=args.norm, dropout=args.dropout,
                                  shared_vocab=args.shared_vocab)
        model, earlier = ToyTranslator(config).to(args.device), None
    specials = {"src_pad": src_tok.special(PAD), "tgt_pad": tgt_tok.special(PAD), "bos": tgt_tok.special("<|bos|>"),
                "eos": eos_tgt}

    def loss_fn(step, wrapped):
        src, tgt_in, tgt_out = translation_batch(batches.at(step), **specials)
        src, tgt_in, tgt_out = (dist.shard(t).to(args.device) for t in (src, tgt_in, tgt_out))
        logits = wrapped(src, tgt_in, src != specials["src_pad"])
        return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=-1, label_smoothing=0.1)

    test = test_pairs if args.eval_limit is None else test_pairs[: args.eval_limit]
    dev = (everyday.dev_pairs() if args.everyday else [])[: args.eval_limit]

    def held_out(trained, out):
        translator = Translator(trained, src_tok, tgt_tok, str(out))
        return evaluate.evaluate_translator(translator, test, beams=(1, 4)) | (
            evaluate.evaluate_everyday(translator, dev) if args.everyday else {})

    rows = [row for v in versions.values() for row in v] + everyday_rows[1]
    sample = rows[:: max(1, len(rows) // 2000)]                    # both registers, as the batches draw them
    mean_tokens = sum(len(s) + len(t) for s, t in sample) / len(sample)
    return Recipe(
        kind="translator", model=model, tokenizers={"source": src_tok, "target": tgt_tok}, loss_fn=loss_fn,
        tokens_per_step=int(args.batch * mean_tokens),
        eval_fn=lambda: evaluate.teacher_forced_loss(model, val, specials),
        evaluate=held_out,
        data=VerseData(train_chars=sum(len(p.en) + len(p.es) for source in sources for p in by_source[source][0]),
                       train_pairs=sum(map(len, versions.values())), train_verses=len(versions), sources=sources,
                       everyday_pairs=len(everyday_rows[1])),
        earlier=earlier)


def with_registers(tok: Tokenizer) -> Tokenizer:
    """The source tokenizer with the register tokens after its specials: the same merges, so the same
    ids for every text, and a 1909-only checkpoint's tokenizer still matches it (--init)."""
    return Tokenizer(tok.name, tok.ranks, tok.specials + list(REGISTERS.values()), tok.pattern)


def everyday_pairs(args, encoded) -> tuple[list, list]:
    """--everyday N teacher-written pairs, encoded in today's register → (validation rows, training rows);
    the validation rows are the first pairs, the dev set's sentences never trained on."""
    if not args.everyday:
        return [], []
    dev = {p.en for p in everyday.dev_pairs()}
    pairs = [p for p in everyday.load_pairs(args.everyday, args.seed) if p.en not in dev]
    rows = [row for row in (encoded(p, "today") for p in pairs) if row]
    n_val = min(VAL_EVERYDAY, len(rows) // 10)
    return rows[:n_val], rows[n_val:]
