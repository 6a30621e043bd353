"""Watch it learn: a live run's record (toyviz.training.live.Run) → its figures, at its latest step or at
the step a slider picks: the loss curves, each head's induction and previous-token scores, and the
attention pattern of the head that becomes the induction head."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from toyviz.app.figures import figure, heatmap, message, style, subplots, token_labels
from toyviz.training.live import Run, settings_for
from toyviz.training.live_answers import BORN_AT, crossing_step

LOSSES = (("loss", "all tokens", "#1f77b4"), ("early_loss", "early tokens (first time seen)", "#ff7f0e"),
          ("in_context_loss", "in-context: late tokens (seen before)", "#2ca02c"))
SCORES = (("induction", "induction score"), ("previous", "previous-token score"))


def shown(run: Run, upto: int | None = None) -> list[dict]:
    """The records up to step `upto` (all of them for None): what a step slider scrubs through."""
    return [r for r in run.records if upto is None or r["step"] <= upto]


def _birth(fig: go.Figure, run: Run, records: list[dict]):
    """A dotted line where the induction score first reached BORN_AT, if it has by the records shown."""
    born = crossing_step(Run(run.recipe, run.seed, run.settings, records=records), BORN_AT)
    if born is not None:
        fig.add_vline(x=born, line_dash="dot", line_color="#888")
        fig.add_annotation(x=born, y=1, yref="paper", text=f"induction head born (step {born})", showarrow=False,
                           xanchor="left", yanchor="bottom")


def loss_curves(run: Run, upto: int | None = None, *, projector: bool = False) -> go.Figure:
    """Loss against step. For the induction recipe also the loss on early tokens (which no model can
    predict: they stay near ln(vocab)) and on late ones (which an induction head predicts from their
    earlier occurrence): the plateau, then the drop."""
    records = shown(run, upto)
    if not records:
        return message("The run has not recorded a step yet.", "Loss", filename="toyviz-live-loss", projector=projector)
    steps = np.array([r["step"] for r in records], dtype=np.float64)
    fig = figure([go.Scatter(x=steps, y=np.array([r[key] for r in records], dtype=np.float32), name=name, mode="lines",
                             line=dict(color=colour, width=3 if key == "in_context_loss" else 2),
                             hovertemplate=f"step %{{x:,}}: %{{y:.3f}}<extra>{name}</extra>")
                  for key, name, colour in LOSSES if key in records[0]])
    fig.update_layout(xaxis=dict(title_text="step", range=[0, run.settings["steps"]]),
                      yaxis=dict(title_text="loss (nats)", rangemode="tozero"),
                      legend=dict(orientation="h", y=-0.25))
    if run.recipe == "induction":
        _birth(fig, run, records)
    return style(fig, f"Loss at step {records[-1]['step']:,} of {run.settings['steps']:,}",
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
                      annotation_text=f"a uniform guess among {settings.vocab} tokens: ln {settings.vocab} = "
                                      f"{chance:.2f} nats, where every curve starts", annotation_position="top left")
        top = 1.3 * chance
    else:
        top = 5.0                       # ln 150: room for a text of up to 150 distinct characters
        fig.add_annotation(text="a uniform guess among the text's characters: ln(how many) nats, where the curve "
                                "starts", x=0.02, y=0.92, xref="paper", yref="paper", xanchor="left", showarrow=False)
    fig.add_annotation(text="Press <b>Start</b>: the loss is drawn here, step by step, as the model trains",
                       x=0.5, y=0.4, xref="paper", yref="paper", showarrow=False)
    fig.update_layout(xaxis=dict(title_text="step", range=[0, settings.steps]),
                      yaxis=dict(title_text="loss (nats)", range=[0, top]))
    return style(fig, f"Loss: no run yet ({settings.steps:,} steps to come)", filename="toyviz-live-loss",
                 projector=projector)


def head_scores(run: Run, upto: int | None = None, *, projector: bool = False) -> go.Figure:
    """Each head's induction and previous-token score against step, the strongest head at the last step
    shown in colour: a previous-token head in layer 0 and an induction head in layer 1 form together."""
    records = [r for r in shown(run, upto) if "induction" in r]
    if not records:
        return message("No head scores yet.", "Heads", filename="toyviz-live-heads", projector=projector)
    steps = np.array([r["step"] for r in records], dtype=np.float64)
    fig = subplots(rows=1, cols=2, subplot_titles=[label for _, label in SCORES], shared_yaxes=True)
    for col, (key, label) in enumerate(SCORES, start=1):
        scores = np.array([r[key] for r in records], dtype=np.float32)                   # [time, L, H]
        best = np.unravel_index(scores[-1].argmax(), scores.shape[1:])
        for layer, head in np.ndindex(scores.shape[1:]):
            strongest = (layer, head) == best
            fig.add_trace(go.Scatter(
                x=steps, y=scores[:, layer, head], mode="lines", name=f"head {layer}.{head} ({label})",
                showlegend=strongest, line=dict(width=3 if strongest else 1, color=None if strongest else "#b8b8c8"),
                hovertemplate=f"head {layer}.{head}<br>step %{{x:,}}: %{{y:.2f}}<extra>{label}</extra>"), row=1, col=col)
        fig.update_xaxes(title_text="step", range=[0, run.settings["steps"]], row=1, col=col)
    fig.update_yaxes(range=[0, 1.02], row=1, col=1)
    fig.update_layout(legend=dict(orientation="h", y=-0.3))
    return style(fig, "Each head's scores (layer.head; the strongest at this step in colour)",
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
        return message("No attention recorded yet.", "Attention", filename="toyviz-live-attention", projector=projector)
    layer, head = induction_head(run)
    record = records[-1]
    z = np.asarray(record["patterns"][layer, head], dtype=np.float32)                     # (T, T)
    z[np.triu_indices_from(z, k=1)] = np.nan                                               # masked: grey
    labels = token_labels([str(t) for t in run.header["probe"]])
    fig = figure(heatmap(z, x=labels, y=labels, zmin=0, zmax=1, colorbar_title="attention",
                         hover="query %{y} → key %{x}: %{z:.2f}"))
    fig.update_layout(xaxis=dict(title_text="key (token id)", showticklabels=False),
                      yaxis=dict(title_text="query (token id)", autorange="reversed", showticklabels=False))
    score = record["induction"][layer][head]
    return style(fig, f"Head {layer}.{head} at step {record['step']:,}: induction score {score:.2f}",
                 filename="toyviz-live-attention", projector=projector, height=520, maps=True)


def samples_markdown(run: Run, upto: int | None = None, last: int = 4) -> str:
    """The text recipe's latest samples, newest first, each with its step and loss (Markdown)."""
    drawn = [r for r in shown(run, upto) if "sample" in r][-last:]
    if not drawn:
        return "*The first sample comes a few seconds into the run.*"
    return "\n\n".join(f"**step {r['step']:,}** (loss {r['loss']:.2f})\n\n```\n{r['sample']}\n```" for r in reversed(drawn))
