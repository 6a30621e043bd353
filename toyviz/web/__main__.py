"""`python -m toyviz.web`, as the docs of the page's model named it: an alias of `toyviz export web` (toyviz.cli)."""
import sys

from toyviz.cli import run

run("export", ["web", *sys.argv[1:]])
