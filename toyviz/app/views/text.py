"""The tabs' example prompts and the note a GPT-only panel shows (each tab's explanation is in the language
catalogues, toyviz/locales: toyviz.i18n)."""
from __future__ import annotations

from toyviz.i18n import t
from toyviz.app.figures import message
from toyviz.settings.controls import DEFAULT_PROMPT, DEFAULT_SOURCE


# per tab: (label, prompt) pairs chosen to show that tab's idea on the shipped models
EXAMPLES = {
    "tokens": [("a famous line", DEFAULT_PROMPT),
               ("rare words split into pieces", "Unquestionably, thou art the most incomprehensible gentlewoman"),
               ("names, numbers, capitals", "KING HENRY V. Act IV, Scene 3: 1415, Saint Crispin's day")],
    "positional": [("a short prompt", "To be, or not to be"),
                   ("a long prompt", "Now is the winter of our discontent made glorious summer by this sun of York; "
                                     "and all the clouds that lour'd upon our house in the deep bosom of the ocean buried.")],
    # rare words repeated, as in the probe set's repeated random tokens: the heads labelled induction over the
    # probes are labelled induction here too (on "the king, the queen, the king, …" they parked on BOS instead)
    "attention": [("a repeated phrase (induction)", "Lord Capulet drew his pale sword near the orchard wall. "
                                                    "Lord Capulet drew his pale sword near the orchard"),
                  ("a repeated line", "ROMEO: But soft, what light through yonder window breaks? ROMEO: But soft, "
                                      "what light through yonder"),
                  ("a famous line", DEFAULT_PROMPT)],
    "inside": [("a famous line", DEFAULT_PROMPT),
               ("a repeated phrase", "the king, the queen, the king, the queen, the king, the")],
    "layernorm": [("a famous line", DEFAULT_PROMPT),
                  ("shouting and punctuation", "O! O! O! O!!! WHAT, HO! APOTHECARY!!"),
                  ("the same word again and again", "night night night night night night night night")],
    "why": [("a title and a name", "I thank you, my good"),
            ("a repeated phrase", "the king, the queen, the king, the queen, the king, the"),
            ("a famous line", DEFAULT_PROMPT)],
    "features": [("a famous line", DEFAULT_PROMPT),
                 ("a speaker and a stage direction", "ROMEO.\nBut soft, what light through yonder window breaks?\n\n"
                                                    "Enter JULIET above."),
                 ("thou and thee", "O thou, whose eye doth see thee as thou art, what thinkest thou of me?")],
    "residual": [("an easy next token", "To be, or not to"),
                 ("a speaker's name comes next", "ROMEO: I dreamt a dream to-night.\nMERCUTIO: And so did I.\n"),
                 ("a famous line", DEFAULT_PROMPT)],
    "sample": [("a speech begins", "KING RICHARD III:\nNow is the winter of our discontent"),
               ("a scene begins", "ACT I. SCENE I. Verona. A public place.\n\nEnter"),
               ("a love letter", "My dearest lady, thou art")],
    "text": [("Genesis 1:1", DEFAULT_SOURCE), ("Psalm 23:1", "The Lord is my shepherd; I shall lack nothing."),
             ("John 21:12", "Jesus said to them, Come and eat breakfast."),
             ("an everyday sentence", "The dog runs in the garden.")],
}


def examples(tab: str) -> dict[str, list[str]]:
    """A tab's example inputs and their labels, as gr.Examples' keyword arguments."""
    return {"examples": [text for _, text in EXAMPLES[tab]], "example_labels": [name for name, _ in EXAMPLES[tab]]}


def gpt_only(what: str, title: str, name: str, projector: bool):
    """The figure a GPT-only panel shows while the picker is on a translator stack: `what` and `title` are keys of
    the catalogues' [notes.gpt_only] table (its "…_what" and "…_title" entries)."""
    return message(t("notes.gpt_only.note", what=t(f"notes.gpt_only.{what}_what")), t(f"notes.gpt_only.{title}_title"),
                   filename=f"toyviz-{name}", projector=projector)
