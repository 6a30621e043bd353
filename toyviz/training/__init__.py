"""Making the shipped checkpoints: corpora and their token caches (data/), batches, the training loop,
resumable runs, the run record and model card, one module per recipe (gpt, translator, dictionary),
held-out evaluation, the architecture experiments, live runs in front of a class, and the
`python -m toyviz.train` command (cli)."""
