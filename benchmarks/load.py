"""A class on one machine: N simulated students against the app on loopback, printed as one JSON line
(a benchmark: nothing here asserts; tests/test_load.py runs a shorter class and asserts on it).

    python -m benchmarks.load [--students 30] [--minutes 2] [--quick] [--timeout 60] [--log FILE]
    python -m benchmarks.load --browser [--cached] [--pages 1] [--students 30] ...

The app runs as its own process, exactly as `python app.py --device cpu` serves it (its queue and
concurrency limits), on 127.0.0.1. Each student is a thread with its own connection to the app's HTTP API
(benchmarks.students.Client: raw HTTP, so that the class costs the machine little) that,
until the time is up, thinks for 1–4 s (uniform) and then does one of:
- tab (60 %): a fresh prompt (the trace cache cannot answer) on /attention, /tokens or /residual;
- generate (25 %): 64 new tokens from a fresh prompt, streamed by /generate;
- translate (15 %): a fresh sentence through /translate with beam 4.
Every request waits at most --timeout seconds (a student who gives up: the job is cancelled).
The students' threads share this process, so on a small machine they take CPU from the server too.
(The students are benchmarks.students, the browser replay benchmarks.replay, the server and its /proc
readers benchmarks.harness.)

- requests: requests sent (answered + errors + client timeouts); requests_per_s: the class's, over its run
- errors: requests the app failed (its error message, a wrong answer, a dropped connection), plus
  students who could not connect; error_messages: the first few, "endpoint: message"
- client_timeouts: requests (or connects) still unanswered after --timeout seconds
- actions: per action (tab, generate, translate) and per tab endpoint (tab/attention …): count of
  answered requests and p50_s/p95_s, seconds from sending to the whole answer (generate: its last
  streamed update), queueing included
- first_token_p50_s / first_token_p95_s: generate only, seconds from sending to the first streamed
  update that holds a generated token (what a student waits before text starts to appear)
- rss_start_mb: the server's resident memory when it first answers (models loaded, nothing served);
  rss_warm_mb: after a warm-up of one request to each endpoint in turn (timed nowhere, but counted in
  requests, errors and timeouts); rss_just_after_mb: right after the last request, while freed memory
  may not have gone back yet; rss_end_mb: SETTLE_S later, once the server's memory keeper has run (what
  the class left behind: caches, fragments, anything leaked); rss_peak_mb: its high-water mark;
  rss_growth_mb = end − start (the target's figure); rss_growth_after_warm_up_mb = end − warm;
  rss_timeline_mb: every 10 s during the class (levelling off = caches filling, still rising = a leak);
  rss_by_mapping_start_mb / _end_mb: resident memory by kind of mapping (heap, anonymous, files, other);
  worker_rss_mb: each worker process's (issue 43) after the warm-up, at the end, and its growth (a worker
  replaced during the class is not in it)
- server_tracebacks: tracebacks in the server's log; server_errors: their final lines, counted;
  server_error_frames: the innermost frame of each, counted (the log is kept with --log)
- burst: after the class, every student presses Generate at the same moment (a lecturer: "now all of
  you"): count, p50_s/p95_s of the whole generation, burst_first_token_p50_s/_p95_s (its errors and
  timeouts count in errors and client_timeouts)
- alive_after: a fresh client's /tokens request answered after the class
- targets (issue 17, 2-core CPU): 0 errors, 0 client timeouts, tab p95 ≤ 3 s, first-token p95 ≤ 2 s,
  RSS growth ≤ 150 MB; each {value, target, met}
- server_cpu_s: CPU seconds (user + system) the server's process used during the class;
  server_cpu_cores: the same over the class's wall time (2.0: both cores of a 2-core machine, all along)
--quick: 8 students for 0.5 minutes (unless --students/--minutes say otherwise).

--browser: the students sample in their browsers (issue 31). What reaches the server from each: a first
visit (the page, its static files and the model's, once: the browser keeps them; then the events the
page sends as it opens), then the server-side actions at the mix's rate: tab 60 % and translate 15 %;
the generate 25 % (sampling, sliders, the live panel) runs in the browser and sends nothing (counted in
in_browser_actions), and so does the closing burst. Simulated, since 100 Chromiums do not fit in 2
cores: a real Chromium page's first visit is recorded before the class (page_files, page_mb: the GETs,
page_events: its queue joins) and each student replays it (the GETs one after another on one keep-alive
connection, every byte read; the joins in a fresh session, waited for until the queue says each
completed: page_load p50_s/p95_s, page_load_errors), then sends its server actions through the HTTP API
as in the default mode. Real: --pages Chromium pages (default 1) open the app a third into the class,
load the model, move the temperature slider and generate 64 tokens in the browser: browser_pages, each
{backend, ready_s, slider_ms, tokens_per_s, queue_requests while sampling}; first_visit_alone: the
recorded page's, before the class.
--cached (with --browser): the students' browsers already hold the model (a visit before the class):
their replay leaves out the graphs, the wasm and the weights, which the page reads from its Cache API.
"""
from __future__ import annotations

import argparse
import collections
import json
import threading
import time

from benchmarks.harness import SETTLE_S, Server, memory_mb, server_errors, spread
from benchmarks.harness import targets as against
from benchmarks.replay import MODEL_FILES, browsers_during_class, open_page, sample_in_browser
from benchmarks.students import (MIX, TAB_ENDPOINTS, TIMEOUT_S, Class, alive, burst, run_class, warm_up)

RSS_EVERY_S = 10.0
TARGETS = {"errors": 0, "client_timeouts": 0, "tab_p95_s": 3.0, "first_token_p95_s": 2.0, "rss_growth_mb": 150.0}


def summarise(out: Class, elapsed: float, stuck: list) -> dict:
    records = out.records
    sent = [r for r in records if r.action not in ("connect", "page") and r.outcome != "in browser"]
    errors = [r for r in records if r.outcome == "error"]
    timeouts = [r for r in records if r.outcome == "timeout"]
    ok = [r for r in sent if r.outcome == "ok"]
    actions = {a: spread([r.seconds for r in ok if r.action == a]) for a, _ in MIX}
    actions.update({f"tab/{e}": spread([r.seconds for r in ok if r.action == "tab" and r.endpoint == e]) for e in TAB_ENDPOINTS})
    first = lambda action: [r.first_token for r in sent if r.action == action and r.outcome == "ok"
                            and r.first_token is not None]
    actions["burst"] = spread([r.seconds for r in ok if r.action == "burst"])
    messages = collections.Counter(f"{r.endpoint}: {r.message}" for r in errors + timeouts)
    in_class = [r for r in sent if r.action in dict(MIX)]
    return {"requests": len(sent), "requests_per_s": round(len(in_class) / elapsed, 2) if elapsed else None,
            "errors": len(errors), "error_messages": [f"{m} (×{n})" for m, n in messages.most_common(5)],
            "client_timeouts": len(timeouts) + len(stuck), "stuck_students": stuck,
            "actions": actions,
            "first_token_p50_s": spread(first("generate"))["p50_s"],
            "first_token_p95_s": spread(first("generate"))["p95_s"],
            "burst_first_token_p50_s": spread(first("burst"))["p50_s"],
            "burst_first_token_p95_s": spread(first("burst"))["p95_s"],
            "elapsed_s": round(elapsed, 1)}


def targets(figures: dict, in_browser: bool = False) -> dict:
    """in_browser: the students generate in their browsers, so no first token comes from the server."""
    value = {"errors": figures["errors"], "client_timeouts": figures["client_timeouts"],
             "tab_p95_s": figures["actions"]["tab"]["p95_s"], "first_token_p95_s": figures["first_token_p95_s"],
             "rss_growth_mb": figures.get("rss_growth_mb")}
    limits = {k: t for k, t in TARGETS.items() if not (in_browser and k == "first_token_p95_s")}
    return against(value, limits, exact=("errors", "client_timeouts"))


def measure(server: Server, students: int, seconds: float, timeout: float = TIMEOUT_S, seed: int = 0,
            pages: int | None = None, cached: bool = False) -> dict:
    """A class of `students` on a running server for `seconds`: every figure in the docstring. pages: None,
    or the students sample in their browsers (--browser) and this many real Chromium pages join them;
    cached: their browsers already hold the model's files (--cached)."""
    start_memory, start_map, out = server.memory_mb(), server.memory_map_mb(), Class()
    warm_up(server.url, timeout, seed, out)
    in_browser, page, meanwhile = pages is not None, None, None
    if in_browser:                                      # what a first visit fetches, from a real Chromium
        from playwright.sync_api import sync_playwright
        from benchmarks import stream
        with sync_playwright() as p:
            browser = stream.launch(p)
            first_visit = sample_in_browser(browser, server.url)
            browser.close()
        if first_visit["backend"] != "browser":
            raise SystemExit(f"the page runs the model on the server: {first_visit.get('reason')}")
        page = first_visit.pop("page")
        if cached:
            page["files"] = [url for url in page["files"] if not url.endswith(MODEL_FILES)]
        browser_pages, meanwhile = browsers_during_class(server.url, pages, seconds)
    warm_memory, timeline, done = server.memory_mb(), [], threading.Event()
    workers_warm = {pid: memory_mb(pid).get("rss") for pid in server.worker_pids()}

    def sample():                                       # does memory level off or keep growing?
        while not done.wait(RSS_EVERY_S):
            timeline.append(round(server.memory_mb().get("rss", 0)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu_start = server.cpu_s()
    arrive = (lambda: open_page(page, timeout)) if page else None          # a first visit, replayed
    out, elapsed, stuck = run_class(server.url, students, seconds, timeout, seed, out, arrive, meanwhile)
    cpu = server.cpu_s() - cpu_start if cpu_start is not None else None
    done.set()
    sampler.join(timeout=5)
    after_memory = server.memory_mb()
    time.sleep(SETTLE_S)                                # what the class left behind, not what it was using
    end_memory, end_map = server.memory_mb(), server.memory_map_mb()   # before the burst's extra clients
    workers_end = {pid: memory_mb(pid).get("rss") for pid in server.worker_pids()}
    if not in_browser:                                  # in the browser, "now all of you" reaches no server
        burst(server.url, students, timeout, seed, out)
    figures = {"students": students, "minutes": round(seconds / 60, 2), "timeout_s": timeout,
               "mode": ("browser, model cached" if cached else "browser") if in_browser else "server", **summarise(out, elapsed, stuck),
               "server_cpu_s": None if cpu is None else round(cpu, 1),
               "server_cpu_cores": None if cpu is None else round(cpu / elapsed, 2)}
    if in_browser:
        loads = [r for r in out.records if r.action == "page"]
        figures.update({"page_files": len(page["files"]), "page_mb": first_visit["page_mb"],
                        "page_events": len(page["events"]),
                        "page_load": spread([r.seconds for r in loads if r.outcome == "ok"]),
                        "page_load_errors": sum(r.outcome != "ok" for r in loads),
                        "in_browser_actions": sum(r.outcome == "in browser" for r in out.records),
                        "first_visit_alone": first_visit, "browser_pages": browser_pages})
    r = lambda x: None if x is None else round(x, 1)
    figures.update({"rss_start_mb": r(start_memory.get("rss")), "rss_warm_mb": r(warm_memory.get("rss")),
                    "rss_just_after_mb": r(after_memory.get("rss")), "rss_end_mb": r(end_memory.get("rss")),
                    "rss_peak_mb": r(end_memory.get("peak")),
                    "rss_growth_mb": r(end_memory["rss"] - start_memory["rss"]) if start_memory and end_memory
                    else None,
                    "rss_growth_after_warm_up_mb": r(end_memory["rss"] - warm_memory["rss"])
                    if warm_memory and end_memory else None, "rss_timeline_mb": timeline,
                    "rss_by_mapping_start_mb": start_map, "rss_by_mapping_end_mb": end_map,
                    # each worker process (toyviz.serving.workers) after the warm-up and at the end
                    "worker_rss_mb": [{"warm": r(workers_warm.get(pid)), "end": r(rss),
                                       "growth_after_warm_up": r(rss - workers_warm[pid])
                                       if rss is not None and workers_warm.get(pid) is not None else None}
                                      for pid, rss in workers_end.items()]})
    figures["alive_after"] = alive(server.url, timeout)
    figures.update(server_errors(server.log()))
    figures["targets"] = targets(figures, in_browser)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=None, help="default 30 (8 with --quick)")
    parser.add_argument("--minutes", type=float, default=None, help="default 2 (0.5 with --quick)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds a student waits for one answer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--log", default=None, help="keep the server's log in this file")
    parser.add_argument("--browser", action="store_true", help="the students sample in their browsers")
    parser.add_argument("--pages", type=int, default=1, help="with --browser: real Chromium pages in the class")
    parser.add_argument("--cached", action="store_true", help="with --browser: the students' browsers hold the model")
    args = parser.parse_args(argv)
    students = args.students or (8 if args.quick else 30)
    minutes = args.minutes or (0.5 if args.quick else 2.0)
    with Server(args.device, log=args.log) as server:
        figures = measure(server, students, minutes * 60, args.timeout, args.seed,
                          args.pages if args.browser else None, args.cached)
    print(json.dumps({**figures, "quick": args.quick}, ensure_ascii=False))


if __name__ == "__main__":
    main()
