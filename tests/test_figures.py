"""Figure builders: shapes, titles, labels, masked cells, the numbers behind the pictures, payload."""
import html
import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from toyviz.interpret import readout
from toyviz.api import GPT
from toyviz.models.config import GPTConfig
from toyviz.app.figures import CELL_FONT, MASK_GREY, PROJECTOR_SCALE, cell_chars, cell_text, config_for, token_labels, visible
from toyviz.app.figures import attention, inside, layernorm, model as model_figs, positional, residual, sampling, tokens, translation
from toyviz.models.gpt import ToyGPT
from toyviz.interpret.heads import label_heads
from toyviz.models.layers import ENCODING_VARIANTS, sinusoidal_encoding
from toyviz.models.size import count_parameters

PROMPT = "To be, or not to be, to be"
LONG = "To be, or not to be, that is the question. Whether 'tis nobler in the mind to suffer " * 12


@pytest.fixture(scope="module")
def trace(tiny_gpt):
    return tiny_gpt.trace(PROMPT)


def gpt_with(tokenizer, **overrides) -> GPT:
    torch.manual_seed(0)
    config = GPTConfig(**{"vocab_size": tokenizer.vocab_size, "context": 64, "n_layer": 2, "n_head": 4,
                          "d_model": 32, **overrides})
    return GPT(ToyGPT(config).eval(), tokenizer)


@pytest.fixture(scope="module")
def big(gpt_tokenizer):
    """4 layers × 4 heads, 128 tokens: the size the payload budget is set for."""
    gpt = gpt_with(gpt_tokenizer, context=128, n_layer=4, n_head=4, d_model=64)
    tr = gpt.trace(LONG)
    assert len(tr.tokens) == 128
    return gpt, tr


def z(fig, i=0) -> np.ndarray:
    return np.asarray(fig.data[i].z, dtype=np.float64)


def title(fig) -> str:
    return fig.layout.title.text


# --- shared style -------------------------------------------------------------------------------

def cell_font(fig, heatmap_trace) -> float:
    """The size of the text in a heatmap's cells: its own, or the house template's for heatmaps."""
    return heatmap_trace.textfont.size or fig.layout.template.data.heatmap[0].textfont.size


def test_projector_mode_enlarges_text_and_height(trace):
    small, large = (attention.attention_head(trace, 1, 2, projector=p) for p in (False, True))
    assert large.layout.template.layout.font.size >= 1.6 * small.layout.template.layout.font.size
    assert large.layout.template.layout.xaxis.tickfont.size >= 1.6 * small.layout.template.layout.xaxis.tickfont.size
    assert large.layout.height > small.layout.height
    grid_small, grid_large = (attention.attention_grid(trace, projector=p) for p in (False, True))
    shown = lambda fig: fig.layout.annotations[0].font.size or fig.layout.template.layout.annotationdefaults.font.size
    assert shown(grid_large) >= 1.6 * shown(grid_small)                 # panel titles follow the template
    steps_small, steps_large = (inside.head_steps(trace, 0, 0, 2, projector=p) for p in (False, True))
    assert steps_small.layout.annotations[0].font.size is None            # not make_subplots' own 16 px
    assert shown(steps_large) >= 1.6 * shown(steps_small)
    assert PROJECTOR_SCALE >= 1.6


def test_download_config_and_filename(trace):
    fig = attention.attention_head(trace, 1, 2)
    name = fig.layout.meta["filename"]
    assert name.startswith("toyviz-attention-L1-H2")
    assert config_for(name)["toImageButtonOptions"] == {"format": "png", "scale": 2, "filename": name}


def test_token_labels_stay_unique_and_readable():
    labels = token_labels(["<|endoftext|>", " be", " be", "\n"])
    assert len(set(labels)) == 4
    assert labels[1] == "1: ␣be" and labels[3] == "3: ↵"
    assert labels[0] == "0: &lt;|endoftext|&gt;"          # plotly renders labels as HTML


# --- tokens -------------------------------------------------------------------------------------

def test_token_pieces_and_embedding_norms(trace):
    fig = tokens.token_pieces(trace, per_row=5)
    cells = np.asarray(fig.data[0].z)
    assert cells.shape == (math.ceil(len(trace.tokens) / 5), 5)
    ids = trace.token_ids
    same = [i for i in range(len(ids)) if ids[i] == ids[2]]
    assert len(same) > 1 and len({cells.flat[i] for i in same}) == 1       # same id, same colour
    fig = tokens.embedding_norms(trace)
    assert [b.name for b in fig.data] == ["token embedding", "positional", "sum (enters layer 0)"]
    assert np.allclose(fig.data[2].y, trace.residual_parts["embed"].norm(dim=-1).cpu().numpy(), atol=1e-5)


# --- positional ---------------------------------------------------------------------------------

@pytest.mark.parametrize("d_model", [64, 128, 256])
def test_buggy_encodings_are_less_distinguishable(d_model):
    score = {v: positional.distinguishability(sinusoidal_encoding(128, d_model, v)) for v in ENCODING_VARIANTS}
    assert score["correct"] > score["cos_overwrites_sin"] > score["no_d_model_scaling"]


def test_distinguishability_is_zero_for_repeated_positions():
    pe = torch.randn(5, 8)
    pe[3] = pe[1]
    assert positional.distinguishability(pe) == 0.0


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "rope", "none"])
def test_model_encoding_for_every_positional_kind(gpt_tokenizer, kind):
    gpt = gpt_with(gpt_tokenizer, positional=kind)
    tr = gpt.trace(PROMPT)
    fig = positional.model_encoding(tr, kind)
    T = len(tr.tokens)
    if kind in ("sinusoidal", "learned"):
        assert z(fig).shape == (T, 32) and list(fig.data[0].y) == token_labels(tr.tokens)
    elif kind == "rope":
        assert z(fig).shape == (T, gpt.config.d_head // 2) and "RoPE" in title(fig)
        steps = inside.head_steps(tr, 0, 0, 3)          # q and k are shown rotated, with the angles
        captions = [a.text for a in steps.layout.annotations]
        assert "rotated 3.00 … " in captions[1] and "rotated by position" in captions[2]
        assert tr.rope_angles.shape == (T, gpt.config.d_head // 2) and tr.rope_angles[3, 0] == 3.0
    else:
        assert not fig.data and "No positional" in title(fig)
    if kind != "rope":
        assert tr.rope_angles is None and "rotated" not in inside.head_steps(tr, 0, 0, 3).layout.annotations[1].text
    if kind == "learned":
        table = positional.model_encoding(tr, kind, table=gpt.model.pos_emb.weight)
        assert z(table).shape == (64, 32)


def test_similarity_curves_formula_and_spot_the_bug():
    pe = sinusoidal_encoding(40, 16)
    cos = positional.similarity_heatmap(pe, "cosine")
    assert np.allclose(np.diag(z(cos)), 1, atol=1e-5)
    dot = positional.similarity_heatmap(pe, "dot")
    assert np.allclose(z(dot), (pe @ pe.T).cpu().numpy(), atol=1e-4)
    assert len(positional.dimension_curves(pe, [0, 5]).data) == 2
    assert z(positional.formula_explorer(48, 30)).shape == (30, 48)
    big = positional.formula_explorer(512, 600)                   # pooled to what a browser can take
    assert z(big).shape[0] <= positional.MAX_ROWS and z(big).shape[1] <= positional.MAX_COLS
    bug = positional.spot_the_bug(128, 64)
    assert len(bug.data) == 6
    assert [a.text.split("<br>")[0] for a in bug.layout.annotations[:3]] == list(ENCODING_VARIANTS)


# --- attention ----------------------------------------------------------------------------------

def test_attention_head_masks_the_future_grey(trace):
    fig = attention.attention_head(trace, 1, 2)
    assert "layer 1, head 2" in title(fig)
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    labels = token_labels(trace.tokens)
    assert list(fig.data[0].x) == labels and list(fig.data[0].y) == labels
    values, T = z(fig), len(labels)
    future = np.triu(np.ones((T, T), dtype=bool), 1)
    assert np.isnan(values[future]).all() and np.isfinite(values[~future]).all()
    assert np.allclose(values[~future], trace.attention[1, 2].cpu().numpy()[~future], atol=1e-6)
    assert fig.layout.template.layout.plot_bgcolor == MASK_GREY and fig.data[0].hoverongaps is False
    assert fig.data[0].colorbar.title.text == "probability" and (fig.data[0].zmin, fig.data[0].zmax) == (0, 1)
    scores = attention.attention_head(trace, 1, 2, mode="scores")
    assert scores.data[0].colorbar.title.text.startswith("score") and scores.data[0].zmid == 0
    assert np.isnan(z(scores)[future]).all()
    assert np.allclose(z(scores)[~future], trace.scores[1, 2].cpu().numpy()[~future], atol=1e-5)
    with pytest.raises(ValueError):
        attention.attention_head(trace, 0, 0, mode="logits")
    with pytest.raises(IndexError):
        attention.attention_head(trace, 9, 0)


def test_attention_head_labels_every_query_and_key(tiny_gpt, trace, big):
    """Every token is named on both axes when the rows fit (plotly's automatic ticks named every other
    query row of the default prompt, in the PNG too); when they cannot, every k-th, evenly spaced."""
    medium = tiny_gpt.trace(LONG[:120])
    assert len(medium.tokens) >= 30
    for tr, projector in ((trace, False), (trace, True), (medium, False)):
        fig = attention.attention_head(tr, 1, 2, projector=projector)
        labels = token_labels(tr.tokens)
        assert list(fig.layout.yaxis.tickvals) == labels and list(fig.layout.xaxis.tickvals) == labels
        assert fig.layout.yaxis.tickmode == fig.layout.xaxis.tickmode == "array"
    _, tr = big                                          # 128 rows cannot all be named: every k-th, from 0
    fig = attention.attention_head(tr, 0, 0)
    labels, shown = token_labels(tr.tokens), list(fig.layout.yaxis.tickvals)
    k = labels.index(shown[1])
    assert 1 < k < 8 and shown == labels[::k]
    plot = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert k * plot / len(labels) >= fig.layout.template.layout.yaxis.tickfont.size      # labels do not overlap


def test_attention_grid_small_multiples(trace):
    labels = label_heads(trace)
    fig = attention.attention_grid(trace, labels=labels)
    assert len(fig.data) == 1                                   # one tiled heatmap, not L × H subplots
    assert len(fig.layout.annotations) == trace.n_layer * trace.n_head
    assert fig.layout.annotations[0].text.startswith("L0 H0 · ")
    T = len(trace.tokens)
    first_tile = z(fig)[:T, :T]
    expected = attention.attention_matrix(trace, 0, 0)
    assert np.allclose(first_tile, expected, equal_nan=True) and np.isnan(first_tile[0, 1])
    assert np.isnan(z(fig)[:T, T]).all()                        # the band between tiles
    # one quantity, one scale: every head's probabilities on the same 0..1 colour axis with one bar
    assert fig.data[0].coloraxis == "coloraxis" and (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0, 1)
    assert fig.layout.coloraxis.colorbar.title.text == "probs"


def grid_title_room(fig, n: int, L: int) -> tuple[float, float]:
    """(pixels of the band each layer-≥1 panel title stands in, pixels that title needs) in an attention grid."""
    plot = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    rows = z(fig).shape[0]
    band = (rows - L * n) / (L - 1)
    font = fig.layout.annotations[0].font.size or fig.layout.template.layout.annotationdefaults.font.size
    return band * plot / rows, 1.2 * font


@pytest.mark.parametrize("projector", [False, True])
def test_attention_grid_titles_sit_above_their_own_panel(trace, big, projector):
    """Every panel title stands on its own tile's top edge, inside a white band tall enough for its text,
    not on the panel above (it did: a band of n // 10 rows is ~14 px, the title ~16 px)."""
    for tr in (trace, big[1]):
        fig = attention.attention_grid(tr, projector=projector)
        n, L = min(len(tr.tokens), attention.GRID_CELLS), tr.n_layer
        band_px, needed_px = grid_title_room(fig, n, L)
        assert band_px >= needed_px, (band_px, needed_px)
        step = n + (z(fig).shape[0] - L * n) // (L - 1)
        for a in fig.layout.annotations:
            layer = int(a.text.split()[0][1:])
            assert a.yanchor == "bottom" and a.y == layer * step - 0.5      # on its own tile's top edge
            assert np.isnan(z(fig)[layer * step - 1, 0]) if layer else True   # with the band right above it


def test_overview_payload_and_build_time_at_128_tokens(big):
    _, tr = big
    fig = attention.attention_grid(tr)
    gap, rows = 32 // 10, z(fig).shape[0]
    band = (rows - 4 * 32) // 3                                          # layers: a band that holds a title
    assert rows == 4 * 32 + 3 * band and band >= gap
    assert z(fig).shape[1] == 4 * (32 + gap) - gap                        # 4 × 4 tiles pooled to 32 × 32
    assert isinstance(fig.data[0].z, np.ndarray) and fig.data[0].z.dtype == np.float32
    first = z(fig)[:32, :32]
    assert np.isnan(first[0, 1]) and np.isfinite(first[1, 0])     # blocks wholly in the future stay grey
    payload = len(fig.to_json())
    assert payload < 400_000, payload
    assert len(attention.attention_head(tr, 3, 3).to_json()) < 400_000


def test_head_step_numbers_agree_with_the_trace(trace):
    T = len(trace.tokens)
    for layer, head, query in [(0, 0, 0), (1, 2, 5), (1, 3, T - 1)]:
        s = inside.head_step_numbers(trace, layer, head, query)
        assert np.allclose(s["probs"], trace.attention[layer, head, query].cpu().numpy(), atol=1e-6)
        assert np.allclose(s["scaled"], trace.scores[layer, head, query].cpu().numpy(), atol=1e-5)
        assert np.allclose(s["scaled"], s["dot"] / math.sqrt(s["d_head"]), atol=1e-6)
        assert np.isinf(s["masked"][query + 1:]).all() and np.isfinite(s["masked"][: query + 1]).all()
        assert len(s["keys"]) == query + 1 and s["k"].shape == (query + 1, s["d_head"])
        assert np.allclose(s["out"], s["probs"] @ trace.v[layer, head].cpu().numpy(), atol=1e-5)
        assert np.allclose(s["write"], trace.head_writes[layer, head, query].cpu().numpy())
    fig = inside.head_steps(trace, 1, 2, 5)
    assert len(fig.data) == 10 and len(fig.layout.annotations) == 10
    assert "head 2" in title(fig)
    with pytest.raises(IndexError):
        inside.head_step_numbers(trace, 0, 0, T)


def test_head_steps_one_colour_scale_per_quantity(trace):
    """Steps 5–7 (q·k, ÷√d, masked) are one quantity on one shared, 0-centred scale with its bar, so ÷√d is
    paler; step 8's probabilities are on 0..1 with their own bar; masked keys are NaN (grey), not the most
    negative colour; the values are printed in the cells; no panel has a private, unexplained scale."""
    s = inside.head_step_numbers(trace, 1, 2, 5)
    fig = inside.head_steps(trace, 1, 2, 5)
    dot, scaled, masked, probs = fig.data[4:8]
    assert dot.coloraxis == scaled.coloraxis == masked.coloraxis == "coloraxis" and probs.coloraxis == "coloraxis2"
    assert all(d.coloraxis for d in fig.data)                       # every panel on a named, barred scale
    used = {d.coloraxis for d in fig.data}
    assert all(fig.layout[axis].colorbar.title.text and fig.layout[axis].showscale is not False for axis in used)
    scores = fig.layout.coloraxis
    assert scores.colorbar.title.text == "score" and scores.cmin == -scores.cmax
    assert scores.cmax == pytest.approx(np.abs(s["dot"]).max(), rel=1e-6)        # the range of all three
    assert fig.layout.coloraxis2.cmin == 0 and fig.layout.coloraxis2.cmax == 1
    assert fig.layout.coloraxis2.colorbar.title.text == "probability"
    assert "Blues" not in str(scores.colorscale) and fig.layout.coloraxis2.colorscale != scores.colorscale
    # ÷√d on the same range: its largest colour is 1/√d of the dot products'
    d = s["d_head"]
    assert np.abs(z(fig, 5)).max() == pytest.approx(np.abs(z(fig, 4)).max() / math.sqrt(d), rel=1e-5)
    assert f"√{d} = ÷ {math.sqrt(d):.3g}" in fig.layout.annotations[5].text
    # masked keys: NaN in steps 7 and 8 (drawn grey), every key scored in steps 5 and 6
    assert np.isnan(z(fig, 6)[0, 6:]).all() and np.isnan(z(fig, 7)[0, 6:]).all()
    assert np.isfinite(z(fig, 6)[0, :6]).all() and np.isfinite(z(fig, 4)).all() and np.isfinite(z(fig, 5)).all()
    assert fig.layout.template.layout.plot_bgcolor == MASK_GREY
    # values in the cells (masked ones empty), CELL_FONT
    assert probs.texttemplate == "%{text}" and probs.text[0][0] == f"{s['probs'][0]:.2f}" and probs.text[0][6] == ""
    assert all(t.texttemplate for t in (dot, scaled, masked)) and cell_font(fig, dot) == CELL_FONT
    assert float(masked.text[0][0]) == pytest.approx(s["masked"][0], abs=0.05 * np.nanmax(np.abs(z(fig, 6))))


def test_head_steps_captions_fit_over_their_panels(gpt_tokenizer):
    """Half-width captions (steps 9, 10) are centred over half the figure: longer than HALF_CAPTION
    characters they ran past its left edge on a projector (RoPE's and an ablated head's captions did); there steps
    1–4 stand in one row, their captions within QUARTER_CAPTION."""
    gpt = gpt_with(gpt_tokenizer, positional="rope")
    tr = gpt.trace("To be, or not to be, that is the question", ablate=[(1, 2)])
    fig = inside.head_steps(tr, 1, 2, len(tr.tokens) - 1, projector=True)
    captions = [a.text for a in fig.layout.annotations]
    assert "rotated" in captions[1] and "rotated" in captions[2] and "ablated" in captions[8]
    for i in (0, 1, 2, 3):
        assert len(captions[i]) <= inside.QUARTER_CAPTION, captions[i]
    for i in (8, 9):
        assert len(captions[i]) <= inside.HALF_CAPTION, captions[i]


def test_head_steps_leave_cell_text_to_the_hover_when_it_cannot_fit(big):
    _, tr = big
    fig = inside.head_steps(tr, 0, 0, 100)
    assert all(d.texttemplate is None for d in fig.data[4:8])               # 128 keys: hover only
    assert all("%{z" in d.hovertemplate for d in fig.data)
    small = inside.head_steps(tr, 0, 0, 5)
    assert small.data[7].texttemplate is None                                # the key count decides, not the query


def test_ablation_comparison(tiny_gpt, trace):
    ablated = tiny_gpt.trace(PROMPT, ablate=[(0, 1), (1, 3)])
    fig = attention.ablation_comparison(trace, ablated, tiny_gpt.tokenizer.piece, n=8)
    assert len(fig.data) == 2 and len(fig.data[0].y) == 8
    assert len(set(fig.data[0].y)) == 8
    assert "0.1" in title(fig) and "1.3" in title(fig)
    assert fig.data[0].x.max() <= 1
    assert [d.name for d in fig.data] == ["all heads on", "heads 0.1 (zero), 1.3 (zero) switched off"]
    # nothing switched off: only the model's prediction, no "without any head" bar that reads as all removed
    untouched = attention.ablation_comparison(trace, tiny_gpt.trace(PROMPT), tiny_gpt.tokenizer.piece)
    assert len(untouched.data) == 1 and untouched.data[0].name == "the model's prediction"
    assert "tick heads" in title(untouched) and attention.ABLATE_CONTROL in title(untouched)
    assert "none" not in title(untouched) and "without" not in str(untouched.to_dict())


def test_masked_vs_unmasked(tiny_gpt, trace):
    fig = inside.masked_vs_unmasked(trace, tiny_gpt.trace(PROMPT, causal=False), 0, 1)
    assert "layer 0, head 1" in title(fig)
    assert np.isnan(z(fig, 0)).any() and not np.isnan(z(fig, 1)).any()
    assert np.allclose(np.nansum(z(fig, 1), axis=1), 1, atol=1e-5)
    assert fig.data[0].coloraxis == fig.data[1].coloraxis == "coloraxis"      # both panels on one 0..1 scale
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0, 1) and fig.layout.coloraxis.colorbar.title.text


# --- layernorm ----------------------------------------------------------------------------------

def test_layernorm_figures(trace):
    names, T = list(trace.layernorms), len(trace.tokens)
    fig = layernorm.layernorm_heatmaps(trace)
    assert len(fig.data) == 4 and all(np.asarray(d.z).shape == (len(names), T) for d in fig.data)
    assert np.allclose(z(fig, 1)[0], trace.layernorms[names[0]]["std"].cpu().numpy(), atol=1e-4)
    assert len(layernorm.layernorm_curves(trace).data) == 3
    assert len(layernorm.layernorm_curves(trace, position=2).data) == 6
    params = layernorm.layernorm_parameters(trace, "ln_f")
    assert len(params.data) == 2 and len(params.data[0].y) == 32
    hist = layernorm.layernorm_histogram(trace, "block1.ln1", 3)
    normalised = np.asarray(hist.data[1].x)
    assert abs(normalised.mean()) < 1e-4 and abs(normalised.std() - 1) < 1e-2
    with pytest.raises(KeyError):
        layernorm.layernorm_parameters(trace, "block9.ln1")


# --- residual stream ----------------------------------------------------------------------------

@pytest.mark.parametrize("norm", ["pre", "post"])
def test_residual_shares_sum_to_one_and_attribution_is_exact(gpt_tokenizer, norm):
    gpt = gpt_with(gpt_tokenizer, norm=norm)
    with torch.no_grad():              # W_O biases that are not zero: the "block{i}.attn.bias" terms must carry them
        for block in gpt.model.blocks:
            block.attn.o.bias.normal_(0, 0.5)
    tr = gpt.trace(PROMPT)
    shares = residual.write_shares(tr)
    assert list(shares) == list(tr.residual_parts)
    assert np.allclose(np.sum(list(shares.values()), axis=0), 1, atol=1e-4)
    fig = residual.residual_shares(tr)
    assert np.allclose(np.nansum(z(fig), axis=0), 1, atol=1e-4)
    for position in (0, 4, -1):
        parts = readout.direct_logit_attribution(tr, gpt.model, position)
        logit = tr.logits[position].max().item()
        assert sum(parts.values()) == pytest.approx(logit, abs=1e-3)
        assert f"L1 H{gpt.config.n_head - 1}" in parts and "block1.mlp" in parts and "ln_f.bias" in parts
    names, top, prob = readout.logit_lens_top(tr, gpt.model)
    assert names == ["embed", "after layer 0", "after layer 1"]
    assert (top[-1] == tr.logits.argmax(-1).cpu().numpy()).all()
    assert np.allclose(prob[-1], tr.logits.softmax(-1).max(-1).values.cpu().numpy(), atol=1e-5)


def test_residual_figures(tiny_gpt, trace):
    fig = residual.residual_norms(trace, 3)
    running = np.asarray(fig.data[1].y)
    assert running[-1] == pytest.approx(trace.residual_final[3].norm().item(), rel=1e-4)
    top = readout.logit_lens_top(trace, tiny_gpt.model)
    lens = residual.logit_lens(trace, top, tiny_gpt.tokenizer.piece)
    assert z(lens).shape == (trace.n_layer + 1, len(trace.tokens))
    cell = lens.data[0]                                # readable cells: a fixed font, no text wider than its cell
    fits = lambda fig, columns, projector: all(len(html.unescape(t)) <= cell_chars(columns, projector)
                                               for row in fig.data[0].text for t in row)
    assert cell_font(lens, cell) == CELL_FONT and fits(lens, len(trace.tokens), False)
    projected = residual.logit_lens(trace, top, tiny_gpt.tokenizer.piece, projector=True)
    assert cell_font(projected, projected.data[0]) > CELL_FONT and fits(projected, len(trace.tokens), True)
    assert cell_chars(22, True) < cell_chars(22, False) and cell_chars(400, False) == 0


@pytest.mark.parametrize("T, projector, rows_at_most, down", [
    (30, True, 64, True), (30, False, 64, True), (8, True, 64, False), (8, False, 64, False), (30, True, 20, False)])
def test_the_logit_lens_turns_its_positions_down_the_rows_where_a_cell_could_not_show_a_token(
        tiny_gpt, monkeypatch, T, projector, rows_at_most, down):
    """At 1280×720 in projector mode 25 positions across left ~2 characters a cell ("␣…"); down the rows,
    a cell is a fifth of the width. A prompt too long for a page keeps them across (the hover names them)."""
    monkeypatch.setattr(residual, "ROWS_AT_MOST", rows_at_most)
    trace = tiny_gpt.model.trace(list(range(1, T + 1)), pieces=tiny_gpt.tokenizer.pieces)
    rows = trace.n_layer + 1
    lens = residual.logit_lens(trace, readout.logit_lens_top(trace, tiny_gpt.model), tiny_gpt.tokenizer.piece,
                               projector=projector)
    assert z(lens).shape == ((T, rows) if down else (rows, T))
    assert (lens.data[0].x[0] == "embed") == down and (lens.data[0].y[0] == "embed") != down
    if down:
        assert all(len(html.unescape(t)) <= cell_chars(rows, projector) for row in lens.data[0].text for t in row)
        assert z(lens)[:, -1].tolist() == pytest.approx(trace.logits.softmax(-1).max(-1).values.tolist(), abs=1e-5)
    dla = residual.logit_attribution(trace, readout.direct_logit_attribution(trace, tiny_gpt.model, minus_mean=True),
                                    tiny_gpt.tokenizer.piece)
    assert sum(dla.data[0].y) == pytest.approx((trace.logits[-1].max() - trace.logits[-1].mean()).item(), abs=1e-3)
    assert "logit − mean logit" in title(dla) and "logit − mean logit" in dla.layout.yaxis.title.text
    assert len(set(dla.data[0].x)) == len(dla.data[0].x)


# --- sampling -----------------------------------------------------------------------------------

def test_sampling_bars_follow_the_settings(tiny_gpt):
    logits = torch.randn(tiny_gpt.tokenizer.vocab_size)
    piece = tiny_gpt.tokenizer.piece
    greedy = sampling.next_token_bars(logits, piece, temperature=0)
    assert (np.asarray(greedy.data[0].x) > 0).sum() == 1 and "1 candidate" in title(greedy)
    top3 = sampling.next_token_bars(logits, piece, top_k=3, n=10)
    assert (np.asarray(top3.data[0].x) > 0).sum() == 3 and len(top3.data[0].y) == 10
    assert np.allclose(top3.data[1].x, np.sort(torch.softmax(logits, -1).cpu().numpy())[::-1][:10], atol=1e-6)
    steps = [(" to", 0.5), (" be", 0.9), (",", 0.1)]
    gen = sampling.generated_tokens(steps, per_row=2)
    assert np.asarray(gen.data[0].z).shape == (2, 2) and gen.data[0].z[0][1] == pytest.approx(0.9)


# --- translation --------------------------------------------------------------------------------

def test_translation_figures(tiny_translator):
    tr = tiny_translator.translate("To be or not to be").trace
    S, T = len(tr.src_tokens), len(tr.tgt_tokens)
    cross = translation.translation_attention(tr, "cross", 1, 2)
    assert z(cross).shape == (T, S) and not np.isnan(z(cross)).any()
    assert np.allclose(z(cross), tr.cross_attention[1, 2].cpu().numpy(), atol=1e-6)
    mean = translation.translation_attention(tr, "cross")
    assert np.allclose(z(mean), tr.cross_attention.mean((0, 1)).cpu().numpy(), atol=1e-6)
    assert "mean over layers" in title(mean)
    enc = translation.translation_attention(tr, "encoder", 0, 0)
    assert z(enc).shape == (S, S) and not np.isnan(z(enc)).any()
    dec = translation.translation_attention(tr, "decoder", 0, 0)
    if T > 1:
        assert np.isnan(z(dec)[0, 1])
    cand = translation.decoding_candidates(tr, tiny_translator.tgt_tok.piece, n=3)
    assert z(cand).shape == (T, 3)
    assert np.allclose(z(cand)[:, 0], tr.logits.softmax(-1).max(-1).values.cpu().numpy(), atol=1e-6)
    with pytest.raises(ValueError):
        translation.translation_attention(tr, "self")


# --- model --------------------------------------------------------------------------------------

def test_model_figures():
    counts = count_parameters(GPTConfig(vocab_size=512, context=64, n_layer=2, n_head=2, d_model=32))
    fig = model_figs.parameter_bars(counts)
    assert "total" not in fig.data[0].x and f"{counts['total']:,}" in title(fig)
    mem = model_figs.attention_memory(4, batch=2, lengths=[128, 256, 512], context=256)
    x, y = np.asarray(mem.data[0].x), np.asarray(mem.data[0].y)
    assert y[0] == 2 * 4 * 128 ** 2 * 4 and np.allclose(np.diff(np.log(y)) / np.diff(np.log(x)), 2)
    assert mem.layout.xaxis.type == "log" and mem.layout.yaxis.type == "log"
    line, = mem.layout.shapes            # at T=256: a shape in data units, its label in log10 units (plotly.js)
    assert line.x0 == line.x1 == 256 and mem.layout.annotations[0].x == np.log10(256)
    history = [{"step": s, "tokens": 1000 * s, "train_loss": 5 / (s + 1), **({"val_loss": 6 / (s + 1)} if s % 5 == 0 else {})}
               for s in range(20)]
    loss = model_figs.loss_curve(history, x="tokens")
    assert [d.name for d in loss.data] == ["train", "validation"] and len(loss.data[1].x) == 4
    assert len(model_figs.loss_curve([{"step": 1, "train_loss": 3.0}]).data) == 1
    continued = history + [{"step": s, "tokens": 1000 * s, "train_loss": 0.2, "copy_loss": 8 - s / 4} for s in range(20, 30)]
    loss = model_figs.loss_curve(continued)                # a run continued with copy batches (train --init)
    assert [d.name for d in loss.data] == ["train", "validation", "repeated random tokens"]
    assert list(loss.data[2].x) == list(range(20, 30)) and loss.data[2].y[0] == 3.0


def test_parameter_bars_draw_whatever_they_are_given():
    """The calculator's chart read 'Error' for RoPE, d_model 10 and 12 heads (the config itself refuses: heads
    clamp to 10, so the head size is 1, and RoPE needs an even one). The figure now never raises on its input:
    empty or all-zero counts give a figure that says so; a rope model's zero position parameters are a 0% bar;
    the tallest bar's share is not clipped at the top."""
    for nothing in (None, {}, {"total": 0}, {"attention": 0, "total": 0}):
        fig = model_figs.parameter_bars(nothing)
        assert not fig.data and "No parameters" in fig.layout.annotations[0].text
        assert fig.layout.meta["filename"] == "toyviz-parameters"
    counts = count_parameters(GPTConfig(vocab_size=64, context=16, n_layer=1, n_head=6, d_model=12, positional="rope"))
    fig = model_figs.parameter_bars(counts)
    bars = dict(zip(fig.data[0].x, fig.data[0].text))
    assert bars["position_embedding"] == "0.0%" and f"{counts['total']:,}" in title(fig)
    assert fig.data[0].cliponaxis is False and fig.layout.yaxis.range[1] >= 1.1 * max(fig.data[0].y)


def test_the_training_timeline_draws_every_heads_probe_scores_on_the_loss_curves_axis():
    """Head 1.0's induction score jumps at step 30 (its birth); the figure shows it in colour, every
    other head in grey, on the loss curve's time axis."""
    def heads(step):
        induction = [[0.02, 0.03], [0.9 if step >= 30 else 0.05, 0.04]]
        return {"induction": induction, "previous-token": [[0.7, 0.1], [0.1, 0.2]], "first-token": [[0] * 2] * 2,
                "self": [[0] * 2] * 2}
    history = [{"step": s, "tokens": 10 * s, "train_loss": 5 - s / 20, **({"heads": heads(s)} if s % 10 == 0 else {})}
               for s in range(1, 51)]
    fig = model_figs.loss_curve(history)
    induction = [d for d in fig.data if d.name.endswith("(induction)")]
    assert len(fig.data) == 1 + 2 * 4 and len(induction) == 4
    born, = [d for d in induction if d.showlegend]
    assert born.name == "head 1.0 (induction)" and list(born.y) == pytest.approx([0.05, 0.05, 0.9, 0.9, 0.9])
    assert list(born.x) == [10, 20, 30, 40, 50] and born.xaxis == "x2"
    assert fig.layout.xaxis.matches == fig.layout.xaxis2.matches == "x3"                  # one time axis
    assert [d.name for d in fig.data if d.showlegend and "previous" in d.name] == ["head 0.0 (previous-token)"]


def test_every_builder_names_its_download(tiny_gpt, tiny_translator, trace):
    tt = tiny_translator.translate("To be").trace
    piece = tiny_gpt.tokenizer.piece
    figs = [tokens.token_pieces(trace), tokens.embedding_norms(trace), positional.model_encoding(trace, "sinusoidal"),
            positional.spot_the_bug(64, 32), attention.attention_grid(trace), inside.head_steps(trace, 0, 0, 2),
            layernorm.layernorm_heatmaps(trace), residual.residual_shares(trace),
            residual.logit_lens(trace, readout.logit_lens_top(trace, tiny_gpt.model), piece),
            sampling.next_token_bars(trace.logits[-1], piece),
            translation.translation_attention(tt), model_figs.attention_memory(4)]
    for fig in figs:
        assert isinstance(fig, go.Figure) and fig.layout.meta["filename"].startswith("toyviz-")
        assert fig.layout.title.text


def test_token_grids_hold_fewer_cells_a_line_on_a_projector(tiny_gpt, trace):
    """The projector's larger font needs wider cells: each grid of tokens puts fewer to a line there."""
    from toyviz.interpret import explain
    from toyviz.app.figures import tokens_per_row
    from toyviz.app.figures.explain import saliency_figure
    wide, narrow = tokens_per_row(False), tokens_per_row(True)
    assert narrow < wide
    saliency = explain.why(tiny_gpt, PROMPT).saliency
    steps = [(piece, 0.5) for piece in trace.tokens]
    for projector, per_row in ((False, wide), (True, narrow)):
        for fig in (tokens.token_pieces(trace, projector=projector),
                    sampling.generated_tokens(steps, projector=projector),
                    saliency_figure(saliency, projector=projector)):
            assert np.asarray(fig.data[0].z).shape[1] == per_row


def test_unreadable_bytes_get_a_readable_placeholder_and_cut_cells_keep_entities_whole():
    assert visible("\x15a\x1d") == "^Ua^]" and visible("\x7f") == "^?" and visible("\u200b") == "�"
    assert visible(" \n\t") == "␣↵⇥" and visible("<|endoftext|>") == "&lt;|endoftext|&gt;"
    assert cell_text(visible("<|endoftext|>"), 4) == "&lt;|e…" and cell_text("␣the", 4) == "␣the"
    assert cell_text("␣make", 1) == ""


def test_no_figure_builder_is_given_a_model():
    """Figures draw what a trace holds or the interpretation computed ("trace → figure"): no builder,
    and nothing a figure module imports from toyviz, takes a model, so no figure can run a forward pass
    or read weights of its own (the logit lens was computed inside figures/residual.py)."""
    import importlib
    import inspect
    import pkgutil

    from toyviz.app import figures
    names = ["toyviz.app.figures"] + [f"toyviz.app.figures.{m.name}" for m in pkgutil.iter_modules(figures.__path__)]
    given = []
    for module in map(importlib.import_module, names):
        for name, obj in vars(module).items():
            if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
                given.append(f"{module.__name__} imports the module class {name}")
            elif inspect.isfunction(obj) and obj.__module__.startswith("toyviz"):
                taken = [p for p in inspect.signature(obj).parameters if p in ("model", "gpt", "translator")]
                given += [f"{module.__name__}.{name}({p}=…)" for p in taken]
    assert len(names) > 10 and given == []
