"""The models the app shows, loaded once, and a user's input checked against them.

No Gradio here: the app turns `UserError` into a message in the page. Every value that comes
from a browser or the HTTP API passes through `controls.settle`, `clamp` or a check before it reaches a
model, so a wrong type or an absurd number gives a message or a value said to be changed, never a traceback.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from toyviz.api import GPT, Translator
from toyviz.errors import UserError
from toyviz.i18n import Term, mistake, t
from toyviz.models.checkpoint import snapshots
from toyviz.settings.controls import MAX_PROMPT_CHARS, clamp, settle


def _box(box: str) -> Term:
    """A box's name as the messages' catalogue key ("English sentence" → boxes.english_sentence)."""
    return Term("boxes." + box.lower().replace(" ", "_"))


def clean_prompt(text, box: str = "prompt") -> tuple[str, str]:
    """→ (text the model gets, a note for the user or ""). Strips NULs, cuts very long input; `box` names
    the input in the messages ("English sentence", "corrupted prompt")."""
    if not isinstance(text, str):
        raise mistake("errors.not_text", box=_box(box), kind=type(text).__name__)
    note = ""
    if "\x00" in text:
        text, note = text.replace("\x00", ""), "NUL characters were removed. "
    if len(text) > MAX_PROMPT_CHARS:
        note += f"The prompt was cut from {len(text):,} to {MAX_PROMPT_CHARS:,} characters. "
        text = text[:MAX_PROMPT_CHARS]
    if not text.strip():
        raise mistake("errors.empty", box=_box(box))
    return text, note


class Models:
    """The GPT and the translator (either may be missing: its tabs then say why), what the controls are
    sized for, and the controls' values checked against the model on screen."""

    def __init__(self, gpt: GPT | None, translator: Translator | None, problems: dict[str, str] | None = None):
        self.gpt, self.translator = gpt, translator
        self.problems = problems or {}       # "gpt"/"translator" → why it could not be loaded

    def sizes(self) -> SimpleNamespace:
        """What the controls are sized for: the layer and head sliders serve the GPT and both translator
        stacks (so the largest of them), position sliders the GPT's context, the translate tab's pickers
        the translator (its default register first), the snapshot slider the GPT's saved snapshots."""
        gpt = self.gpt.config if self.gpt else None
        tr = self.translator.config if self.translator else None
        depths = [gpt.n_layer] if gpt else []
        depths += [tr.n_encoder_layer, tr.n_decoder_layer] if tr else []
        return SimpleNamespace(
            layers=max(depths, default=1), heads=max([c.n_head for c in (gpt, tr) if c], default=1),
            # without a GPT the controls are those of a 1×1 model, so a request still reaches "no GPT loaded"
            gpt_heads=[f"{l}.{h}" for l in range(gpt.n_layer if gpt else 1) for h in range(gpt.n_head if gpt else 1)],
            context=gpt.context if gpt else 2,
            translator_layers=max(tr.n_encoder_layer, tr.n_decoder_layer) if tr else 1,
            translator_heads=tr.n_head if tr else 1, snapshots=len(self.snapshots()) if gpt else 1,
            translator_registers=self.translator.registers if tr else ("today", "1909"))

    def need_gpt(self) -> GPT:
        if self.gpt is None:
            raise UserError("no GPT checkpoint is loaded: " + self.problems.get(
                "gpt", "run `toyviz train gpt` first"))
        return self.gpt

    def need_translator(self) -> Translator:
        if self.translator is None:
            raise UserError("no translator checkpoint is loaded: " + self.problems.get(
                "translator", "run `toyviz train translator` first"))
        return self.translator

    def snapshots(self) -> list[Path]:
        """Snapshot folders in training order, then the final checkpoint itself."""
        return snapshots(Path(self.need_gpt().source))

    @staticmethod
    def layer_head(view, layer, head) -> tuple[int, int, str]:
        """Layer and head settled against the stack on screen (the sliders are sized for the largest stack), and
        the note saying what was changed (toyviz.settings.controls.settle)."""
        layer, layer_note = settle("layer", layer, high=view.n_layer - 1)
        head, head_note = settle("head", head, high=view.n_head - 1)
        return layer, head, layer_note + head_note

    def ablated_heads(self, choices) -> tuple[tuple[int, int], ...]:
        """The ablation checkboxes' "layer.head" strings → (layer, head) pairs of the GPT."""
        heads = []
        for choice in choices or []:
            layer, _, head = str(choice).partition(".")
            if not (layer.isdigit() and head.isdigit()):
                raise mistake("errors.heads_written", given=repr(choice))
            heads.append((int(layer), int(head)))
        return tuple(heads)

    def translator_layer(self, kind: str, layer) -> tuple[int | None, str]:
        """The translate tab's layer choice ("average" or a number) for the stack `kind` shows → (layer
        or None for the average, a note when the number was past that stack's depth)."""
        if layer in (None, "average"):
            return None, ""
        config = self.need_translator().config
        depth = config.n_encoder_layer if kind == "encoder" else config.n_decoder_layer
        layer = clamp(layer, 0, 10**6, int, "layer")
        if layer < depth:
            return layer, ""
        stack = "encoder" if kind == "encoder" else "decoder"
        return depth - 1, t("notes.translation.last_layer", stack=Term("labels." + stack), depth=depth)

    def token_choice(self, token) -> str | int | None:
        """The token to explain, as the picker or the API gives it: ""/None → the top one; an id; or a
        piece, where a typed word also matches the token with its leading space ("lord" → " lord")."""
        if token is None or (isinstance(token, str) and token == ""):
            return None
        if isinstance(token, (int, float)) or (isinstance(token, str) and token.strip().isdigit()):
            return int(clamp(token, 0, self.need_gpt().config.vocab_size - 1, int, "token id"))
        if not isinstance(token, str):
            raise UserError(f"the token must be text or an id, not {type(token).__name__}")
        tokenizer = self.need_gpt().tokenizer
        for candidate in (token, " " + token.strip(), token.strip()):
            if len(tokenizer.encode(candidate)) == 1:
                return candidate
        raise mistake("errors.one_token", given=repr(token), count=len(tokenizer.encode(token)),
                      pieces=" | ".join(tokenizer.pieces(tokenizer.encode(token))))
