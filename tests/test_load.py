"""A class at once: 20 simulated students on loopback against `python app.py` with the shipped models.

The class is benchmarks/load.py's (same students, same mix: 60 % a fresh prompt on a tab, 25 % a
streamed 64-token generation, 15 % a beam-4 translation, 1–4 s think-times), shorter: 45 s, or
TOYVIZ_LOAD_SECONDS. Every request and connect waits at most TIMEOUT (180 s); the server listens on
127.0.0.1 only and is stopped afterwards. Asserted: no request failed or timed out, no student got
stuck, no traceback in the server's log, the app still answers afterwards. Printed, not asserted:
the benchmark's figures (latency per action, time to first token, RSS) — the targets on speed and
memory belong to `python -m benchmarks.load`, not to a test on a machine that may be busy.

The browser mode's quick class (8 students, 30 s, one real Chromium page; `--browser --quick`):
every student's first visit and server actions answered, none of their sampling sent to the server,
and the real page ran the model in the browser and sampled without a queue request.
"""
import json
import os
import subprocess
import sys
import time

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import pytest

from benchmarks import harness, load, stream, students
from toyviz.app import browser_model
from toyviz.models.checkpoint import CHECKPOINTS

STUDENTS = 20
SECONDS = float(os.environ.get("TOYVIZ_LOAD_SECONDS", "45"))
# a bound for every request and connect: three times the benchmark's student's patience, because this
# test is about correctness under concurrency on whatever CI machine (the benchmark judges speed)
TIMEOUT = 3 * students.TIMEOUT_S

pytestmark = [
    pytest.mark.load,
    pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(),
                       reason="checkpoints/gpt is missing: run `python -m toyviz.train gpt`"),
    pytest.mark.skipif(not (CHECKPOINTS / "translator" / "config.json").is_file(),
                       reason="checkpoints/translator is missing: run `python -m toyviz.train translator`"),
]


# a process that serves as the app does (its allocator settled, the keeper thread started), then frees 200 MB of
# small blocks below one that stays, so the freed pages sit in the middle of its heap until a malloc_trim
FREES_IN_THE_MIDDLE = """
import ctypes, time
from toyviz.serving.memory import glibc, keep_returning_freed_memory, settle_allocator
settle_allocator()
libc = glibc()
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
keep_returning_freed_memory()                 # returns at once, then every RETURN_EVERY_S
blocks = [libc.malloc(64 * 1024) for _ in range(3200)]
for block in blocks:
    ctypes.memset(block, 1, 64 * 1024)        # resident
kept = libc.malloc(64 * 1024)                 # above them all: the heap's top is not what is freed
for block in blocks:
    libc.free(block)
print("freed", flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim and /proc")
def test_the_end_memory_is_read_after_the_servers_keeper_has_run():
    """The benchmarks read a class's end memory SETTLE_S after its last request: by then the server's keeper
    has handed freed pages back, so the figure is what the class left behind, not when the keeper last ran."""
    child = subprocess.Popen([sys.executable, "-c", FREES_IN_THE_MIDDLE], stdout=subprocess.PIPE, text=True,
                             cwd=harness.ROOT)
    try:
        assert child.stdout.readline().strip() == "freed"
        just_after = harness.memory_mb(child.pid)["rss"]
        time.sleep(harness.SETTLE_S)
        settled = harness.memory_mb(child.pid)["rss"]
    finally:
        child.kill()
        child.wait()
    assert just_after - settled > 150, (just_after, settled)          # of the 200 MB freed


def test_a_class_of_twenty_on_loopback(capsys):
    with harness.Server("cpu") as server:
        assert server.url.startswith("http://127.0.0.1:")
        figures = load.measure(server, STUDENTS, SECONDS, TIMEOUT)
        log_tail = server.log_tail()
    with capsys.disabled():
        print("\nload:", json.dumps(figures, ensure_ascii=False))
    assert figures["errors"] == 0, figures["error_messages"]
    assert figures["client_timeouts"] == 0, (figures["error_messages"], figures["stuck_students"])
    assert figures["server_tracebacks"] == 0, (figures["server_errors"], figures["server_error_frames"], log_tail)
    assert figures["requests"] > 0
    assert figures["alive_after"]


@pytest.mark.browser
@pytest.mark.skipif(not stream.available(), reason="needs Debian's chromium and playwright")
@pytest.mark.skipif(browser_model.missing() is not None, reason=str(browser_model.missing()))
def test_a_class_sampling_in_the_browser(capsys):
    students = 8
    with harness.Server("cpu") as server:
        figures = load.measure(server, students, 30, TIMEOUT, pages=1)
        log_tail = server.log_tail()
    with capsys.disabled():
        print("\nload --browser:", json.dumps(figures, ensure_ascii=False))
    assert figures["errors"] == 0, figures["error_messages"]
    assert figures["client_timeouts"] == 0, (figures["error_messages"], figures["stuck_students"])
    assert figures["server_tracebacks"] == 0, (figures["server_errors"], log_tail)
    assert figures["page_load"]["count"] == students and figures["page_events"] > 0
    assert figures["page_files"] > 0 and figures["page_mb"] > 8     # the model's weights came with the page
    assert figures["in_browser_actions"] > 0 and figures["actions"]["generate"]["count"] == 0
    assert figures["actions"]["tab"]["count"] > 0
    [page] = figures["browser_pages"]
    assert page["backend"] == "browser" and page["queue_requests"] == 0 and page["tokens_per_s"] > 0
