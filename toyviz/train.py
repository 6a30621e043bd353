"""`python -m toyviz.train …`, the command the model cards give: the training code is toyviz.training.train."""
from toyviz.training.train import main

if __name__ == "__main__":
    main()
