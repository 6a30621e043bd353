"""Tab renderers: one plain function per tab and action, inputs → (note, figures …).

The app binds each of these to its tab's controls and a named HTTP endpoint; tests and tools call
them directly, with no Gradio. Every input arrives as the browser or the API sent it: each renderer
clamps or checks it (toyviz.app.controls, Explorer) before a model sees it, and a user's mistake raises
`UserError` with a message meant for the page.

The figure-returning outputs are plotly figures; text outputs are Markdown or HTML strings.
"""
from __future__ import annotations

import html
import re
import time
from typing import Iterator

from toyviz.interpret import explain
from toyviz.errors import UserError
from toyviz.models.config import GPTConfig
from toyviz.app.controls import DEFAULT_PROMPT, DEFAULT_SOURCE, checked, clamp, setting
from toyviz.app.explorer import BUSY_GENERATIONS, Explorer, clean_prompt
from toyviz.app.figures import attention as attention_figs
from toyviz.app.figures import experiments as experiment_figs
from toyviz.app.figures import explain as explain_figs
from toyviz.app.figures import features as feature_figs
from toyviz.app.figures import layernorm as layernorm_figs
from toyviz.app.figures import mask as mask_figs
from toyviz.app.figures import message, standalone_html, visible
from toyviz.app.figures import model as model_figs
from toyviz.app.figures import positional as positional_figs
from toyviz.app.figures import residual as residual_figs
from toyviz.app.figures import sampling as sampling_figs
from toyviz.app.figures import tokens as token_figs
from toyviz.app.figures import translation as translation_figs
from toyviz.interpret.heads import HeadLabel, general_label, label_heads, why_labels_differ
from toyviz.models.layers import sinusoidal_encoding
from toyviz.models.size import PRESETS, count_parameters, describe_size
from toyviz.serving.files import EXPORTS

LOADED_GPT, LOADED_TRANSLATOR = "this app's GPT", "this app's translator"     # size-calculator presets

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


# ---------------------------------------------------------------- prompt tabs --------------

def tokens_view(explorer: Explorer, prompt, projector=False, model="gpt"):
    tr, note = explorer.view(prompt, model)
    return note, token_figs.token_pieces(tr, projector=projector), token_figs.embedding_norms(tr, projector=projector)


def positions_view(explorer: Explorer, prompt, metric="cosine", projector=False, model="gpt"):
    tr, note = explorer.view(prompt, model)
    config = explorer.need_gpt().config if model == "gpt" else explorer.need_translator().config
    kind = config.positional if model == "gpt" else "sinusoidal"   # the translator's, as in the paper
    table = explorer.gpt.model.pos_emb.weight if model == "gpt" and kind == "learned" else None
    d_model = config.d_model
    encoding = tr.positional if tr.positional is not None else sinusoidal_encoding(len(tr.tokens), d_model)
    if tr.positional is None:
        note += (f"This model adds no position vector ({kind}): the curves and similarities below are the "
                 "sinusoidal table of the original Transformer, for comparison — the translator adds it. ")
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


def head_table(labels: list[HeadLabel], profile: dict | None = None) -> str:
    """The automatic head labels on this prompt as a Markdown table; with a probe profile, each head's
    label over the probe set beside it (does it do this in general, or only here?)."""
    general = (lambda l: "") if profile is None else (lambda l: f" {general_label(profile, l.layer, l.head)} |")
    differ = (lambda l: "") if profile is None else (lambda l: f". *Unlike over the probe set: {why}.*"
                                                     if (why := why_labels_differ(l, profile)) else "")
    rows = "\n".join(f"| {l.layer}.{l.head} | **{l.label}** | {l.score:.2f} | {l.description}{differ(l)} |{general(l)}"
                     for l in labels)
    extra = ("", "") if profile is None else (" over the probe set |", "---|")
    return f"| head | label | score | what it does on this prompt |{extra[0]}\n|---|---|---|---|{extra[1]}\n" + rows


def gpt_only(what: str, title: str, name: str, projector: bool):
    """The figure a GPT-only panel shows while the picker is on a translator stack."""
    return message(f"{what} the GPT's next-token predictions: pick the GPT.", title, filename=f"toyviz-{name}",
                   projector=projector)


def attention_view(explorer: Explorer, prompt, layer=0, head=0, mode="probs", ablate=(), projector=False,
                   model="gpt"):
    tr, note = explorer.view(prompt, model)
    layer, head = explorer.layer_head(tr, layer, head)
    labels = label_heads(tr)
    if model == "gpt":
        heads = explorer.ablated_heads(ablate)
        ablated = explorer.trace(prompt, ablate=heads)[0] if heads else tr
        ablation = attention_figs.ablation_comparison(tr, ablated, explorer.gpt.tokenizer.piece, projector=projector)
    else:
        ablation = gpt_only("Head ablation compares", "Switching heads off", "ablation", projector)
    return (note, attention_figs.attention_grid(tr, mode=mode, labels=labels, projector=projector),
            attention_figs.attention_head(tr, layer, head, mode=mode, projector=projector),
            head_table(labels, explorer.head_profile() if model == "gpt" else None), ablation)


def inside_view(explorer: Explorer, prompt, layer=0, head=0, query=-1, last_word="dream", projector=False):
    tr, note = explorer.trace(prompt)
    layer, head = explorer.layer_head(tr, layer, head)
    query = explorer.position(tr, query, "query")
    masked, edited, unmasked, edited_unmasked = explorer.mask_experiment(prompt, last_word)
    return (note, attention_figs.head_steps(tr, layer, head, query, projector=projector),
            attention_figs.masked_vs_unmasked(tr, unmasked, layer, head, projector=projector),
            mask_figs.leak_figure(masked, edited, unmasked, edited_unmasked, projector=projector))


def layernorm_choices(explorer: Explorer, prompt, model="gpt") -> list[str]:
    """The LayerNorms of the stack on screen, for the norm picker."""
    return list(explorer.view(prompt, model)[0].layernorms)


def spread_note(trace) -> str:
    """What the curves show on this prompt, in numbers: the tab's text must not claim what its chart
    contradicts (it said the output spread does not grow, beside an output std rising to 3 at ln_f)."""
    stats = layernorm_figs.norm_statistics(trace)
    names = list(trace.layernorms)
    inputs, outputs = stats["input std"].mean(-1), stats["output std"].mean(-1)
    inner = outputs[:-1] if len(names) > 1 else outputs
    return (f"Averaged over the tokens, the input std is {inputs[0]:.2f} at `{names[0]}` and {inputs[-1]:.2f} at "
            f"`{names[-1]}`; the output std is {inner.min():.2f}–{inner.max():.2f} at the norms inside the blocks "
            f"and {outputs[-1]:.2f} at `{names[-1]}`. ")


def layernorm_view(explorer: Explorer, prompt, norm_name="block0.ln1", position=-1, projector=False, model="gpt"):
    tr, note = explorer.view(prompt, model)
    names = list(tr.layernorms)
    norm_name = norm_name if norm_name in names else names[0]
    position = explorer.position(tr, position)
    return (note + spread_note(tr), layernorm_figs.layernorm_heatmaps(tr, projector=projector),
            layernorm_figs.layernorm_curves(tr, projector=projector),
            layernorm_figs.layernorm_parameters(tr, norm_name, projector=projector),
            layernorm_figs.layernorm_histogram(tr, norm_name, position, projector=projector))


def residual_view(explorer: Explorer, prompt, position=-1, projector=False, model="gpt"):
    tr, note = explorer.view(prompt, model)
    position = explorer.position(tr, position)
    if model == "gpt":
        gpt = explorer.gpt
        readout = (residual_figs.logit_lens(tr, gpt.model, gpt.tokenizer.piece, projector=projector),
                   residual_figs.logit_attribution(tr, gpt.model, gpt.tokenizer.piece, position, projector=projector))
    else:       # both read the stream through the GPT's final norm and unembedding; the encoder has none
        readout = (gpt_only("The logit lens reads", "Logit lens", "logit-lens", projector),
                   gpt_only("Logit attribution splits", "Logit attribution", "logit-attribution", projector))
    return (note, residual_figs.residual_norms(tr, position, projector=projector),
            residual_figs.residual_shares(tr, projector=projector)) + readout


# ---------------------------------------------------------------- why this token? ----------

def why_choices(explorer: Explorer, prompt) -> list[tuple[str, str]]:
    """The token picker's choices: the top prediction (the default), then the most likely next tokens
    (only the default for a prompt the tab itself rejects: its message says why)."""
    top = [("the top prediction", "")]
    try:
        logits = explorer.trace(prompt)[0].logits[-1]
    except UserError:
        return top
    return top + [(f"{visible(piece)}  ({p:.1%})", piece) for _, piece, p in explain.top_next(explorer.gpt, logits)]


def paragraph_html(segments) -> str:
    """The generated paragraph, each number a link to the panel it comes from."""
    return "<p class='why-paragraph'>" + "".join(
        html.escape(text) if panel is None else f"<a href='#{explain.PANELS[panel]}'>{html.escape(text)}</a>"
        for text, panel in segments) + "</p>"


def sources_html(explorer: Explorer, answer) -> str:
    """The training-text counts for n = 1…4 tokens of context, with example lines (the match in bold)."""
    if answer.sources is None:
        return f"<p id='{explain.PANELS['sources']}'><b>Training-text counts:</b> {html.escape(answer.sources_reason)}.</p>"
    index, _ = explorer.training_index()
    tokenizer = explorer.gpt.tokenizer
    rows = []
    for g in answer.sources:
        context = visible(tokenizer.decode(g.context))
        lines = "<br>".join("…{}<b>{}</b>{}…".format(*map(html.escape, explain.example_text(tokenizer, index, pos, g.n + 1)))
                            for pos in g.examples)
        share = "" if g.share != g.share else f"{g.share:.1%}"
        rows.append(f"<tr><td>{g.n}</td><td><code>{html.escape(context)}</code></td><td>{g.context_count:,}</td>"
                    f"<td>{g.count:,}</td><td>{share}</td><td>{lines}</td></tr>")
    return (f"<div id='{explain.PANELS['sources']}'><p><b>Where it comes from:</b> how often the last n tokens, then "
            f"<code>{html.escape(visible(answer.piece))}</code>, occur in the training plays.</p>"
            "<table class='why-sources'><tr><th>n</th><th>last n tokens</th><th>seen</th><th>then this token</th>"
            "<th>share</th><th>examples</th></tr>" + "".join(rows) + "</table></div>")


def why_token(explorer: Explorer, token) -> str | int:
    """The token box's text → the token explorer.why explains: "" the top prediction; a token of the GPT's
    vocabulary written as the tabs show tokens (␣ a space, ↵ a new line) or as a word ("lord" → "␣lord"), digits
    too ("7" is the token 7: the box takes text, while explorer.why reads digits as an id) → its id. An id given
    as a number (the API) stays an id."""
    if isinstance(token, (int, float)):
        return checked("token_id", token, upper=explorer.need_gpt().config.vocab_size - 1)
    text = str(token).replace("␣", " ").replace("↵", "\n")
    if not text:
        return ""
    tokenizer = explorer.need_gpt().tokenizer
    for candidate in (text, " " + text.strip(), text.strip()):
        if candidate.strip() and len(ids := tokenizer.encode(candidate)) == 1:
            return ids[0]
    pieces = tokenizer.pieces(tokenizer.encode(text))
    raise UserError(f"“{visible(text)}” is not a token of the GPT's vocabulary: the model reads it as {len(pieces)} "
                    f"tokens ({' | '.join(map(visible, pieces))}). Type one token as the other tabs show tokens "
                    "(␣lord is “lord” with the space before it), or pick one from the list")


def why_view(explorer: Explorer, prompt, token="", projector=False):
    """The evidence for one next token: paragraph, components vs. ablation, saliency, logit lens, sources."""
    answer, note = explorer.why(prompt, why_token(explorer, token))
    top = "".join(f"<li>{html.escape(visible(piece))} {p:.1%}</li>" for _, piece, p in answer.top[:5])
    summary = (paragraph_html(explain.paragraph(answer)) +
               f"<details id='{explain.PANELS['prediction']}'><summary>top next tokens</summary><ul>{top}</ul></details>")
    return (note, summary, explain_figs.components_figure(answer.components, projector=projector),
            explain_figs.saliency_figure(answer.saliency, projector=projector),
            explain_figs.lens_figure(answer, projector=projector), sources_html(explorer, answer))


def pair_fields(name) -> list[str]:
    """A prepared patching pair's clean and corrupted prompts and answers (for the four fields)."""
    pair = next((p for p in explain.PAIRS if p.name == name), None)
    if pair is None:
        raise UserError(f"no prepared pair called {name!r}: pick one of the list or type your own")
    return [pair.clean, pair.corrupted, pair.clean_answer, pair.corrupted_answer]


def patching_view(explorer: Explorer, clean, corrupted, clean_answer="", corrupted_answer="", projector=False):
    """Activation patching of the clean prompt into the corrupted one: where the difference lives."""
    result, note = explorer.patching(clean, corrupted, clean_answer, corrupted_answer)
    return (note,) + explain_figs.patching_figures(result, explorer.gpt.tokenizer.piece, projector=projector)


# ---------------------------------------------------------------- features -----------------

LISTED_FEATURES = 12          # features named in the tab's list (the prompt's, a search's, the most frequent)


def feature_line(features, f: int) -> str:
    return f"**#{f}** {features.labels[f]} ({features.data.frequency[f]:.2%} of tokens)"


def feature_list(features, found: list[int], search: str) -> str:
    """The tab's list: the search's hits, or the most frequent features, each with its number."""
    if search.strip():
        head = (f"Features matching **{search.strip()}**:" if found else
                f"No feature matches **{search.strip()}** (its strongest tokens, the tokens it promotes, its label).")
    else:
        head, found = "The most frequent features:", features.by_frequency()
    return head + "\n\n" + "\n".join(f"- {feature_line(features, f)}" for f in found[:LISTED_FEATURES])


def features_view(explorer: Explorer, prompt, feature=-1, search="", projector=False):
    """The prompt's features, one feature's dashboard (-1: the prompt's strongest), and a list to pick from."""
    features = explorer.features()
    found, note = explorer.prompt_features(prompt)
    feature = checked("feature", feature, upper=len(features) - 1, meaning=" (-1 = the prompt's strongest)")
    strongest = found.strongest(LISTED_FEATURES)
    if feature < 0:
        feature = strongest[0] if strongest else features.by_frequency()[0]
    dashboard = features.dashboard(feature)
    m = features.metrics
    about = (f"### Feature #{feature}: {dashboard.label}\nActive on {dashboard.frequency:.2%} of held-out tokens, "
             f"strongest activation {dashboard.max_activation:.2f}. On this prompt: "
             + (", ".join(f"#{f} {features.labels[f]}" for f in strongest[:5]) or "no feature fires") + ".\n\n"
             f"The dictionary: {len(features):,} features at `{m['site']}`, {m['k']} active per token; it explains "
             f"{m['fve']:.0%} of the activations' variance and recovers {m['ce_recovered']:.0%} of the loss when "
             f"spliced in; {m['dead']:.1%} of its features never fire.")
    return (note, feature_figs.prompt_features(found, projector=projector), about,
            feature_figs.top_contexts(dashboard, projector=projector),
            feature_figs.activation_histogram(dashboard, projector=projector),
            feature_figs.logit_effects(dashboard, projector=projector),
            feature_list(features, features.search(str(search or "")), str(search or "")))


# ---------------------------------------------------------------- sampling -----------------

def sampling_settings(temperature, top_k, top_p) -> tuple[float, int, float]:
    """The sampling sliders' values clamped to their ranges (controls.RANGES)."""
    return setting("temperature", temperature), setting("top_k", top_k), setting("top_p", top_p)


def next_token_view(explorer: Explorer, prompt, temperature=0.8, top_k=50, top_p=0.95, projector=False):
    tr, note = explorer.trace(prompt)
    t, k, p = sampling_settings(temperature, top_k, top_p)
    return note, sampling_figs.next_token_bars(tr.logits[-1], explorer.gpt.tokenizer.piece, temperature=t, top_k=k,
                                               top_p=p, projector=projector)


# Live sampling shows the tokens at a reading pace, at most TOKENS_PER_S (a fast CPU flashes 64 tokens up
# in under a second, which hides that the model writes one token at a time; not when more than
# BUSY_GENERATIONS stream at once, where a queue waits for the workers the sleeping streams hold), sends the
# text at most TEXT_EVERY_S apart (tokens that come faster go together) and the figures with the last token
# only. A page sent more updates than it can draw falls behind the server: it freezes, and Stop arrives
# after the generation is over.
# What a page can draw: Gradio's page, for every streamed update, re-reads the value of every component
# that any event has shown a progress for (a structured clone each), so an update costs more with every
# tab a visitor has opened (found with Chromium's CPU profiler). After opening every tab, one update cost
# the page ~45 ms on this 2-core machine: at 32 updates/s the page showed 128 tokens 1.3-1.7 s after they
# arrived, at 12/s it kept up, also with the CPU slowed 2x (a student's laptop; benchmarks.stream.keeping_up).
# So TEXT_EVERY_S is a little under two paced tokens: every update shows two new tokens, 12 a second.
# The server also sends at most UPDATES_PER_S in all, so with many streams each one's interval grows with
# their number: every update costs the server's event loop (Gradio rebuilds every output an update leaves
# unchanged), and a class's 16 streams at 40 a second each kept it busy enough to delay every answer
# (profiled under benchmarks.load).
TOKENS_PER_S, TEXT_EVERY_S, UPDATES_PER_S = 24, 1 / 13, 80


# control characters other than newline and tab, shown in caret notation as the figures show them (raw, a
# browser draws an empty box); the page's sampler writes the same (web/src/figures.js probabilitySpan)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def probability_html(pieces: list[tuple[str, float]]) -> str:
    """Generated text with each token's background as dark as the probability it was drawn with. Only
    spans, no wrapper: each streamed update extends the last one, so Gradio sends just the new spans."""
    caret = lambda m: "^" + chr(ord(m.group()) ^ 0x40)
    return "".join(f'<span class="token-prob" title="p = {p:.3f}" style="background: rgba(99,102,241,'
                   f'{0.12 + 0.6 * p:.2f})">{CONTROL.sub(caret, html.escape(text, quote=False))}</span>'
                   for text, p in pieces)


def steering_feature(explorer: Explorer, feature, alpha) -> int:
    """The steering box's feature number if the dictionary has it (-1: off); a number past it is refused,
    not steered with the nearest feature. Without a dictionary, generating unsteered still works."""
    off = " (-1 = off)"
    try:
        upper = len(explorer.features()) - 1
    except UserError:
        if setting("steer_alpha", alpha) != 0 and checked("steer_feature", feature, 2**31 - 1, off) >= 0:
            raise
        upper = 2**31 - 1
    return checked("steer_feature", feature, upper=upper, meaning=off)


def generate_view(explorer: Explorer, prompt, temperature=0.8, top_k=50, top_p=0.95, max_new=80, seed=0,
                  projector=False, steer_feature=-1, steer_alpha=0.0) -> Iterator[tuple]:
    """Live sampling: yields (note, text HTML, next-token bars, generated-tokens figure) as tokens arrive,
    None meaning "unchanged": the text at most every TEXT_EVERY_S and at most TOKENS_PER_S, the figures
    with the last token. A feature and a strength steer it (the feature's direction added at its layer)."""
    gpt = explorer.need_gpt()
    text, note = clean_prompt(prompt)
    t, k, p = sampling_settings(temperature, top_k, top_p)
    max_new, seed = setting("max_new", max_new), setting("seed", seed)
    steer, steered = explorer.steering(steering_feature(explorer, steer_feature, steer_alpha), steer_alpha)
    note += steered
    pieces, tokens, sent, start = [], [], -1.0, time.perf_counter()
    with explorer.generations():
        # every stream decodes in the server's one batch (toyviz.serving.batching): a class's streams share a forward
        for step in gpt.generate(text, max_new, temperature=t, top_k=k, top_p=p, seed=seed, steer=steer,
                                 together=True, n_top=0):
            pieces.append((step.text, step.prob))
            tokens.append((step.piece, step.prob))
            streaming = explorer.generations.now
            if streaming <= BUSY_GENERATIONS:                      # a class waiting: no time to sleep
                time.sleep(max(0.0, start + len(pieces) / TOKENS_PER_S - time.perf_counter()))
            if time.perf_counter() - sent >= max(TEXT_EVERY_S, streaming / UPDATES_PER_S):
                sent = time.perf_counter()
                yield note, probability_html(pieces), None, None
    # at the end: all the text, the last step's next-token bars, the same tokens as a figure (hover, PNG)
    bars = sampling_figs.next_token_bars(step.logits, gpt.tokenizer.piece, temperature=t, top_k=k, top_p=p,
                                         projector=projector)
    yield note, probability_html(pieces), bars, sampling_figs.generated_tokens(tokens, projector=projector)


def generation_pending(projector=False):
    """The next-token bars and the generated-tokens figure while a generation streams, and after Stop:
    cleared with the reason (the last run's figures would pass for this one's)."""
    when = "when a generation runs to its end (Stop leaves this empty)"
    return (message(f"Drawn {when}:<br>the probabilities after its last token.", "Next token after the generated text",
                    filename="toyviz-sampling", projector=projector),
            message(f"Drawn {when}:<br>each token coloured by its probability.", "The generated tokens",
                    filename="toyviz-generated", projector=projector))


def kv_cache_view(explorer: Explorer, prompt) -> str:
    r = explorer.kv_cache_benchmark(prompt)
    w, wo = r["with_cache"], r["without_cache"]
    return (f"Prompt {r['prompt_tokens']} tokens + {r['new_tokens']} new (greedy): the model processed "
            f"**{w['positions_processed']:,}** token positions with the KV cache and **{wo['positions_processed']:,}** "
            f"without; **{w['tokens_per_second']}** vs **{wo['tokens_per_second']}** tokens/s on this machine. "
            "The cache keeps each layer's keys and values, so a new token only computes its own.")


# ---------------------------------------------------------------- translation --------------

def translate_view(explorer: Explorer, text, beam=4, kind="cross", layer="average", head="average", projector=False):
    out, note = explorer.translate(text, beam)
    layer, layer_note = explorer.translator_layer(kind, layer)
    head = None if head in (None, "average") else clamp(head, 0, explorer.translator.config.n_head - 1, int, "head")
    # saliency is compared with the cross-attention on screen, or with its mean when another map is shown
    cross_layer, cross_head = (layer, head) if kind == "cross" else (None, None)
    compared = (f"layer {cross_layer}" if cross_layer is not None else "mean over layers") + ", " + \
               (f"head {cross_head}" if cross_head is not None else "mean over heads")
    return (note + layer_note, out.text,
            translation_figs.translation_attention(out.trace, kind, layer, head, projector=projector),
            translation_figs.decoding_candidates(out.trace, explorer.translator.tgt_tok.piece, projector=projector),
            translation_figs.saliency_beside_attention(explorer.source_saliency(out, cross_layer, cross_head),
                                                       compared=compared, projector=projector))


# ---------------------------------------------------------------- the model and its training

def snapshot_note(shown: str, earlier: list[str]) -> str:
    """Which training snapshot the Model tab shows, and which others the slider reaches."""
    if not earlier:
        return "The **final** model (this checkpoint holds no earlier training snapshots)."
    return f"Snapshot **{shown}** — the slider reaches {', '.join(earlier)} and the final model."


def model_view(explorer: Explorer, prompt, snapshot=-1, x_axis="step", projector=False):
    gpt = explorer.need_gpt()
    config = gpt.config
    history = explorer.history()
    paths = explorer.snapshots()
    path, tr = explorer.snapshot_trace(setting("snapshot", snapshot, len(paths) - 1) % len(paths), prompt)
    step = path.name if path.name.startswith("step-") else "final"
    return (model_figs.parameter_bars(count_parameters(gpt.model), projector=projector),
            model_figs.attention_memory(config.n_head, n_layer=config.n_layer, context=config.context,
                                        projector=projector),
            model_figs.loss_curve(history, x=x_axis, projector=projector) if history else None,       # + head probes
            snapshot_note(step, [p.name for p in paths[:-1]]),
            attention_figs.attention_grid(tr, projector=projector))


def experiments_view(explorer: Explorer, prompt, variants=("baseline",), x_axis="tokens", projector=False):
    results = explorer.experiment_results()
    text, _ = clean_prompt(prompt)
    try:
        no_mask = explorer.no_mask_model()
    except UserError as err:        # the measurements can still be drawn without its weights
        attention = message(str(err), "No-mask model: attention", filename="toyviz-no-mask-attention",
                            projector=projector)
        sample = str(err)
    else:
        attention = attention_figs.attention_grid(no_mask.trace(text), projector=projector)
        sample = f"**The no-mask model continues the prompt (greedy):** {html.escape(explorer.no_mask_sample(text))}"
    return (experiment_figs.describe(results, list(variants)), experiment_figs.curves(results, list(variants), x_axis,
                                                                      projector=projector),
            experiment_figs.final_bars(results, projector=projector),
            experiment_figs.extrapolation(results, projector=projector),
            experiment_figs.no_mask_bars(results, projector=projector), attention, sample)


# ---------------------------------------------------------------- size calculator ----------

def size_config(explorer: Explorer, preset, layers=12, heads=12, d_model=768, d_ff=0, vocab=50257, context=1024,
                positional="learned", feed_forward="gelu", tied=True):
    """The configuration the calculator describes: a preset's, the app's own models', or the fields'."""
    if preset == LOADED_TRANSLATOR:
        return explorer.need_translator().config
    if preset == LOADED_GPT:
        return explorer.need_gpt().config
    if preset in PRESETS:
        return PRESETS[preset]
    d_model = clamp(d_model, 1, 65536, int, "d_model")
    fields = dict(vocab_size=clamp(vocab, 2, 10**6, int, "vocab"), context=clamp(context, 1, 10**6, int, "context"),
                  n_layer=clamp(layers, 1, 512, int, "layers"), n_head=clamp(heads, 1, d_model, int, "heads"),
                  d_model=d_model, d_ff=clamp(d_ff, 0, 262144, int, "d_ff"), positional=positional,
                  feed_forward=feed_forward, tie_head=bool(tied))
    try:
        return GPTConfig(**fields)
    except ValueError as err:       # their combination: the heads must divide d_model, RoPE needs an even head
        raise UserError(str(err)) from None


def size_view(explorer: Explorer, preset, layers=12, heads=12, d_model=768, d_ff=0, vocab=50257, context=1024,
              positional="learned", feed_forward="gelu", tied=True, projector=False):
    config = size_config(explorer, preset, layers, heads, d_model, d_ff, vocab, context, positional, feed_forward,
                         tied)
    return describe_size(config, preset), model_figs.parameter_bars(count_parameters(config), projector=projector)


def preset_fields(explorer: Explorer, preset) -> list | None:
    """A preset's configuration for the calculator's fields (None: leave the fields as they are). The
    translator fills them per stack: its encoder and decoder each have that many layers."""
    if preset == LOADED_TRANSLATOR and explorer.translator:
        c = explorer.translator.config
        return [c.n_encoder_layer, c.n_head, c.d_model, c.d_ff, c.tgt_vocab_size, c.context, "sinusoidal",
                c.feed_forward, False]
    config = explorer.gpt.config if preset == LOADED_GPT and explorer.gpt else PRESETS.get(preset)
    if config is None:
        return None
    return [config.n_layer, config.n_head, config.d_model, config.d_ff, config.vocab_size, config.context,
            config.positional, config.feed_forward, config.tie_head]


# ---------------------------------------------------------------- export -------------------

def export_page(tab: str, outputs) -> str:
    """A tab's figures (from its renderer's outputs) as one offline HTML page → the file's path."""
    figures = [o for o in outputs if hasattr(o, "to_html")]
    return EXPORTS.write(f"toyviz-{tab}.html", standalone_html(figures, f"toyviz — {tab}"))
