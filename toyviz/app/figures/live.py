"""Watch it learn: a live run's record (toyviz.training.live.Run) → its figures, at its latest step or at
the step a slider picks: the loss curves, each head's induction and previous-token scores, and the
attention pattern of the head that becomes the induction head."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from toyviz.i18n import t
from toyviz.app.figures import figure, heatmap, message, style, subplots, token_labels
from toyviz.training.live import Run, settings_for
from toyviz.training.live_answers import BORN_AT, crossing_step

# a curve's record key, its name's key under figures.live (English: "all tokens", "early tokens (first time seen)",
# "in-context: late tokens (seen before)"; "induction score", "previous-token score") and colour
LOSSES = (("loss", "all", "#1f77b4"), ("early_loss", "early", "#ff7f0e"), ("in_context_loss", "in_context", "#2ca02c"))
SCORES = (("induction", "induction"), ("previous", "previous"))


def shown(run: Run, upto: int | None = None) -> list[dict]:
    """The records up to step `upto` (all of them for None): what a step slider scrubs through."""
    return [r for r in run.records if upto is None or r["step"] <= upto]


def _birth(fig: go.Figure, run: Run, records: list[dict]):
    """A dotted line where the induction score first reached BORN_AT, if it has by the records shown."""
    born = crossing_step(Run(run.recipe, run.seed, run.settings, records=records), BORN_AT)
    if born is not None:
        fig.add_vline(x=born, line_dash="dot", line_color="#888")
        fig.add_annotation(x=born, y=1, yref="paper", text=t("figures.live.born", step=born), showarrow=False,
                           xanchor="left", yanchor="bottom")


def loss_curves(run: Run, upto: int | None = None, *, projector: bool = False) -> go.Figure:
    """Loss against step. For the induction recipe also the loss on early tokens (which no model can
    predict: they stay near ln(vocab)) and on late ones (which an induction head predicts from their
    earlier occurrence): the plateau, then the drop."""
    records = shown(run, upto)
    if not records:
        return message(t("figures.live.no_step"), t("figures.live.loss_title"), filename="toyviz-live-loss",
                       projector=projector)
    steps = np.array([r["step"] for r in records], dtype=np.float64)
    step = t("figures.live.step")
    fig = figure([go.Scatter(x=steps, y=np.array([r[key] for r in records], dtype=np.float32), name=name, mode="lines",
                             line=dict(color=colour, width=3 if key == "in_context_loss" else 2),
                             hovertemplate=f"{step} %{{x:,}}: %{{y:.3f}}<extra>{name}</extra>")
                  for key, name, colour in ((k, t(f"figures.live.{n}"), c) for k, n, c in LOSSES) if key in records[0]])
    fig.update_layout(xaxis=dict(title_text=step, range=[0, run.settings["steps"]]),
                      yaxis=dict(title_text=t("figures.live.loss_axis"), rangemode="tozero"),
                      legend=dict(orientation="h", y=-0.25))
    if run.recipe == "induction":
        _birth(fig, run, records)
    return style(fig, t("figures.live.loss_at", step=f"{records[-1]['step']:,}", steps=f"{run.settings['steps']:,}"),
                 filename="toyviz-live-loss", projector=projector)


def loss_before_a_run(recipe: str, *, projector: bool = False) -> go.Figure:
    """The loss axes before any run, for the recipe picked: the steps it will take and where its curves start.
    A model that has learned nothing guesses uniformly, a loss of ln(vocabulary) nats: for the induction recipe
    ln 32, where the early tokens' loss stays (no model can predict a token seen for the first time)."""
    settings = settings_for(recipe)
    fig = figure()
    if recipe == "induction":
        chance = math.log(settings.vocab)
        fig.add_hline(y=chance, line_dash="dash", line_color="#ff7f0e",
                      annotation_text=t("figures.live.uniform", vocab=settings.vocab, chance=f"{chance:.2f}"),
                      annotation_position="top left")
        top = 1.3 * chance
    else:
        top = 5.0                       # ln 150: room for a text of up to 150 distinct characters
        fig.add_annotation(text=t("figures.live.uniform_text"), x=0.02, y=0.92, xref="paper", yref="paper",
                           xanchor="left", showarrow=False)
    fig.add_annotation(text=t("figures.live.press_start"),
                       x=0.5, y=0.4, xref="paper", yref="paper", showarrow=False)
    fig.update_layout(xaxis=dict(title_text=t("figures.live.step"), range=[0, settings.steps]),
                      yaxis=dict(title_text=t("figures.live.loss_axis"), range=[0, top]))
    return style(fig, t("figures.live.no_run", steps=f"{settings.steps:,}"), filename="toyviz-live-loss",
                 projector=projector)


def head_scores(run: Run, upto: int | None = None, *, projector: bool = False) -> go.Figure:
    """Each head's induction and previous-token score against step, the strongest head at the last step
    shown in colour: a previous-token head in layer 0 and an induction head in layer 1 form together."""
    records = [r for r in shown(run, upto) if "induction" in r]
    if not records:
        return message(t("figures.live.no_scores"), t("figures.live.heads_title"), filename="toyviz-live-heads",
                       projector=projector)
    steps = np.array([r["step"] for r in records], dtype=np.float64)
    step = t("figures.live.step")
    fig = subplots(rows=1, cols=2, subplot_titles=[t(f"figures.live.{said}") for _, said in SCORES], shared_yaxes=True)
    for col, (key, said) in enumerate(SCORES, start=1):
        label = t(f"figures.live.{said}")
        scores = np.array([r[key] for r in records], dtype=np.float32)                   # [time, L, H]
        best = np.unravel_index(scores[-1].argmax(), scores.shape[1:])
        for layer, head in np.ndindex(scores.shape[1:]):
            strongest = (layer, head) == best
            fig.add_trace(go.Scatter(
                x=steps, y=scores[:, layer, head], mode="lines",
                name=t("figures.live.head", head=f"{layer}.{head}", label=label),
                showlegend=strongest, line=dict(width=3 if strongest else 1, color=None if strongest else "#b8b8c8"),
                hovertemplate=t("figures.live.head_short", head=f"{layer}.{head}")
                + f"<br>{step} %{{x:,}}: %{{y:.2f}}<extra>{label}</extra>"), row=1, col=col)
        fig.update_xaxes(title_text=step, range=[0, run.settings["steps"]], row=1, col=col)
    fig.update_yaxes(range=[0, 1.02], row=1, col=1)
    fig.update_layout(legend=dict(orientation="h", y=-0.3))
    return style(fig, t("figures.live.heads"),
                 filename="toyviz-live-heads", projector=projector)


def induction_head(run: Run) -> tuple[int, int]:
    """(layer, head) of the head with the highest induction score at the run's latest record: the one
    whose pattern the slider follows back through the run."""
    scores = np.array(run.records[-1]["induction"])
    return tuple(int(i) for i in np.unravel_index(scores.argmax(), scores.shape))


def attention_pattern(run: Run, upto: int | None = None, *, projector: bool = False) -> go.Figure:
    """The attention of the run's induction head on one probe sequence at the step shown: at first a
    blur, then, as the head forms, an off-diagonal stripe one period back plus one."""
    records = [r for r in shown(run, upto) if "patterns" in r]
    if not records:
        return message(t("figures.live.no_attention"), t("figures.live.attention_title"),
                       filename="toyviz-live-attention", projector=projector)
    layer, head = induction_head(run)
    record = records[-1]
    z = np.asarray(record["patterns"][layer, head], dtype=np.float32)                     # (T, T)
    z[np.triu_indices_from(z, k=1)] = np.nan                                               # masked: grey
    labels = token_labels([str(t) for t in run.header["probe"]])
    fig = figure(heatmap(z, x=labels, y=labels, zmin=0, zmax=1, colorbar_title=t("figures.live.attention"),
                         hover=t("figures.live.attention_hover")))
    fig.update_layout(xaxis=dict(title_text=t("figures.live.key"), showticklabels=False),
                      yaxis=dict(title_text=t("figures.live.query"), autorange="reversed", showticklabels=False))
    score = record["induction"][layer][head]
    title = t("figures.live.pattern", head=f"{layer}.{head}", step=f"{record['step']:,}", score=f"{score:.2f}")
    return style(fig, title,
                 filename="toyviz-live-attention", projector=projector, height=520, maps=True)


def samples_markdown(run: Run, upto: int | None = None, last: int = 4) -> str:
    """The text recipe's latest samples, newest first, each with its step and loss (Markdown)."""
    drawn = [r for r in shown(run, upto) if "sample" in r][-last:]
    if not drawn:
        return t("notes.watch.first_sample")
    return "\n\n".join(t("notes.watch.sample", step=f"{r['step']:,}", loss=f"{r['loss']:.2f}")
                       + f"\n\n```\n{r['sample']}\n```" for r in reversed(drawn))
