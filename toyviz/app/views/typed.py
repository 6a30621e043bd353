"""A token typed into a box, read the way the tabs show tokens: ␣ for a space, ↵ for a new line, or a plain
word. One reader for every box that takes a token (the Why tab's, the Circuits tab's target), so a student who
copies "␣Slender" from one tab's figure into another's box gets the same token in both."""
from __future__ import annotations

from toyviz.app.figures import visible
from toyviz.i18n import mistake, t


def typed_token(tokenizer, typed) -> tuple[int | None, str]:
    """The box's text → (the token's id, a note), (None, "") when it is empty. Tried in order: the text as
    it is, with a space before it ("lord" → "␣lord", the token a word after another word is), stripped. A word
    that is a token without its space while "␣word" is one too is read as typed, and the note says which
    token that is (the one that starts a line, not the one after a word). A UserError if none is one token."""
    text = str(typed or "").replace("␣", " ").replace("↵", "\n")
    if not text:
        return None, ""
    for candidate in (text, " " + text.strip(), text.strip()):
        if candidate.strip() and len(ids := tokenizer.encode(candidate)) == 1:
            spaced = tokenizer.encode(" " + candidate)
            if candidate[0] != " " and len(spaced) == 1:
                return ids[0], t("notes.typed.without_space", typed=visible(candidate), spaced=visible(" " + candidate))
            return ids[0], ""
    pieces = tokenizer.pieces(tokenizer.encode(text))
    raise mistake("errors.not_a_token", text=visible(text), count=len(pieces), pieces=" | ".join(map(visible, pieces)))
