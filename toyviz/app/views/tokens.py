"""The Tokens tab: the prompt's pieces and their embeddings."""
from __future__ import annotations

from toyviz.app.explorer import Explorer
from toyviz.app.figures import tokens as token_figs


def tokens_view(explorer: Explorer, prompt, projector=False, model="gpt"):
    tr, note = explorer.view(prompt, model)
    return note, token_figs.token_pieces(tr, projector=projector), token_figs.embedding_norms(tr, projector=projector)
