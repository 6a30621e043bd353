"""toyviz explorer: a Gradio app that shows two small transformers at work — the Space's entry.

    python app.py [--device cpu|cuda] [--gpt PATH_OR_REPO] [--translator PATH_OR_REPO]   (= toyviz serve …)

A table of contents; the code lives in the package, so an installed toyviz serves the same page:
- the page (`build`: lesson bar, header, tabs, their events, deep links; `launch_options`: what it is served
  with): toyviz.app.page, over toyviz.app.layout (components), toyviz.app.tabs (which renderer draws each
  tab), toyviz.app.views (the renderers), toyviz.app.widgets (the app's Gradio pieces);
- start-up (`main`: options, worker processes, serving first and warming after): toyviz.app.serve.
"""
import os

# read once, when torch loads MKL: no buffers kept per worker thread (toyviz.serving.memory.mkl_keeps_thread_buffers)
os.environ.setdefault("MKL_DISABLE_FAST_MM", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from toyviz.app.page import (CLEAN_CACHE, CSS, GENERATIONS_AT_ONCE, QUEUE_PLACES, SESSIONS_KEPT,  # noqa: E402,F401
                             UPDATES_AT_ONCE, build, launch_options, registry, wire_actions, wire_circuits,
                             wire_links, wire_tabs)
from toyviz.app.serve import main  # noqa: E402,F401

if __name__ == "__main__":
    from toyviz.errors import run_command
    run_command(main)
