import torch

from toyviz.config import TranslatorConfig
from toyviz.translator import ToyTranslator, length_penalty


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


def test_length_penalty_grows_with_length():
    assert length_penalty(10, 0.6) > length_penalty(2, 0.6) > 0
    assert length_penalty(7, 0.0) == 1.0
