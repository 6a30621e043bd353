"""The two transformers and what they are built from: configs, layers (positions, attention, blocks),
the GPT, the translator, tokenizers, sampling, checkpoints, sizes, activation names and traces.
Models compute; nothing here knows about Gradio, plots or training."""
