from toyviz.errors import run_command
from toyviz.web.export import main

run_command(main)
