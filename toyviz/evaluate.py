"""`python -m toyviz.evaluate …`, the command the model cards give: the code is toyviz.training.evaluate."""
from toyviz.errors import run_command
from toyviz.training.evaluate import main

if __name__ == "__main__":
    run_command(main)
