"""`python -m toyviz.features …`, the command the dictionary's card gives: the code is
toyviz.interpret.train_dictionary."""
from toyviz.interpret.train_dictionary import main

if __name__ == "__main__":
    main()
