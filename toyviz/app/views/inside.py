"""The Inside a head tab: one head's computation step by step, and what the causal mask is for."""
from __future__ import annotations

from toyviz.app.explorer import Explorer
from toyviz.app.figures import inside as inside_figs
from toyviz.app.figures import mask as mask_figs
from toyviz.settings.controls import position


def inside_view(explorer: Explorer, prompt, layer=0, head=0, query=-1, last_word="dream", projector=False):
    tr, note = explorer.caches.trace(prompt)
    layer, head, said = explorer.models.layer_head(tr, layer, head)
    query, query_note = position(query, len(tr.tokens), "notes.query_position")
    note += said + query_note
    masked, edited, unmasked, edited_unmasked = explorer.mask_experiment(prompt, last_word)
    return (note, inside_figs.head_steps(tr, layer, head, query, projector=projector),
            inside_figs.masked_vs_unmasked(tr, unmasked, layer, head, projector=projector),
            mask_figs.leak_figure(masked, edited, unmasked, edited_unmasked, projector=projector))
