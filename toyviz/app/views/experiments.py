"""The Experiments tab: one-change variants of a small GPT, measured, and the model trained without the mask."""
from __future__ import annotations

import html

from toyviz.i18n import mistake, said, t
from toyviz.app.explorer import Explorer, clean_prompt
from toyviz.app.figures import attention as attention_figs
from toyviz.app.figures import experiments as experiment_figs
from toyviz.app.figures import message
from toyviz.errors import UserError


def experiments_view(explorer: Explorer, prompt, variants=("baseline",), x_axis="tokens", projector=False):
    results = explorer.experiment_results()
    variants = [variants] if isinstance(variants, str) else variants
    if not isinstance(variants, (list, tuple)) or not all(isinstance(v, str) for v in variants):
        raise mistake("errors.variants", names=", ".join(results["variants"]), given=repr(variants))
    text, _ = clean_prompt(prompt)
    try:
        no_mask = explorer.no_mask_model()
    except UserError as err:        # the measurements can still be drawn without its weights
        attention = message(said(err), t("notes.experiments.no_mask_attention"), filename="toyviz-no-mask-attention",
                            projector=projector)
        sample = said(err)
    else:
        attention = attention_figs.attention_grid(no_mask.trace(text), projector=projector)
        sample = t("notes.experiments.no_mask_sample", text=html.escape(explorer.no_mask_sample(text)))
    return (experiment_figs.describe(results, list(variants)), experiment_figs.curves(results, list(variants), x_axis,
                                                                      projector=projector),
            experiment_figs.final_bars(results, projector=projector),
            experiment_figs.extrapolation(results, projector=projector),
            experiment_figs.no_mask_bars(results, projector=projector), attention, sample)
