"""`python -m toyviz.transcoders …`, the command the transcoders' card gives: the code is
toyviz.interpret.train_transcoders."""
from toyviz.interpret.train_transcoders import main

if __name__ == "__main__":
    main()
