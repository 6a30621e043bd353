from toyviz.figures import experiments as exp_figs


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
        "no_causal_mask": variant(4.2, val_bits_per_char_as_trained=0.3),
    }}


def test_curves_draw_a_seed_band_and_one_line_per_variant():
    fig = exp_figs.curves(fake_results(), ["baseline", "rope"], x="seconds")
    assert fig.data[0].name == "baseline, two seeds" and fig.data[0].fill == "toself"
    assert [t.name for t in fig.data[1:]] == ["baseline", "rope"]
    assert fig.layout.xaxis.title.text == "seconds"


def test_final_bars_and_extrapolation_and_no_mask():
    r = fake_results()
    bars = exp_figs.final_bars(r)
    assert list(bars.data[0].x) == list(r["variants"])
    ext = exp_figs.extrapolation(r)
    assert {t.name for t in ext.data} == {"baseline", "learned_pe", "rope"}
    assert any("no positions past the table" in a.text for a in ext.layout.annotations)
    no_mask = exp_figs.no_mask_bars(r)
    assert list(no_mask.data[0].y) == [2.50, 0.3, 4.2]


def test_describe_states_measurements():
    text = exp_figs.describe(fake_results())
    assert "spread of the baseline: 0.020" in text
    assert "rope" in text and "RoPE does extrapolate better" in text
    assert "0.300 bits/char as trained" in text
