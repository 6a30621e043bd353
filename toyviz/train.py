"""`python -m toyviz.train …`, the command the model cards give: the code is toyviz.training.cli."""
from toyviz.errors import run_command
from toyviz.training.cli import main

if __name__ == "__main__":
    run_command(main)
