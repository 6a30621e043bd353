"""How one server process shares its cores among a class's requests.

Gradio answers every request on a worker thread, and all of them share one interpreter lock (the GIL).
A generation or a beam search runs hundreds of small torch operations a token, and each one lets go of
the lock while it runs; when another thread is building plotly figures (pure Python) beside it, taking
the lock back waits for that thread's time slice to end: the switch interval, 5 ms by default. So every
small operation costs up to 5 ms, and a class's generations crawl (`python -m benchmarks.core`:
`busy_tokens_per_s`). A 1 ms slice makes the figure builders hand the lock over sooner, for a little
more switching.

Gradio also tries to import matplotlib around every event and bokeh for every plot's config. Where they
are not installed, each try searched the whole sys.path (~12 % of the event loop's time under a class,
profiled); marked missing, a try fails at once.

And Gradio's queue keeps a record of its last 10,000 events for the monitoring dashboard, and after every
event summarises all of them with pandas (a DataFrame, a groupby, percentiles), holding the lock: 3 ms
with 100 records, 17 ms with 10,000. Its cost per event grew as a Space stayed up until the records were
full, and a client sending refused requests in a loop paid for it with the class's time (21 % of the
interpreter lock's held time with two such clients, profiled with py-spy --gil). Here the queue keeps
1,000 records (the dashboard still shows them, live) and summarises them once every 1,000 events.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys

from toyviz.serving.memory import mkl_keeps_thread_buffers, settle_allocator
from toyviz.serving.sessions import share_default_configs

SWITCH_INTERVAL_S = 0.001


def share_cores() -> None:
    """Threads doing many short torch operations get the lock back within SWITCH_INTERVAL_S."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


OPTIONAL_IMPORTS = ("matplotlib", "bokeh")     # Gradio's, for plots this app does not draw with them


def skip_missing_imports(names=OPTIONAL_IMPORTS) -> list[str]:
    """Each of `names` that is not installed is marked missing (None in sys.modules), so that importing
    it raises ImportError without a search; returns those marked. Installed ones are left alone."""
    missing = [name for name in names if name not in sys.modules and importlib.util.find_spec(name) is None]
    for name in missing:
        sys.modules[name] = None
    return missing


# read by gradio.queueing.Queue when the app's queue is made (demo.queue)
QUEUE_RECORDS = {"GRADIO_ANALYTICS_MAX_EVENTS": "1000", "GRADIO_ANALYTICS_CACHE_FREQUENCY": "1000"}


def summarise_events_rarely() -> None:
    """Gradio's queue keeps and summarises fewer events (unless the environment already says how many)."""
    for name, value in QUEUE_RECORDS.items():
        os.environ.setdefault(name, value)


def prepare_server() -> list[str]:
    """This process set up to serve a class, before the models load: memory a class frees goes back
    (toyviz.serving.memory), the interpreter lock comes back sooner, Gradio's optional imports fail at once,
    its queue summarises its events rarely, its sessions share the page's default config
    (toyviz.serving.sessions), its connections stay open between a page's requests. Returns what could not be set up, one line each."""
    settle_allocator()
    share_cores()
    skip_missing_imports()
    summarise_events_rarely()
    share_default_configs()
    keep_connections_open()
    return ["MKL keeps buffers for every worker thread (torch was loaded before toyviz set "
            "MKL_DISABLE_FAST_MM=1): memory grows with the threads that answer"] if mkl_keeps_thread_buffers() else []


# uvicorn closes a keep-alive connection 5 s after its last response, by a timer on the event loop. When the
# loop is busy for longer (a hall opening the link, before static files were served from memory: 72 s for
# 100 pages), the timer runs late and closes connections whose next request has already arrived unread:
# the kernel answers that with a reset (4 of 9,000 files in a storm of 100). 75 s is nginx's default.
KEEP_ALIVE_S = 75


def keep_connections_open() -> None:
    """Servers made from now on keep a connection open KEEP_ALIVE_S between requests: uvicorn's Config
    defaults to it (Gradio makes the Config and passes no keep-alive of its own). Idempotent."""
    import uvicorn
    made = uvicorn.Config.__init__
    if getattr(made, "keeps_connections_open", False):
        return

    @functools.wraps(made)
    def config(self, *args, **kwargs):
        kwargs.setdefault("timeout_keep_alive", KEEP_ALIVE_S)
        made(self, *args, **kwargs)
    config.keeps_connections_open = True
    uvicorn.Config.__init__ = config
