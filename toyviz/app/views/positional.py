"""The Positions tab: the model's position information, and the sinusoidal formula on its own."""
from __future__ import annotations

import torch

from toyviz.i18n import mistake, t
from toyviz.app.explorer import Explorer
from toyviz.app.figures import positional as positional_figs
from toyviz.models.layers import sinusoidal_encoding
from toyviz.settings.controls import clamp


METRICS = ("cosine", "dot")     # the similarity the page's radio offers; the API may send anything


def positions_view(explorer: Explorer, prompt, metric="cosine", projector=False, model="gpt"):
    if metric not in METRICS:
        raise mistake("errors.similarity", first=METRICS[0], second=METRICS[1], given=repr(metric))
    tr, note = explorer.view(prompt, model)
    config = explorer.models.need_gpt().config if model == "gpt" else explorer.models.need_translator().config
    kind = config.positional if model == "gpt" else "sinusoidal"   # the translator's, as in the paper
    # a learned table whole, every row as the model adds it (the trace holds the prompt's rows only)
    table = (explorer.gpt.model.positional(torch.arange(config.context, device=explorer.gpt.device))
             if model == "gpt" and kind == "learned" else None)
    d_model = config.d_model
    encoding = tr.positional if tr.positional is not None else sinusoidal_encoding(len(tr.tokens), d_model)
    if tr.positional is None:
        note += t("notes.positions.no_vector", kind=kind)
    dims = list(dict.fromkeys(d for d in (0, 1, 8, 9, min(64, d_model - 2), min(65, d_model - 1))
                              if d < d_model))              # a d_model under 10 has fewer dimensions
    return (note, positional_figs.model_encoding(tr, kind, table=table, projector=projector),
            positional_figs.dimension_curves(encoding, dims, projector=projector),
            positional_figs.similarity_heatmap(encoding, metric, tokens=tr.tokens, projector=projector))


def formula_view(d_model=64, length=128, projector=False):
    """The sinusoidal formula on its own, and the two tutorial bugs beside it."""
    d_model = clamp(d_model, 2, 1024, int, "d_model") // 2 * 2
    length = clamp(length, 2, 1024, int, "length")
    return (positional_figs.formula_explorer(d_model, length, projector=projector),
            positional_figs.spot_the_bug(length, d_model, projector=projector))
