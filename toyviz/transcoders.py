"""`python -m toyviz.transcoders …`, as the transcoders' card name it: an alias of `toyviz transcoders …` (toyviz.cli)."""
import sys

from toyviz.cli import run
from toyviz.training.transcoders import main  # noqa: F401  (the job itself)

if __name__ == "__main__":
    run("transcoders", sys.argv[1:])
