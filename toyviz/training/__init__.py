"""Making the shipped checkpoints from the corpora (toyviz.data, below this package): batches, the training loop,
resumable runs, the run record and model card, one module per recipe (gpt, translator, dictionary),
held-out evaluation, the architecture experiments, live runs in front of a class, and the
`toyviz train` command (cli)."""
