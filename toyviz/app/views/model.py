"""The Model tab: where the parameters are, attention's memory, how training went, a snapshot's attention."""
from __future__ import annotations

from toyviz.i18n import t
from toyviz.app.explorer import Explorer
from toyviz.app.figures import attention as attention_figs
from toyviz.app.figures import model as model_figs
from toyviz.models.size import count_parameters
from toyviz.settings.controls import context_note, settle


def snapshot_note(shown: str, earlier: list[str]) -> str:
    """Which training snapshot the Model tab shows, and which others the slider reaches."""
    if not earlier:
        return t("notes.model.final_only")
    return t("notes.model.snapshot", shown=shown, earlier=", ".join(earlier))


def model_view(explorer: Explorer, prompt, snapshot=-1, x_axis="step", projector=False):
    gpt = explorer.models.need_gpt()
    config = gpt.config
    history = explorer.caches.history()
    paths = explorer.models.snapshots()
    index, said = settle("snapshot", snapshot, high=len(paths) - 1)
    path, tr = explorer.caches.snapshot_trace(index % len(paths), prompt)
    said += context_note(len(tr.tokens), tr.truncated) if tr.truncated else ""
    step = path.name if path.name.startswith("step-") else "final"
    return (model_figs.parameter_bars(count_parameters(gpt.model), projector=projector),
            model_figs.attention_memory(config.n_head, n_layer=config.n_layer, context=config.context,
                                        projector=projector),
            model_figs.loss_curve(history, x=x_axis, projector=projector) if history else None,       # + head probes
            said + snapshot_note(step, [p.name for p in paths[:-1]]),
            attention_figs.attention_grid(tr, projector=projector))
