"""`python -m toyviz.features …`, the command the dictionary's card gives: the code is
toyviz.training.dictionary."""
from toyviz.errors import run_command
from toyviz.training.dictionary import main

if __name__ == "__main__":
    run_command(main)
