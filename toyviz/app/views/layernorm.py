"""The LayerNorm tab: each norm's input and output spread, its parameters, one token's values."""
from __future__ import annotations

from toyviz.i18n import t
from toyviz.app.explorer import Explorer
from toyviz.app.figures import layernorm as layernorm_figs
from toyviz.settings.controls import position as token_position


def layernorm_choices(explorer: Explorer, prompt, model="gpt") -> list[str]:
    """The LayerNorms of the stack on screen, for the norm picker."""
    return list(explorer.view(prompt, model)[0].layernorms)


def spread_note(trace) -> str:
    """What the curves show on this prompt, in numbers: the tab's text must not claim what its chart
    contradicts (it said the output spread does not grow, beside an output std rising to 3 at ln_f)."""
    stats = layernorm_figs.norm_statistics(trace)
    names = list(trace.layernorms)
    inputs, outputs = stats["input std"].mean(-1), stats["output std"].mean(-1)
    inner = outputs[:-1] if len(names) > 1 else outputs
    return t("notes.layernorm.spread", first_in=f"{inputs[0]:.2f}", first=names[0], last_in=f"{inputs[-1]:.2f}",
             last=names[-1], low=f"{inner.min():.2f}", high=f"{inner.max():.2f}", last_out=f"{outputs[-1]:.2f}") + \
        rms_note(trace)


def rms_note(trace) -> str:
    """What the figures mean for a model whose norms are RMSNorms (Llama's kind), or nothing."""
    if all(norm.centres for norm in trace.layernorms.values()):
        return ""
    return t("notes.layernorm.rms")


def layernorm_view(explorer: Explorer, prompt, norm_name="block0.ln1", position=-1, projector=False, model="gpt"):
    tr, note = explorer.view(prompt, model)
    names = list(tr.layernorms)
    norm_name = norm_name if norm_name in names else names[0]
    position, said = token_position(position, len(tr.tokens))
    return (note + said + spread_note(tr), layernorm_figs.layernorm_heatmaps(tr, projector=projector),
            layernorm_figs.layernorm_curves(tr, projector=projector),
            layernorm_figs.layernorm_parameters(tr, norm_name, projector=projector),
            layernorm_figs.layernorm_histogram(tr, norm_name, position, projector=projector))
