"""Reading what the models compute: the logit lens, head labels, "why this token?" (explain/), and the
sparse-autoencoder feature dictionary (its training, dashboards and loading)."""
