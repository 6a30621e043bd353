"""The Residual stream tab: the running sum, each write's share, and the GPT's readout of it."""
from __future__ import annotations

from toyviz.app.explorer import Explorer
from toyviz.app.figures import residual as residual_figs
from toyviz.app.views.text import gpt_only
from toyviz.interpret.readout import direct_logit_attribution, logit_lens_top
from toyviz.settings.controls import position as token_position


def residual_view(explorer: Explorer, prompt, position=-1, projector=False, model="gpt"):
    tr, note = explorer.view(prompt, model)
    position, said = token_position(position, len(tr.tokens))
    note += said
    if model == "gpt":
        gpt = explorer.gpt
        lens = logit_lens_top(tr, gpt.model)
        parts = direct_logit_attribution(tr, gpt.model, position, minus_mean=True)
        readout = (residual_figs.logit_lens(tr, lens, gpt.tokenizer.piece, projector=projector),
                   residual_figs.logit_attribution(tr, parts, gpt.tokenizer.piece, position, projector=projector))
    else:       # both read the stream through the GPT's final norm and unembedding; the encoder has none
        readout = (gpt_only("lens", "lens", "logit-lens", projector),
                   gpt_only("attribution", "attribution", "logit-attribution", projector))
    return (note, residual_figs.residual_norms(tr, position, projector=projector),
            residual_figs.residual_shares(tr, projector=projector)) + readout
