import pytest

from toyviz.app.figures import experiments as exp_figs
from toyviz.training.variants import VARIANTS


def fake_results():
    curve = lambda base: [[t * 1000, base - t * 0.01] for t in range(1, 6)]
    variant = lambda bpc, **extra: {"differs": "x", "params": 1, "minutes": 1.0, "val_bits_per_char": bpc,
                                    "train_curve": curve(bpc + 0.1), "val_curve": curve(bpc), "time_curve": curve(bpc),
                                    **extra}
    return {"context": 128, "variants": {
        "baseline": variant(2.50, extrapolation={"1x": 2.5, "2x": 2.7, "4x": 3.1}),
        "baseline_seed2": variant(2.52),
        "learned_pe": variant(2.55, extrapolation={"1x": 2.55, "2x": None, "4x": None}),
        "rope": variant(2.45, extrapolation={"1x": 2.45, "2x": 2.6, "4x": 2.9}),
        # trained and evaluated during training with the future visible: its curves fall far below its honest score
        "no_causal_mask": variant(4.2, val_bits_per_char_as_trained=0.3, val_curve=curve(0.35), time_curve=curve(0.35)),
    }}


def test_curves_draw_a_seed_band_and_one_line_per_variant():
    fig = exp_figs.curves(fake_results(), ["baseline", "rope"], x="seconds")
    assert fig.data[0].name == "baseline, two seeds" and fig.data[0].fill == "toself"
    assert [t.name for t in fig.data[1:]] == ["baseline", "rope"]
    assert fig.layout.xaxis.title.text == "seconds"


def test_final_bars_and_extrapolation_and_no_mask():
    r = fake_results()
    bars = exp_figs.final_bars(r)
    assert list(bars.data[0].y) == list(r["variants"])
    ext = exp_figs.extrapolation(r)
    assert {t.name for t in ext.data} == {"baseline", "learned_pe", "rope"}
    assert any("no positions past the table" in a.text for a in ext.layout.annotations)
    no_mask = exp_figs.no_mask_bars(r)
    assert list(no_mask.data[0].y) == [2.50, 0.3, 4.2]
    assert no_mask.data[0].cliponaxis is False and no_mask.layout.yaxis.range == (0, pytest.approx(4.2 * 1.15))


def test_describe_states_measurements():
    text = exp_figs.describe(fake_results())
    assert "spread of the baseline: 0.020" in text
    assert "rope" in text and "RoPE does extrapolate better" in text
    assert "0.300 bits/char as trained" in text


def test_describe_speaks_of_the_ticked_variants_only():
    text = exp_figs.describe(fake_results(), ["baseline", "learned_pe"])
    assert "learned_pe" in text and "spread of the baseline" in text
    assert "rope" not in text and "RoPE" not in text and "Without the mask" not in text


def variant_colours(fig) -> dict[str, set]:
    """Variant name → the colours it is drawn in, over every trace of an experiments chart."""
    seen: dict[str, set] = {}
    for t in fig.data:
        if t.type == "bar":
            for name, c in zip(t.meta, t.marker.color):                            # meta: each bar's variant
                seen.setdefault(name, set()).add(c)
        elif isinstance(t.meta, (list, tuple)):                                   # one dot per variant
            for name, c in zip(t.meta, t.marker.color):
                seen.setdefault(name, set()).add(c)
        elif t.legendgroup:
            seen.setdefault(t.legendgroup, set()).add(t.line.color or t.marker.color)
    return seen


def test_a_variant_keeps_its_colour_in_every_chart_and_for_any_selection():
    r = fake_results()
    charts = [exp_figs.curves(r, ["baseline", "rope"]), exp_figs.curves(r, ["rope", "no_causal_mask", "baseline"]),
              exp_figs.curves(r, ["learned_pe"], x="seconds"), exp_figs.curves(r, None), exp_figs.final_bars(r),
              exp_figs.extrapolation(r), exp_figs.no_mask_bars(r)]
    drawn: dict[str, set] = {}
    for fig in charts:
        for name, colours in variant_colours(fig).items():
            drawn.setdefault(name, set()).update(colours)
    assert set(drawn) == set(r["variants"])
    assert all(colours == {exp_figs.colour(name)} for name, colours in drawn.items()), drawn
    assert len({exp_figs.colour(name) for name in VARIANTS}) == len(VARIANTS)       # no two variants alike
    assert exp_figs.colour("a_new_variant") == exp_figs.colour("a_new_variant")      # unknown names: stable too


def test_the_final_chart_shows_differences_honestly():
    """Bars on an axis starting near 2.1 made the differences slivers whose lengths meant nothing. The chart
    now has dots (no length to misread) on an axis that says where it starts, each dot with its value and its
    difference from the baseline, and the baseline's seed spread marked as a band."""
    r = fake_results()
    fig = exp_figs.final_bars(r)
    assert all(t.type != "bar" for t in fig.data) or fig.layout.yaxis.range[0] == 0
    dots = fig.data[0]
    assert dots.mode == "markers+text" and list(dots.x) == [v["val_bits_per_char"] for v in r["variants"].values()]
    assert dots.text[list(dots.y).index("rope")] == "2.450 (-0.050)" and dots.text[0] == "2.500"
    band, = fig.layout.shapes
    assert (band.x0, band.x1) == (2.50, 2.52)
    assert any("seed spread 0.020" == a.text for a in fig.layout.annotations)
    axis = fig.layout.xaxis
    assert "lower is better" in axis.title.text and f"axis from {axis.range[0]:.2f}, not 0" in axis.title.text
    assert axis.range[0] < min(dots.x) and axis.range[1] > max(dots.x)


@pytest.mark.parametrize("x", ["tokens", "seconds"])
def test_the_no_mask_curve_ends_at_the_score_its_final_dot_shows(x):
    """The no-mask model's held-out curve fell to ~0.2 while its final score said 4.859: the curve was measured
    with the mask off, as it was trained (each position reads the token it predicts), the final score honestly.
    Its curve is now labelled 'as trained', and it ends in a labelled honest point equal to the final chart's."""
    r = fake_results()
    fig = exp_figs.curves(r, ["baseline", "no_causal_mask"], x=x)
    line, honest = [t for t in fig.data if t.legendgroup == "no_causal_mask"]
    assert "as trained" in line.name and line.line.dash == "dot"
    assert "honest" in honest.name and honest.x[-1] == line.x[-1]
    final = exp_figs.final_bars(r)
    dots = final.data[0]
    at = list(dots.y).index("no_causal_mask")
    assert honest.y[-1] == dots.x[at] == r["variants"]["no_causal_mask"]["val_bits_per_char"] == 4.2
    assert final.layout.yaxis.ticktext[at] == "no_causal_mask (honest)"
    baseline, = [t for t in fig.data if t.legendgroup == "baseline"]                # causal variants: one line
    assert baseline.name == "baseline" and final.layout.yaxis.ticktext[0] == "baseline"
