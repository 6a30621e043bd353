"""Experiments view: what changing one piece of the architecture did, from results.json.

Pure functions of the results dict that `toyviz experiments` writes.
"""
from __future__ import annotations

import zlib

import plotly.graph_objects as go

from toyviz.i18n import LANGUAGES, catalogue, t
from toyviz.app.figures import PROJECTOR_SCALE, figure, message, style

SEEDS = ("baseline", "baseline_seed2")
# one colour per variant, the same in every chart and whatever is ticked (Okabe–Ito, safe for colour
# blindness; the two baseline seeds black and grey, like the grey band of their spread)
VARIANT_COLOURS = {
    "baseline": "#000000", "baseline_seed2": "#8c8c8c", "learned_pe": "#E69F00", "rope": "#0072B2",
    "no_pe": "#56B4E9", "swiglu": "#009E73", "post_norm": "#CC79A7", "no_causal_mask": "#D55E00",
}
SPARE_COLOURS = ("#882255", "#44AA99", "#999933", "#332288", "#AA4499", "#117733", "#661100", "#6699CC")


def colour(name: str) -> str:
    """The variant's colour: fixed for the known variants, and for any other name one picked from its
    letters (not from its place in a list, which changes with the selection)."""
    return VARIANT_COLOURS.get(name) or SPARE_COLOURS[zlib.crc32(name.encode()) % len(SPARE_COLOURS)]


def _spread(results: dict) -> tuple[float, float] | None:
    values = [results["variants"][s]["val_bits_per_char"] for s in SEEDS if s in results["variants"]]
    return (min(values), max(values)) if len(values) == 2 else None


def curves(results: dict, variants: list[str] | None = None, x: str = "tokens", *, projector: bool = False) -> go.Figure:
    """Held-out bits/char during training, one line per variant, against tokens seen or seconds;
    the two baseline seeds are drawn as a band, so a gap narrower than the band is noise."""
    chosen = [v for v in (variants or results["variants"]) if v in results["variants"]]
    key = "val_curve" if x == "tokens" else "time_curve"
    fig = figure()
    if all(s in results["variants"] for s in SEEDS):
        a, b = (results["variants"][s][key] for s in SEEDS)
        xs = [p[0] for p in a]
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=[p[1] for p in a] + [p[1] for p in b][::-1], fill="toself",
                                 fillcolor="rgba(120,120,120,0.25)", line=dict(width=0), name=t("figures.experiments.two_seeds"),
                                 hoverinfo="skip"))
    for name in chosen:
        r = results["variants"][name]
        points = r[key]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        if "val_bits_per_char_as_trained" not in r:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, legendgroup=name,
                                     line=dict(color=colour(name))))
            continue
        # a model trained without the mask was evaluated during training without it too: each position read
        # the token it predicts, so its curve falls to ~0.2. Only the final, honest score (each position
        # predicted from its past alone) is comparable with the other lines: drawn as its own labelled point
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", name=t("figures.experiments.as_trained", name=name), legendgroup=name,
            line=dict(color=colour(name), dash="dot"),
            hovertemplate=t("figures.hover.future_visible") + "<extra></extra>"))
        honest = r["val_bits_per_char"]
        fig.add_trace(go.Scatter(
            x=[xs[-1]], y=[honest], mode="markers+text", name=t("figures.experiments.honest", name=name),
            legendgroup=name, marker=dict(color=colour(name), symbol="diamond", size=12),
            text=[t("figures.experiments.honest_value", value=f"{honest:.3f}")], textposition="middle left", cliponaxis=False,
            hovertemplate=t("figures.hover.end_of_training") + "<extra></extra>"))
    fig.update_layout(xaxis_title_text=t("figures.experiments.training_tokens" if x == "tokens" else "figures.experiments.seconds"),
                      yaxis_title_text=t("figures.experiments.bits"))
    return style(fig, t("figures.experiments.curves"), filename=f"toyviz-experiments-{x}",
                 projector=projector, height=460)


def final_bars(results: dict, *, projector: bool = False) -> go.Figure:
    """Final held-out bits/char per variant (lower is better) as dots, against the seed-to-seed spread.

    Dots, not bars: the differences worth reading are a few hundredths of a bit on values near 2.2,
    so the axis is zoomed to the values, and a bar's length from a zoomed axis would exaggerate them
    (a bar from 0 would hide them). Each dot says its value and its difference from the baseline; the
    grey band is the baseline's spread over two seeds — a difference inside it is noise."""
    names = list(results["variants"])
    values = [results["variants"][n]["val_bits_per_char"] for n in names]
    base = results["variants"].get("baseline", {}).get("val_bits_per_char")
    delta = lambda n, v: "" if base is None or n == "baseline" else f" ({v - base:+.3f})"
    fig = figure(go.Scatter(
        x=values, y=names, mode="markers+text", meta=names, cliponaxis=False,
        marker=dict(color=[colour(n) for n in names], size=round(14 * (PROJECTOR_SCALE if projector else 1)),
                    line=dict(color="white", width=1)),
        text=[f"{v:.3f}{delta(n, v)}" for n, v in zip(names, values)], textposition="middle right",
        customdata=[results["variants"][n]["differs"] for n in names], showlegend=False,
        hovertemplate="%{y}: " + t("figures.hover.bits") + "<br>%{customdata}<extra></extra>"))
    spread = _spread(results)
    if spread:
        fig.add_vrect(x0=spread[0], x1=spread[1], fillcolor="grey", opacity=0.3, line_width=0, layer="below")
        fig.add_annotation(x=(spread[0] + spread[1]) / 2, y=1, yref="paper", yanchor="bottom", showarrow=False,
                           text=t("figures.experiments.seed_spread", spread=f"{spread[1] - spread[0]:.3f}"))
    low, high = min(values), max(values)
    pad = (high - low or 1.0) * 0.05
    # a model trained without the mask is scored honestly here (each position from its past alone)
    shown = [t("figures.experiments.honest_name", name=n) if "val_bits_per_char_as_trained" in results["variants"][n]
             else n for n in names]
    fig.update_layout(xaxis=dict(title_text=t("figures.experiments.lower_is_better", low=f"{low - pad:.2f}"),
                                 range=[low - pad, high + 5 * pad]),
                      yaxis=dict(autorange="reversed", tickmode="array", tickvals=names, ticktext=shown))
    return style(fig, t("figures.experiments.final"),
                 filename="toyviz-experiments-final", projector=projector, height=160 + 40 * len(names))


def extrapolation(results: dict, *, projector: bool = False) -> go.Figure:
    """Held-out bits/char when reading 1×, 2× and 4× the trained context: can the positional
    scheme handle positions it never saw? Learned positions have no rows past their table."""
    fig = figure()
    for name, r in results["variants"].items():
        if "extrapolation" not in r:
            continue
        factors = list(r["extrapolation"])
        fig.add_trace(go.Scatter(x=factors, y=[r["extrapolation"][f] for f in factors], mode="lines+markers", name=name,
                                 legendgroup=name, line=dict(color=colour(name))))
        missing = [f for f in factors if r["extrapolation"][f] is None]
        if missing:
            fig.add_annotation(x=missing[0], y=r["extrapolation"]["1x"], text=t("figures.experiments.past_table", name=name),
                               showarrow=False, yshift=-18)
    if not fig.data:
        return message(t("figures.experiments.no_positional"), t("figures.experiments.extrapolation"),
                       filename="toyviz-experiments-extrapolation", projector=projector)
    fig.update_layout(xaxis_title_text=t("figures.experiments.context_read"),
                      yaxis_title_text=t("figures.experiments.bits"))
    return style(fig, t("figures.experiments.extrapolation_title", context=results["context"]),
                 filename="toyviz-experiments-extrapolation", projector=projector)


def no_mask_bars(results: dict, *, projector: bool = False) -> go.Figure:
    """The model trained without the mask, scored as trained (it sees the token it predicts) and
    honestly (only the past visible), next to the baseline."""
    r = results["variants"].get("no_causal_mask")
    if r is None:
        return message(t("figures.experiments.no_mask_missing"), t("figures.experiments.no_mask"),
                       filename="toyviz-experiments-no-mask",
                       projector=projector)
    names = [t("figures.experiments.baseline_with_mask"), t("figures.experiments.no_mask_as_trained"),
             t("figures.experiments.no_mask_honest")]
    values = [results["variants"].get("baseline", {}).get("val_bits_per_char"), r["val_bits_per_char_as_trained"],
              r["val_bits_per_char"]]
    # the baseline in its colour; the no-mask model in its own, pale where it is scored as trained (a cheat)
    fig = figure(go.Bar(x=names, y=values, text=[f"{v:.3f}" if v is not None else "" for v in values],
                        textposition="outside", cliponaxis=False,
                        meta=["baseline", "no_causal_mask", "no_causal_mask"],
                        marker=dict(color=[colour("baseline"), colour("no_causal_mask"), colour("no_causal_mask")],
                                    opacity=[1.0, 0.45, 1.0])))
    # room above the tallest bar for its number ("4.859"), which plotly would otherwise clip at the top
    fig.update_layout(yaxis=dict(title_text=t("figures.experiments.bits"), range=[0, max(v or 0 for v in values) * 1.15]))
    return style(fig, t("figures.experiments.no_mask_title"),
                 filename="toyviz-experiments-no-mask", projector=projector)


def differs(name: str, english: str) -> str:
    """What a variant changes (results.json's English, toyviz.training.variants) in the event's language: the
    catalogues' entry where its English is the results' (results written by another version keep their words)."""
    key = f"figures.experiments.differs.{name}"
    return t(key) if catalogue(LANGUAGES[0]).get(key) == english else english


def describe(results: dict, variants=None) -> str:
    """Sentences stated from the measurements (not from the course material), about the variants
    ticked (default: all); the baseline's seed spread always, since every comparison needs it."""
    chosen = set(results["variants"] if variants is None else variants)
    v = {name: r for name, r in results["variants"].items() if name in chosen or name.startswith("baseline")}
    lines = []
    spread = _spread(results)
    if spread:
        lines.append(t("figures.experiments.says.spread", spread=f"{spread[1] - spread[0]:.3f}"))
    base = v.get("baseline", {}).get("val_bits_per_char")
    for name in ("learned_pe", "rope", "no_pe", "swiglu", "post_norm"):
        if name in v and base is not None:
            delta = v[name]["val_bits_per_char"] - base
            verdict = "within" if spread and abs(delta) <= spread[1] - spread[0] else ("better" if delta < 0 else "worse")
            lines.append(t("figures.experiments.says.variant", name=name, differs=differs(name, v[name]["differs"]),
                           value=f"{v[name]['val_bits_per_char']:.3f}", base=f"{base:.3f}", delta=f"{delta:+.3f}",
                           verdict=t(f"figures.experiments.says.{verdict}")))
    ext = {n: v[n]["extrapolation"] for n in ("baseline", "rope") if n in v and "extrapolation" in v[n]}
    if len(ext) == 2 and ext["rope"].get("4x") is not None and ext["baseline"].get("4x") is not None:
        better = ext["rope"]["4x"] < ext["baseline"]["4x"]
        lines.append(t("figures.experiments.says.rope_better" if better else "figures.experiments.says.rope_not_better",
                       rope=f"{ext['rope']['4x']:.3f}", sinusoidal=f"{ext['baseline']['4x']:.3f}"))
    if "no_causal_mask" in v:
        r = v["no_causal_mask"]
        lines.append(t("figures.experiments.says.no_mask", as_trained=f"{r['val_bits_per_char_as_trained']:.3f}",
                       honest=f"{r['val_bits_per_char']:.3f}"))
    return "\n\n".join(lines)
