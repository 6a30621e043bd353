"""`python -m toyviz.features …`, as the GPT's card name it: an alias of `toyviz features …` (toyviz.cli)."""
import sys

from toyviz.cli import run
from toyviz.training.dictionary import main  # noqa: F401  (the job itself)

if __name__ == "__main__":
    run("features", sys.argv[1:])
