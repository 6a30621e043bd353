"""The words the tabs show: each tab's explanation, its example prompts, the note a GPT-only panel shows."""
from __future__ import annotations

from toyviz.app.figures import message
from toyviz.settings.controls import DEFAULT_PROMPT, DEFAULT_SOURCE


# each tab's explanation, shown above it
EXPLAIN = {
    "header": "**toyviz — see a transformer work.** A 4-layer GPT trained on Shakespeare and an English→Spanish "
              "translator, both trained from scratch by this project. Type a prompt; every tab explains one idea.",
    "tokens": "The model never sees letters: a byte-level BPE tokenizer, trained on the same text, cuts the prompt "
              "into pieces and each piece becomes a vector. A BOS token (`<|endoftext|>`) always comes first.",
    "positional": "Attention alone cannot tell word order. The original Transformer (and this translator) adds a "
                  "sinusoidal vector to every token, a unique pattern whose dot products depend on distance; this GPT "
                  "instead rotates each query and key by an angle that grows with the position (RoPE), so a score "
                  "depends on how far apart two tokens are. Pick the translator's encoder to see the vectors.",
    "attention": "Each head turns every token into a query and compares it with the keys of the tokens it may see "
                 "(the GPT and the translator's decoder: those before it; the encoder: all of them); the softmax of "
                 "those scores says where the token looks. Switch the GPT's heads off to see what they do.",
    "inside": "One head, one query token, every number the model computed, from its normalised input to its write "
              "into the residual stream. Below: what the causal mask is for.",
    "positional_bugs": "**Why the bugs break position information.** *no_d_model_scaling* computes the "
                       "frequencies as exp(−2i·ln 10000) without dividing by d_model: all but the first few "
                       "dimensions get frequencies near 0, so they are sin(0) = 0 and cos(0) = 1 at every position "
                       "and only two or three dimensions carry position — distant positions collide. "
                       "*cos_overwrites_sin* writes the cosine into the even columns again, so half the "
                       "dimensions stay 0 and cos(pos·f) = cos(−pos·f) cannot tell some positions apart; the "
                       "smallest distance between two positions (in each panel's title) drops accordingly.",
    "no_mask": "**Without the causal mask** every token could read the tokens after it — including the one "
                       "it is trained to predict, so training would teach it to copy. A stack without the mask is "
                       "a bidirectional encoder, as in BERT, which is trained instead to fill in masked-out tokens.",
    "layernorm": "Before each sub-layer, LayerNorm rescales every token's vector to mean 0 and standard deviation 1, "
                 "then applies a learned scale γ and shift β. The input's spread grows with depth; each norm divides "
                 "that growth out, and its γ sets the output's spread anew — so the output std is not 1, and the "
                 "final norm's γ stretches it again for the unembedding (this prompt's numbers are in the note above).",
    "residual": "Every sub-layer adds its output to a running sum, the residual stream; the final norm and the "
                "unembedding read the sum. The writes add up exactly, so each one's share of the prediction can be measured.",
    "sample": "The model outputs one score (logit) per vocabulary entry; temperature divides them before the softmax, "
              "top-k and top-p cut the tail. Low temperature is safe and dull, high is varied and wild.",
    "translate": "**English → the Spanish of the 1909 Reina-Valera Bible, learned from Bible verses alone:** it "
                 "handles verse-like English and stumbles on everyday sentences. The encoder reads the English; the "
                 "decoder writes Spanish one token at a time, looking back at its own output (causal self-attention) "
                 "and at the English (cross-attention).",
    "why": "**Why did the GPT predict this token?** Four kinds of evidence, each checked against the model. "
           "*Attribution* splits the token's logit (minus the mean logit) exactly among the embedding, the heads and "
           "the MLPs of this pass, but it is linear: so each top part is also really removed (zeroed, or replaced by "
           "its mean over positions) and the real drop shown beside it. *Integrated gradients* split the logit's change "
           "from a baseline (the BOS embedding at every position) among the input tokens, completely (the gap is "
           "printed), but another baseline gives another split, and a small score does not mean a token is unused. "
           "The *logit lens* reads the stream after each layer through the final norm. *Training-text counts* say what "
           "the text makes plausible, not that the model recalled it. *Activation patching* (below) shows where the "
           "information that tells two prompts apart lives, and nothing about what they share. Attention weights are "
           "none of these: attention is not explanation.",
    "features": "**Features, not neurons.** A sparse autoencoder, trained by this project on this GPT's activations, "
                "rewrites each token's vector at one layer as a sum of a few directions from a dictionary of thousands; "
                "many of those features fire on one recognisable thing. Each label below is built from numbers (the "
                "token or kind of token its strongest contexts share), not written by anyone, and some features "
                "mean nothing we can name. Steer the Sample tab with one: its direction is added at every position.",
    "experiments": "Small GPTs that differ from a baseline in exactly one thing — positions, feed-forward, norm "
                   "placement, the causal mask — trained on the same data, seed and budget. The sentences below are "
                   "what this run measured, including where it contradicts the course material.",
    "model": "Where the parameters are, how attention memory grows with the square of the length, how training "
             "went, and how attention patterns formed along the way.",
}
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
             ("an everyday sentence (its limits)", "The dog runs in the garden.")],
}


def examples(tab: str) -> dict[str, list[str]]:
    """A tab's example inputs and their labels, as gr.Examples' keyword arguments."""
    return {"examples": [text for _, text in EXAMPLES[tab]], "example_labels": [name for name, _ in EXAMPLES[tab]]}


def gpt_only(what: str, title: str, name: str, projector: bool):
    """The figure a GPT-only panel shows while the picker is on a translator stack."""
    return message(f"{what} the GPT's next-token predictions: pick the GPT.", title, filename=f"toyviz-{name}",
                   projector=projector)
