"""`python -m toyviz.train …`, as the model cards and torchrun's ranks name it: an alias of `toyviz train …` (toyviz.cli)."""
import sys

from toyviz.cli import run
from toyviz.training.cli import main  # noqa: F401  (the job itself)

if __name__ == "__main__":
    run("train", sys.argv[1:])
