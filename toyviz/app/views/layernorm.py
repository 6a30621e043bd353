"""The LayerNorm tab: each norm's input and output spread, its parameters, one token's values."""
from __future__ import annotations

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
    return (f"Averaged over the tokens, the input std is {inputs[0]:.2f} at `{names[0]}` and {inputs[-1]:.2f} at "
            f"`{names[-1]}`; the output std is {inner.min():.2f}–{inner.max():.2f} at the norms inside the blocks "
            f"and {outputs[-1]:.2f} at `{names[-1]}`. " + rms_note(trace))


def rms_note(trace) -> str:
    """What the figures mean for a model whose norms are RMSNorms (Llama's kind), or nothing."""
    if all(norm.centres for norm in trace.layernorms.values()):
        return ""
    return ("This model's norms are RMSNorms: each divides by the root mean square √(mean x² + ε), shown here as "
            "the input std, subtracts no mean (the input mean shown is 0) and adds no β. ")


def layernorm_view(explorer: Explorer, prompt, norm_name="block0.ln1", position=-1, projector=False, model="gpt"):
    tr, note = explorer.view(prompt, model)
    names = list(tr.layernorms)
    norm_name = norm_name if norm_name in names else names[0]
    position, said = token_position(position, len(tr.tokens))
    return (note + said + spread_note(tr), layernorm_figs.layernorm_heatmaps(tr, projector=projector),
            layernorm_figs.layernorm_curves(tr, projector=projector),
            layernorm_figs.layernorm_parameters(tr, norm_name, projector=projector),
            layernorm_figs.layernorm_histogram(tr, norm_name, position, projector=projector))
