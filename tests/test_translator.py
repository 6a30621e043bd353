import pytest
import torch

from conftest import ENGLISH, SPANISH
from toyviz.api import BOS, TRANSLATOR_SPECIALS
from toyviz.models.config import TranslatorConfig
from toyviz.models.tokenizer import train_tokenizer
from toyviz.models.translator import ToyTranslator, length_penalty


def model(norm="pre"):
    torch.manual_seed(0)
    return ToyTranslator(TranslatorConfig(src_vocab_size=50, tgt_vocab_size=60, context=24, n_encoder_layer=2,
                                          n_decoder_layer=2, n_head=4, d_model=32, d_ff=64, norm=norm)).eval()


def test_trace_matches_forward_and_parts_add_up():
    for norm in ("pre", "post"):
        m = model(norm)
        src, tgt = [5, 6, 7, 8, 9], [0, 11, 12, 13]
        plain = m(torch.tensor([src]), torch.tensor([tgt]))[0]
        tr = m.trace(src, tgt)
        assert torch.allclose(plain, tr.logits, atol=1e-5)
        assert tr.cross_attention.shape == (2, 4, 4, 5)
        assert tr.encoder_attention.shape == (2, 4, 5, 5)
        assert (sum(tr.decoder_parts.values()) - tr.decoder_final).abs().max() <= 1e-4
        assert (sum(tr.encoder_parts.values()) - tr.encoder_final).abs().max() <= 1e-4
        assert torch.all(tr.decoder_attention.triu(1) == 0)
        assert torch.allclose(tr.cross_attention.sum(-1), torch.ones(2, 4, 4), atol=1e-5)


def test_trace_names_its_tokens_and_what_the_last_position_predicts():
    m = model()
    src, tgt = [5, 6, 7], [0, 11, 12]
    name = lambda ids: [f"t{i}" for i in ids]
    tr = m.trace(src, tgt, src_pieces=name, tgt_pieces=name, next_id=1)
    assert tr.src_tokens == ["t5", "t6", "t7"] and tr.tgt_tokens == ["t0", "t11", "t12"]
    assert tr.output_tokens == ["t11", "t12", "t1"]                # the search's last choice (here EOS)
    cut = m.trace(src, tgt, tgt_pieces=name)                       # a search cut at max_len chose nothing there
    assert cut.output_tokens == ["t11", "t12", f"t{int(cut.logits[-1].argmax())}"]


def test_padding_does_not_change_the_translation_of_a_sentence():
    m = model()
    src = torch.tensor([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]])
    keep = torch.tensor([[True] * 3 + [False] * 2, [True] * 5])
    tgt = torch.tensor([[0, 11, 12], [0, 11, 12]])
    padded = m(src, tgt, keep)[0]
    alone = m(src[:1, :3], tgt[:1])[0]
    assert torch.allclose(padded, alone, atol=1e-5)


def test_greedy_equals_beam_one_and_beam_score_is_at_least_greedy():
    m = model()
    greedy = m.search([5, 6, 7, 8], bos=0, eos=1, beam=1, max_len=12)
    # greedy by hand: argmax at each step
    ids = [0]
    for _ in range(len(greedy.ids)):
        logits = m(torch.tensor([[5, 6, 7, 8]]), torch.tensor([ids]))[0, -1]
        ids.append(int(logits.argmax()))
    assert ids[1:] == greedy.ids
    beam = m.search([5, 6, 7, 8], bos=0, eos=1, beam=4, max_len=12)
    assert beam.score >= greedy.score - 1e-6


def test_cached_decoding_steps_give_the_full_pass_logits():
    """Feeding one token at a time through the cache (rows reordered as beam search does) changes nothing."""
    from toyviz.models.layers import KVCache
    for norm in ("pre", "post"):
        m = model(norm)
        src = torch.tensor([[5, 6, 7, 8, 9]])
        keep = torch.ones_like(src, dtype=torch.bool)
        memory = m.encode(src, keep)
        rows = torch.tensor([[0, 11, 12, 13, 14], [0, 21, 22, 23, 24]])
        full = m.decode(rows, memory.expand(2, -1, -1), keep.expand(2, -1))
        cache = KVCache()
        m.decode(rows[:1, :1], memory, keep, cache=cache)            # BOS, then the one row splits in two
        cache.select(torch.tensor([0, 0]))
        m.decode(rows[:, 1:2], memory.expand(2, -1, -1), keep.expand(2, -1), cache=cache)
        cache.select(torch.tensor([1, 0]))                           # the rows swap, as beams do
        assert cache.length == 2
        steps = m.decode(rows.flip(0)[:, 2:], memory.expand(2, -1, -1), keep.expand(2, -1), cache=cache)
        assert not torch.allclose(full[0, 2:], full[1, 2:], atol=1e-3)   # the rows really differ
        assert torch.allclose(steps, full.flip(0)[:, 2:], atol=1e-5)


def test_cached_search_finds_what_uncached_search_finds():
    for norm in ("pre", "post"):
        m = model(norm)
        for src in ([5, 6, 7, 8], [9, 3, 30, 2, 17, 4], [12]):
            for beam in (1, 3, 4):
                cached = m.search(src, bos=0, eos=1, beam=beam, max_len=16)
                plain = m.search(src, bos=0, eos=1, beam=beam, max_len=16, use_cache=False)
                assert cached.ids == plain.ids and cached.finished == plain.finished
                assert abs(cached.score - plain.score) < 1e-4


def test_length_penalty_grows_with_length():
    assert length_penalty(10, 0.6) > length_penalty(2, 0.6) > 0
    assert length_penalty(7, 0.0) == 1.0


def test_a_stack_view_is_what_the_model_computed_in_that_stack():
    """stack("encoder"/"decoder") hands the GPT figures the translator's own numbers, nothing recomputed."""
    import math
    import pytest
    m = model()
    src, tgt = [5, 6, 7, 8, 9], [0, 11, 12, 13]
    tr = m.trace(src, tgt)
    enc, dec = tr.stack("encoder"), tr.stack("decoder")
    assert enc.token_ids == src and dec.token_ids == tgt
    assert enc.attention is tr.encoder_attention and dec.attention is tr.decoder_attention
    assert not enc.causal and enc.attention.triu(1).sum() > 0          # the encoder reads both ways
    assert dec.causal and torch.all(dec.attention.triu(1) == 0)
    for view in (enc, dec):
        assert (view.n_layer, view.n_head) == (2, 4)
        assert torch.allclose(view.scores.softmax(-1) if not view.causal else
                              view.scores.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -math.inf).softmax(-1),
                              view.attention, atol=1e-5)                # probs are the softmax of its own scores
        assert set(view.layernorms) == {"block0.ln1", "block0.ln2", "block1.ln1", "block1.ln2", "ln_f"} | (
            {"block0.ln_cross", "block1.ln_cross"} if view.causal else set())
        assert view.residual_final is (tr.encoder_final if view is enc else tr.decoder_final)
        assert torch.allclose(sum(view.residual_parts.values()), view.residual_final, atol=1e-4)
        table = m.src_emb if view is enc else m.tgt_emb                  # the embed write = scaled table row + PE
        assert torch.allclose(view.residual_parts["embed"] - view.positional,
                              table.weight[view.token_ids] * math.sqrt(32), atol=1e-5)
    with pytest.raises(IndexError, match="no head 2.0"):
        enc.check_head(2, 0)
    with pytest.raises(ValueError, match="encoder"):
        tr.stack("cross")


def test_a_shared_vocabulary_is_one_embedding_table_that_survives_a_save(tmp_path):
    from toyviz.api import load
    from toyviz.models.checkpoint import save_folder
    torch.manual_seed(0)
    tok = train_tokenizer([ENGLISH, SPANISH], 400, TRANSLATOR_SPECIALS, "tiny-en-es")
    config = TranslatorConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, context=48,
                              n_encoder_layer=1, n_decoder_layer=1, n_head=2, d_model=16, d_ff=32, shared_vocab=True)
    model = ToyTranslator(config).eval()
    assert model.src_emb.weight is model.tgt_emb.weight is model.out.weight
    separate = ToyTranslator(TranslatorConfig(**{**vars(config), "shared_vocab": False}))
    assert sum(p.numel() for p in separate.parameters()) - sum(p.numel() for p in model.parameters()) == \
        tok.vocab_size * 16                                            # one table fewer
    save_folder(model, {"source": tok, "target": tok}, tmp_path / "shared", dtype=torch.float32)
    loaded = load(str(tmp_path / "shared"))
    assert loaded.model.src_emb.weight is loaded.model.tgt_emb.weight
    src, tgt = torch.tensor([[5, 6, 7]]), torch.tensor([[tok.special(BOS), 8]])
    assert torch.equal(loaded.model(src, tgt), model(src, tgt))


def test_a_shared_vocabulary_needs_one_size():
    with pytest.raises(ValueError, match="one size"):
        TranslatorConfig(src_vocab_size=300, tgt_vocab_size=400, shared_vocab=True)


def test_a_grown_source_vocabulary_starts_each_new_token_as_a_copy_of_its_model_row():
    m = model()
    src, tgt = torch.tensor([[5, 6, 7, 1]]), torch.tensor([[0, 11, 12]])
    before = m(src, tgt)
    m.grow_source(52, like=1)
    assert m.config.src_vocab_size == 52 and m.src_emb.weight.shape == (52, 32)
    assert torch.equal(m.src_emb.weight[50], m.src_emb.weight[1]) and torch.equal(m.src_emb.weight[51], m.src_emb.weight[1])
    assert torch.equal(m(src, tgt), before)                                   # the old tokens read as before
    assert torch.allclose(m(torch.tensor([[5, 6, 7, 50]]), tgt), before)      # a new token reads as its model


def test_a_register_is_a_source_token_just_before_eos(tiny_translator, registered_translator):
    from toyviz import UserError

    mt = registered_translator
    assert mt.registers == ("today", "1909") and tiny_translator.registers == ("1909",)
    words = mt.src_tok.encode("the earth")
    today, bible, eos = (mt.src_tok.special(t) for t in ("<|today|>", "<|1909|>", "<|eos|>"))
    assert mt.encode("the earth")[0] == words + [today, eos]                  # today's Spanish by default
    assert mt.encode("the earth", "1909")[0] == words + [bible, eos]
    assert tiny_translator.encode("the earth", "1909")[0] == words + [eos]   # a 1909-only checkpoint: as before
    ids, dropped = mt.encode("the earth " * 100, "today")
    assert len(ids) == mt.config.context and ids[-2:] == [today, eos] and dropped > 0
    trace = mt.translate("the earth", register="1909").trace
    assert trace.src_tokens[-2:] == ["<|1909|>", "<|eos|>"]                  # a column of the cross-attention
    for wrong, checkpoint in (("today", tiny_translator), ("1492", mt)):
        with pytest.raises(UserError, match="register must be one of"):
            checkpoint.translate_text("the earth", register=wrong)
