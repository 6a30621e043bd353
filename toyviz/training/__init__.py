"""Making the shipped checkpoints: corpora from package registries (data/), the training loop and the
two recipes, resumable runs, held-out evaluation, and the architecture experiments."""
