"""`python -m toyviz.transcoders …`, the command the transcoders' card gives: the code is
toyviz.training.transcoders."""
from toyviz.errors import run_command
from toyviz.training.transcoders import main

if __name__ == "__main__":
    run_command(main)
