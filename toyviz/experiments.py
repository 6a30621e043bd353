"""`python -m toyviz.experiments …`, the command the experiments' results give: the code is
toyviz.training.experiments."""
from toyviz.errors import run_command
from toyviz.training.experiments import main

if __name__ == "__main__":
    run_command(main)
