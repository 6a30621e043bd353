"""A Space left running: a class plus two clients in a loop, watched minute by minute (issue 35). A
benchmark: it prints figures and asserts nothing (tests/test_soak.py runs the short mode and asserts).

    python -m benchmarks.soak [--minutes 30] [--students 30] [--no-hammer] [--quick] [--every 60] [--tree DIR]
                              [--log FILE]

The app runs as benchmarks.load runs it (`python app.py`, its own process on loopback), with a temp
folder and a Gradio cache of its own (TMPDIR, GRADIO_TEMP_DIR under one scratch folder, removed at the
end), so the disk it uses is measured alone. Beside benchmarks.load's class (the same students and mix):
- an exporter: /export in a loop, each file fetched as a browser would, then the next;
- a translator: /translate with beam 8 in a loop.
Neither waits between requests (after a refusal 0.05 s, to spare this process's CPU). A request the app refuses for the visitor's allowance
(toyviz.serving.limits) counts as refused, not as an error.

Every --every seconds one JSON line: minute, disk_mb (the scratch folder: temp files and Gradio's cache),
rss_mb, fds, threads (the server's, from /proc), server_cpu_cores (its CPU seconds over the interval's
wall seconds), class_errors (so far: errors and client timeouts), class_tab_p95_s (tab updates answered
in that interval), and per hammer served/refused/errors so far.
At the end one JSON line: each of those figures at the start (after a warm-up of one request to each
endpoint, idle), warm (after the first interval: caches filled, Gradio's worker threads started, which it
keeps) and the end (SETTLE_S after the last request, idle), and their range; the class's tab p50/p95 over
the run; server_cpu_cores while the class ran; the targets: disk growth start→end ≤ 100 MB, RSS growth
warm→end ≤ 150 MB, file descriptors start→end and threads warm→end at most 5 more, 0 class errors.
`--no-hammer` gives the class's p95 without the hammers, which the hammered run's should be within 1.5× of
(compare the two runs' class_tab_p95_s).
--quick: 6 students for 1.5 minutes, a line every 30 s.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import load
from benchmarks.harness import SETTLE_S, Server, server_errors, spread
from benchmarks.students import TIMEOUT_S, Class, check, fresh_prompt, fresh_source, run_class, warm_up

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

TARGETS = {"disk_growth_mb": 100.0, "rss_growth_after_warm_up_mb": 150.0, "fds_change": 5, "threads_change": 5,
           "class_errors": 0}
BEAM = 8


def folder_mb(folder: Path) -> float:
    total = 0
    for f in Path(folder).rglob("*"):
        try:
            total += f.stat().st_size if f.is_file() else 0
        except OSError:                                        # removed while counted
            pass
    return total / 2 ** 20


class Hammer:
    """One client sending one request after another until stopped: served, refused, errors counted."""

    def __init__(self, name: str, url: str, send, timeout: float):
        self.name, self.url, self.send, self.timeout = name, url, send, timeout
        self.served = self.refused = self.errors = 0
        self.messages: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True, name=f"hammer-{name}")

    def run(self):
        from gradio_client import Client
        from gradio_client.exceptions import AppError
        import httpx
        # gradio_client, for its view of the API (the export's defaults); httpx's 5 s default would fail a
        # busy server's slow answer where a browser keeps waiting
        client = Client(self.url, verbose=False, analytics_enabled=False, download_files=False,
                        httpx_kwargs={"timeout": httpx.Timeout(self.timeout)})
        rng = random.Random(self.name)
        while not self.stop.is_set():
            try:
                self.send(client, rng)
                self.served += 1
            except AppError as err:
                refused = "each visitor may use" in str(err)
                self.refused += refused
                self.errors += not refused
                if not refused and len(self.messages) < 5:
                    self.messages.append(str(err)[:200])
                time.sleep(0.05 if refused else 1)             # a refusal comes back at once
            except Exception as err:                           # noqa: BLE001 — counted, reported
                self.errors += 1
                if len(self.messages) < 5:
                    self.messages.append(repr(err)[:200])
                time.sleep(1)                                  # not a spin on a broken client

    def figures(self) -> dict:
        return {"served": self.served, "refused": self.refused, "errors": self.errors}


def exporter(url: str, timeout: float) -> Hammer:
    """/export with every control at its default (read from the app's API, so the wiring may change) and a
    fresh prompt, then the file fetched."""
    import httpx
    defaults = []

    def send(client, rng):
        if not defaults:
            params = client.view_api(print_info=False, return_format="dict")["named_endpoints"]["/export"]["parameters"]
            defaults.extend(p["parameter_default"] if p.get("parameter_has_default") else "" for p in params)
        args = [fresh_prompt(rng, (10, 50))] + defaults[1:]         # the first is the prompt (the tabs' first)
        update = client.submit(*args, api_name="/export").result(timeout=timeout)
        file_url = update["value"]["url"]
        httpx.get(file_url, timeout=timeout).raise_for_status()
    return Hammer("export", url, send, timeout)


def translator(url: str, timeout: float) -> Hammer:
    def send(client, rng):
        outputs = client.submit(fresh_source(rng), BEAM, "cross", "average", "average", False,
                                api_name="/translate").result(timeout=timeout)
        problem = check("translate", outputs)
        if problem:
            raise RuntimeError(problem)
    return Hammer("translate-beam8", url, send, timeout)


def cpu_cores(before: tuple, after: tuple) -> float | None:
    """CPU seconds over wall seconds between two (wall time, the server's CPU seconds) readings."""
    (t0, cpu0), (t1, cpu1) = before, after
    return None if cpu0 is None or cpu1 is None or t1 <= t0 else round((cpu1 - cpu0) / (t1 - t0), 2)


def soak(server: Server, scratch: Path, students: int, seconds: float, every: float, hammer: bool,
         timeout: float = TIMEOUT_S, seed: int = 0, print_line=print) -> dict:
    out = Class()
    warm_up(server.url, timeout, seed, out)
    hammers = [exporter(server.url, timeout), translator(server.url, timeout)] if hammer else []
    for h in hammers:
        h.thread.start()
    students_thread = threading.Thread(target=run_class, args=(server.url, students, seconds, timeout, seed, out),
                                       daemon=True)
    students_thread.start()
    samples, seen, start = [], 0, time.monotonic()
    cpu_start = server.cpu_s()
    last_cpu = (start, cpu_start)

    def sample():
        nonlocal seen, last_cpu
        records, seen = out.records[seen:], len(out.records)
        tabs = [r.seconds for r in records if r.action == "tab" and r.outcome == "ok"]
        failed = sum(r.outcome != "ok" for r in out.records if r.action != "warm-up")
        now, cpu = time.monotonic(), server.cpu_s()
        cores = cpu_cores(last_cpu, (now, cpu)) if now - last_cpu[0] > 1 else None
        last_cpu = (now, cpu)
        line = {"minute": round((now - start) / 60, 1), "disk_mb": round(folder_mb(scratch), 1),
                "rss_mb": round(server.memory_mb().get("rss", 0)), **server.descriptors_and_threads(),
                "server_cpu_cores": cores, "class_errors": failed, "class_tab_p95_s": spread(tabs)["p95_s"],
                **{h.name: h.figures() for h in hammers}}
        samples.append(line)
        print_line(json.dumps(line))

    sample()                                                  # after the warm-up: the baseline
    while students_thread.is_alive():
        students_thread.join(timeout=every)
        if students_thread.is_alive() or time.monotonic() - start >= seconds:
            sample()
    class_cpu = (time.monotonic() - start, server.cpu_s())
    for h in hammers:
        h.stop.set()
    for h in hammers:
        h.thread.join(timeout=2 * timeout)
    time.sleep(SETTLE_S)                                 # the memory keeper's turn, as benchmarks.load
    sample()
    start, warm, end = samples[0], samples[min(1, len(samples) - 1)], samples[-1]
    tabs = [r.seconds for r in out.records if r.action == "tab" and r.outcome == "ok"]
    class_figures = load.summarise(out, seconds, [])
    keys = ("disk_mb", "rss_mb", "fds", "threads")
    figures = {"students": students, "minutes": round(seconds / 60, 2), "hammer": hammer,
               **{f"{k}_start_warm_end": [s.get(k) for s in (start, warm, end)] for k in keys},
               **{f"{k}_range": [min(s.get(k, 0) for s in samples), max(s.get(k, 0) for s in samples)] for k in keys},
               # disk and descriptors: idle before against idle after (a file or socket left open stays);
               # memory and threads: against the warm server (caches filled, Gradio's worker threads started
               # by the first minute, which it keeps idle)
               "disk_growth_mb": round(end["disk_mb"] - start["disk_mb"], 1),
               "rss_growth_after_warm_up_mb": end["rss_mb"] - warm["rss_mb"],
               "fds_change": end.get("fds", 0) - start.get("fds", 0),
               "threads_change": end.get("threads", 0) - warm.get("threads", 0),
               "class_requests": class_figures["requests"], "class_errors": end["class_errors"],
               "class_error_messages": class_figures["error_messages"],
               "class_tab_p95_s": spread(tabs)["p95_s"], "class_tab_p50_s": spread(tabs)["p50_s"],
               "server_cpu_cores": cpu_cores((0.0, cpu_start), class_cpu),
               **{h.name: {**h.figures(), "messages": h.messages} for h in hammers},
               "server_tracebacks": server_errors(server.log())["server_tracebacks"]}
    # growth only: memory, descriptors and threads fall back when the class leaves (Gradio retires idle workers)
    figures["targets"] = {k: {"value": figures[k], "target": t, "met": figures[k] <= t} for k, t in TARGETS.items()}
    return figures


def run(students: int, minutes: float, every: float, hammer: bool = True, timeout: float = TIMEOUT_S,
        tree: str | None = None, log: str | None = None, print_line=print) -> dict:
    """The app (from `tree`, a checkout, or this one) soaked with a scratch temp folder and Gradio cache of
    its own, both removed after."""
    scratch = Path(tempfile.mkdtemp(prefix="toyviz-soak-"))
    for name in ("tmp", "gradio"):
        (scratch / name).mkdir()
    try:
        # the server's temp files and Gradio cache go to the scratch folder; this process's stay where they were
        with Server(log=log, root=tree, env={"TMPDIR": str(scratch / "tmp"),
                                             "GRADIO_TEMP_DIR": str(scratch / "gradio")}) as server:
            return soak(server, scratch, students, minutes * 60, every, hammer, timeout, print_line=print_line)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=None, help="default 30 (1.5 with --quick)")
    parser.add_argument("--students", type=int, default=None, help="default 30 (6 with --quick)")
    parser.add_argument("--every", type=float, default=None, help="seconds between lines (60; 30 with --quick)")
    parser.add_argument("--no-hammer", action="store_true", help="the class alone: its p95 to compare with")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S)
    parser.add_argument("--tree", default=None, help="serve app.py from this checkout (e.g. a git worktree of "
                                                     "the code before a change)")
    parser.add_argument("--log", default=None, help="keep the server's log in this file")
    args = parser.parse_args(argv)
    figures = run(args.students or (6 if args.quick else 30), args.minutes or (1.5 if args.quick else 30.0),
                  args.every or (30.0 if args.quick else 60.0), not args.no_hammer, args.timeout, args.tree, args.log)
    print(json.dumps({**figures, "quick": args.quick}, ensure_ascii=False))


if __name__ == "__main__":
    main()
