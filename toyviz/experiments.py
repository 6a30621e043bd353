"""`python -m toyviz.experiments …`, as the experiments' results name it: an alias of `toyviz experiments …` (toyviz.cli)."""
import sys

from toyviz.cli import run
from toyviz.training.experiments import main  # noqa: F401  (the job itself)

if __name__ == "__main__":
    run("experiments", sys.argv[1:])
