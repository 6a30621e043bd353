"""`python -m toyviz.evaluate …`, as the translator's card name it: an alias of `toyviz evaluate …` (toyviz.cli)."""
import sys

from toyviz.cli import run
from toyviz.training.evaluate import main  # noqa: F401  (the job itself)

if __name__ == "__main__":
    run("evaluate", sys.argv[1:])
