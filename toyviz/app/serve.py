"""`toyviz serve`: the explorer served on http://127.0.0.1:7860 (what the Space's `python app.py` runs).

The server answers first, then warms. This process loads the models and builds the page, and serves it; only
then do the worker processes start (on 2 cores, their start beside this one's made the page wait 18-26 s), and
each draws every tab once for the page's first values as soon as it holds its models (a class opening the link
finds those traces cached). A tab asked for before any worker holds its models is computed in this process,
on its own models (toyviz.app.compute.binder); one asked for before the warm-up reached it is computed then.
Either way the visitor sees the tab, perhaps a little later, never an error.
"""
from __future__ import annotations

import argparse
import os
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

EPILOG = """\
environment:
  TOYVIZ_DEVICE, TOYVIZ_GPT, TOYVIZ_TRANSLATOR, TOYVIZ_WORKERS, TOYVIZ_WORKER_THREADS   defaults of the options above
  GRADIO_SERVER_NAME, GRADIO_SERVER_PORT   host and port (default 127.0.0.1:7860; a Space sets them)
  TOYVIZ_TRUSTED_PROXIES   how many proxies in front may be believed about a visitor's address (1 on a Space)

The checkpoints are found as toyviz.load finds them: a folder, a Hub repo, or the shipped names 'gpt' and
'translator' (checkpoints/ of this checkout, or TOYVIZ_CHECKPOINTS). See docs/serving-a-class.md.
"""


def parser(prog: str = "toyviz serve") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None, help="cpu | cuda (default: TOYVIZ_DEVICE or auto)")
    p.add_argument("--gpt", default=os.environ.get("TOYVIZ_GPT", "gpt"), help="GPT checkpoint folder or Hub repo")
    p.add_argument("--translator", default=os.environ.get("TOYVIZ_TRANSLATOR", "translator"),
                   help="translator checkpoint folder or Hub repo")
    p.add_argument("--workers", type=int, default=int(os.environ.get("TOYVIZ_WORKERS", -1)),
                   help="processes the renderers compute in (default: TOYVIZ_WORKERS or one per CPU the "
                        "container allows, as many as its memory holds; 0: this process)")
    p.add_argument("--worker-threads", type=int, default=int(os.environ.get("TOYVIZ_WORKER_THREADS", 0)),
                   help="torch threads each worker computes with (default: TOYVIZ_WORKER_THREADS or the "
                        "cores shared out among the workers)")
    return p


def main(argv=None, prog: str = "toyviz serve"):
    args = parser(prog).parse_args(argv)
    from toyviz.serving.server import prepare_server
    for problem in prepare_server():    # allocator, interpreter lock, imports: before the models load
        print(f"toyviz: {problem}")
    from toyviz.app import browser_model, page
    from toyviz.app.compute import default_workers, start_workers
    from toyviz.app.explorer import Explorer
    from toyviz.serving.memory import keep_returning_freed_memory
    from toyviz.serving.static import Shelf
    built = browser_model.build_on_a_space()
    if built:
        print(f"toyviz: {built}")
    off = browser_model.missing()
    if off:
        print(f"toyviz: the page's own model is off, the server runs the Sample tab: {off}")
    count = default_workers(args.device) if args.workers < 0 else args.workers
    # started once the page is served (warm_after_serving): until one holds its models, this process computes
    workers = start_workers(count, args.gpt, args.translator, args.device, args.worker_threads,
                            start=False) if count else None
    try:
        explorer = Explorer.load(args.gpt, args.translator, args.device)
        for problem in explorer.models.problems.values():
            print(f"toyviz: {problem}")
        demo = page.build(explorer, workers=workers)
    except BaseException:
        if workers:
            workers.close()              # not left running without a server
        raise
    first = {name: getattr(demo.ui, name).value for tab in page.TABS.values() for name in tab.inputs}
    shelf = Shelf()
    demo.ui.warmed = threading.Event()
    threading.Thread(target=warm_after_serving, args=(demo, explorer, workers, first, shelf), name="toyviz-warm-up",
                     daemon=True).start()
    keep_returning_freed_memory()       # what a class's requests freed goes back to the system every 10 s
    # a page sends 4 queued events as it opens (restore the link, draw the tab, …): at 64 places, 100 students opening
    # the link together (then 6 events each) were refused "queue full" 90 times in 100 (benchmarks.load --browser)
    demo.queue(default_concurrency_limit=demo.ui.at_once, max_size=page.QUEUE_PLACES)
    options = page.launch_options(demo.ui.presenter, shelf)
    print("toyviz: serving; the workers start and every tab is drawn once in the background")
    demo.launch(**options)     # host and port from GRADIO_SERVER_NAME / _PORT (Spaces sets them)


def warm_after_serving(demo, explorer, workers, first: dict, shelf=None) -> list[float]:
    """Once `demo` serves: the model's files compressed (`shelf`: before a Sample tab asks), the workers started,
    and every tab drawn once for the page's first values in each (or here, without workers) → seconds each took;
    `demo.ui.warmed` set at the end, whatever happened. A worker that fails to start is reported (its error is in
    the log above), and the server goes on: this process computes until a worker holds its models, and a worker
    that ended is started again."""
    from toyviz.app.tabs import draw_every_tab
    from toyviz.errors import fault
    try:
        while not demo.is_running:
            time.sleep(0.05)
        if shelf is not None:
            threading.Thread(target=shelf.warm, name="toyviz-compress", daemon=True).start()
        if workers is None:
            seconds = [draw_every_tab(explorer, first)]
        else:
            seconds = workers.start().wait_ready().on_each(draw_every_tab, first)
        print(f"toyviz: every tab drawn once in {max(seconds):.1f} s" + (
            f", in each of {workers.count} worker processes" if workers else ""), flush=True)
        return seconds
    except Exception as err:
        fault("starting and warming the workers", err)
        return []
    finally:
        demo.ui.warmed.set()
