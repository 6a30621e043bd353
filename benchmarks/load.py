"""A class on one machine: N simulated students against the app on loopback, printed as one JSON line
(a benchmark: nothing here asserts; tests/test_load.py runs a shorter class and asserts on it).

    python -m benchmarks.load [--students 30] [--minutes 2] [--quick] [--timeout 60] [--log FILE]
    python -m benchmarks.load --browser [--cached] [--pages 1] [--students 30] ...

The app runs as its own process, exactly as `python app.py --device cpu` serves it (its queue and
concurrency limits), on 127.0.0.1. Each student is a thread with its own gradio_client Client that,
until the time is up, thinks for 1–4 s (uniform) and then does one of:
- tab (60 %): a fresh prompt (the trace cache cannot answer) on /attention, /tokens or /residual;
- generate (25 %): 64 new tokens from a fresh prompt, streamed by /generate;
- translate (15 %): a fresh sentence through /translate with beam 4.
Every request waits at most --timeout seconds (a student who gives up: the job is cancelled).
The students' threads share this process, so on a small machine they take CPU from the server too.

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
  rss_by_mapping_start_mb / _end_mb: resident memory by kind of mapping (heap, anonymous, files, other)
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
completed: page_load p50_s/p95_s, page_load_errors), then sends its server actions through gradio_client
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
import concurrent.futures
import json
import math
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")          # before gradio_client is imported

ROOT = Path(__file__).resolve().parent.parent
MIX = (("tab", 0.60), ("generate", 0.25), ("translate", 0.15))
IN_BROWSER = {"generate"}         # what --browser students do in their browsers: no request to the server
TAB_ENDPOINTS = ("attention", "tokens", "residual")
THINK_S = (1.0, 4.0)
NEW_TOKENS = 64
BEAM = 4
TIMEOUT_S = 60.0
RSS_EVERY_S = 10.0
# the end's memory is read once the server has been idle this long, so that its keeper has handed the pages
# of freed blocks back (toyviz.serving.memory.RETURN_EVERY_S): read at once, the figure depends on when the keeper
# last ran (+92 and +230 MB in two runs of the same code), not on what the class left behind
SETTLE_S = 12.0                  # > RETURN_EVERY_S (10 s; not imported: this process has no torch)
POLL_S = 0.02                    # how often a streaming generation is looked at (time-to-first-token resolution)
TARGETS = {"errors": 0, "client_timeouts": 0, "tab_p95_s": 3.0, "first_token_p95_s": 2.0, "rss_growth_mb": 150.0}

OPENINGS = ["To be, or not to be", "ROMEO: But soft, what light", "Now is the winter of our discontent",
            "Friends, Romans, countrymen", "All the world's a stage", "Once more unto the breach",
            "KING LEAR: Blow, winds", "HAMLET: O, what a rogue", "JULIET: Wherefore art thou", "MACBETH: Is this"]
WORDS = ("love honour night crown blood sword king queen fair sweet death heaven earth gentle noble speak tongue "
         "heart eyes fortune grace friend foe time lord lady father son brother sister gold war peace sleep dream "
         "soul fool wise old young tears joy storm sea moon sun star ghost grave poison letter ring dagger").split()
SOURCES = ["The Lord is my shepherd", "In the beginning God created the heavens", "Jesus said to them, Come",
           "And God said, Let there be light", "Blessed are the poor in spirit", "The people went out to the sea",
           "And the king spoke to his servants", "Love your neighbour as yourself"]
NOUNS = ["the earth", "the city", "his house", "the water", "the children", "the mountain", "the bread",
         "the temple", "the field", "the night", "the women", "the river", "the gate", "the land", "the fire"]


# ---------------------------------------------------------------------------- the server -------

class Server:
    """`python app.py` on a free loopback port, its output in a log file; use as a context manager."""

    def __init__(self, device: str = "cpu", start_timeout: float = 240.0, log: str | Path | None = None):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.keep_log = log is not None
        self.log_path = Path(log) if log else Path(tempfile.mkstemp(prefix="toyviz-load-", suffix=".log")[1])
        env = dict(os.environ, GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(self.port),
                   GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "app.py", "--device", device], cwd=ROOT, env=env,
                                         stdout=out, stderr=subprocess.STDOUT)
        try:
            self._wait_until_up(start_timeout)
        except BaseException:
            self.close()
            raise

    def _wait_until_up(self, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app.py exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "config", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"app.py did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def memory_mb(self) -> dict:
        """Resident memory now and its high-water mark, MB (Linux /proc; {} elsewhere)."""
        try:
            lines = Path(f"/proc/{self.proc.pid}/status").read_text().splitlines()
        except OSError:
            return {}
        kb = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in lines) if k in ("VmRSS", "VmHWM")}
        return {"rss": kb.get("VmRSS", 0) / 1024, "peak": kb.get("VmHWM", 0) / 1024}

    def cpu_s(self) -> float | None:
        """CPU seconds (user + system, all threads) the server has used so far (Linux /proc; None elsewhere)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")      # utime, stime

    def memory_map_mb(self) -> dict:
        """Resident memory by kind of mapping, MB, from /proc/PID/smaps ({} elsewhere): "heap" (the main
        heap), "anonymous" (other malloc heaps, large allocations mapped on their own, thread stacks),
        "files" (libraries, mapped files) and "other" ([stack], [vdso] ...); where growth goes."""
        try:
            lines = Path(f"/proc/{self.proc.pid}/smaps").read_text().splitlines()
        except OSError:
            return {}
        kinds, kind = collections.Counter(), "other"
        for line in lines:
            fields = line.split()
            if fields and "-" in fields[0] and not fields[0].endswith(":"):        # a mapping's header
                name = fields[5] if len(fields) > 5 else ""
                kind = ("heap" if name == "[heap]" else "anonymous" if not name else
                        "other" if name.startswith("[") else "files")
            elif fields and fields[0] == "Rss:":
                kinds[kind] += int(fields[1]) / 1024
        return {k: round(v, 1) for k, v in sorted(kinds.items())}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, chars: int = 3000) -> str:
        return self.log()[-chars:]

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        if not self.keep_log:
            self.log_path.unlink(missing_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def server_errors(log: str) -> dict:
    """Tracebacks in a server log: how many, their final lines and innermost frames, counted."""
    finals, frames = collections.Counter(), collections.Counter()
    blocks = log.split("Traceback (most recent call last):")[1:]
    for block in blocks:
        lines = block.splitlines()
        frame_lines = [i for i, line in enumerate(lines) if line.startswith('  File "')]
        if frame_lines:
            i = frame_lines[-1]
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            frames[f"{lines[i].strip()}: {code}"[:300]] += 1
        final = next((line for line in lines[1:] if line and not line.startswith((" ", "\t", "^"))), "?")
        finals[final.strip()[:200]] += 1
    return {"server_tracebacks": len(blocks), "server_errors": dict(finals.most_common(8)),
            "server_error_frames": dict(frames.most_common(5))}


# ---------------------------------------------------------------------------- the students -----

@dataclass
class Record:
    action: str                     # tab / generate / translate / connect
    endpoint: str
    outcome: str                    # ok / error / timeout
    seconds: float
    first_token: float | None = None
    message: str = ""


@dataclass
class Class:
    records: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: Record):
        with self.lock:
            self.records.append(record)


def connect(url: str, timeout: float):
    from gradio_client import Client
    import httpx
    # httpx's default 5 s would fail a busy server's slow answer where a browser keeps waiting
    return Client(url, verbose=False, analytics_enabled=False, download_files=False,
                  httpx_kwargs={"timeout": httpx.Timeout(timeout)})


def connect_failure(err: Exception, start: float) -> Record:
    import httpx
    outcome = "timeout" if isinstance(err, httpx.TimeoutException) else "error"
    return Record("connect", "connect", outcome, time.monotonic() - start, message=f"connect: {err!r}"[:300])


def fresh_prompt(rng: random.Random, words: tuple[int, int]) -> str:
    return f"{rng.choice(OPENINGS)}, " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(*words)))


def fresh_source(rng: random.Random) -> str:
    return f"{rng.choice(SOURCES)} {rng.choice(['to', 'in', 'from', 'by'])} {rng.choice(NOUNS)} " \
           f"and {rng.choice(NOUNS)}."


def request_args(action: str, rng: random.Random, endpoint: str | None = None) -> tuple[str, tuple]:
    """The endpoint (for a tab: this one, else a random one) and inputs of one action with fresh text."""
    if action == "generate":
        return "generate", (fresh_prompt(rng, (3, 15)), 0.8, 50, 0.95, NEW_TOKENS, rng.randrange(10**6), False)
    if action == "translate":
        return "translate", (fresh_source(rng), BEAM, "cross", "average", "average", False)
    endpoint, prompt = endpoint or rng.choice(TAB_ENDPOINTS), fresh_prompt(rng, (10, 50))
    if endpoint == "attention":
        return endpoint, (prompt, rng.randrange(4), rng.randrange(4), "probs", [], False, "gpt")
    if endpoint == "residual":
        return endpoint, (prompt, -1, False, "gpt")
    return endpoint, (prompt, False, "gpt")


def check(endpoint: str, outputs) -> str:
    """'' if the answer looks right, else what is wrong with it."""
    if endpoint == "generate":
        n = outputs[1].count('class="token-prob"') if isinstance(outputs[1], str) else 0
        return "" if n == NEW_TOKENS else f"wrong answer: {n} generated tokens, not {NEW_TOKENS}"
    plot = outputs[2] if endpoint == "translate" else outputs[1]
    if endpoint == "translate" and not (isinstance(outputs[1], str) and outputs[1].strip()):
        return "wrong answer: no translation"
    return "" if isinstance(plot, dict) and plot.get("type") == "plotly" else f"wrong answer: {str(plot)[:80]}"


def has_token(update) -> bool:
    return isinstance(update, (tuple, list)) and len(update) > 1 and isinstance(update[1], str) \
        and 'class="token-prob"' in update[1]


def request(client, action: str, endpoint: str, args: tuple, timeout: float) -> Record:
    """One request, bounded by timeout; a timed-out job is cancelled (the student left)."""
    from gradio_client.exceptions import AppError
    import httpx
    start = time.monotonic()
    first = None
    job = None
    try:
        job = client.submit(*args, api_name=f"/{endpoint}")
        if action == "generate":                        # watch the stream for the first generated token
            while not job.done():
                if first is None and any(has_token(u) for u in list(job.outputs())):
                    first = time.monotonic() - start
                if time.monotonic() - start > timeout:
                    raise concurrent.futures.TimeoutError
                time.sleep(POLL_S)
        outputs = job.result(timeout=max(0.0, timeout - (time.monotonic() - start)))
        seconds = time.monotonic() - start
        if action == "generate" and first is None:
            first = seconds if has_token(outputs) else None
        problem = check(endpoint, outputs)
        return Record(action, endpoint, "error" if problem else "ok", seconds, first, problem)
    except (concurrent.futures.TimeoutError, TimeoutError, httpx.TimeoutException) as err:
        if job is not None:
            try:
                job.cancel()
            except Exception:                                          # noqa: BLE001 — best effort
                pass
        return Record(action, endpoint, "timeout", time.monotonic() - start, first, f"timeout: {err!r}"[:200])
    except AppError as err:
        return Record(action, endpoint, "error", time.monotonic() - start, first, f"app error: {err}"[:300])
    except Exception as err:                                           # noqa: BLE001 — counted, reported
        return Record(action, endpoint, "error", time.monotonic() - start, first, repr(err)[:300])


def open_page(page: dict, timeout: float) -> Record:
    """A first visit as the server sees it: page["files"] GET one after another on one keep-alive connection,
    every byte read; then the events the page sends as it opens (page["events"]: queue joins as recorded)
    in a fresh session, answered when the queue says each completed."""
    import httpx
    start, session = time.monotonic(), f"load{random.getrandbits(40):x}"
    try:
        with httpx.Client(timeout=timeout) as http:
            for url in page["files"]:
                with http.stream("GET", url) as response:
                    response.raise_for_status()
                    for _ in response.iter_bytes():
                        pass
            pending = set()
            for url, body in page["events"]:
                joined = http.post(url, json={**body, "session_hash": session})
                joined.raise_for_status()
                pending.add(joined.json()["event_id"])
            with http.stream("GET", page["stream"], params={"session_hash": session}) as response:
                for line in response.iter_lines():
                    message = json.loads(line[5:]) if line.startswith("data:") else {}
                    if message.get("msg") == "process_completed":
                        if not message.get("success", False):
                            raise RuntimeError(f"an event failed: {str(message.get('output'))[:200]}")
                        pending.discard(message.get("event_id"))
                        if not pending:
                            break
        return Record("page", "page", "ok", time.monotonic() - start)
    except httpx.TimeoutException as err:
        return Record("page", "page", "timeout", time.monotonic() - start, message=repr(err)[:300])
    except Exception as err:                                           # noqa: BLE001 — counted, reported
        return Record("page", "page", "error", time.monotonic() - start, message=repr(err)[:300])


def student(url: str, n: int, deadline: float, timeout: float, seed: int, out: Class, page: dict | None):
    """page: what a first visit sends (open_page), for a student who samples in the browser (--browser)."""
    rng = random.Random(seed * 100_003 + n)
    if page:                                          # a class opens the link within a few seconds
        time.sleep(rng.uniform(0, THINK_S[1]))
        out.add(open_page(page, timeout))
    start = time.monotonic()
    try:
        client = connect(url, timeout)
    except Exception as err:                                           # noqa: BLE001 — counted, reported
        out.add(connect_failure(err, start))
        return
    if not page:
        time.sleep(rng.uniform(0, THINK_S[1]))
    while time.monotonic() < deadline:
        action = rng.choices([a for a, _ in MIX], [w for _, w in MIX])[0]
        if page and action in IN_BROWSER:
            out.add(Record(action, "browser", "in browser", 0.0))
        else:
            endpoint, args = request_args(action, rng)
            out.add(request(client, action, endpoint, args, timeout))
        time.sleep(rng.uniform(*THINK_S))
    try:
        client.close()
    except Exception:                                                  # noqa: BLE001 — best effort
        pass


def run_class(url: str, students: int, seconds: float, timeout: float = TIMEOUT_S, seed: int = 0,
              out: Class | None = None, page: dict | None = None, meanwhile=None) -> tuple[Class, float, list]:
    """Students on url for `seconds` (page: see student); returns their records (added to out), the wall
    time and any student thread still stuck. meanwhile(): run in this thread while the class goes on."""
    out, started = out or Class(), time.monotonic()
    deadline = started + seconds
    threads = [threading.Thread(target=student, args=(url, n, deadline, timeout, seed, out, page), daemon=True,
                                name=f"student-{n}") for n in range(students)]
    for t in threads:
        t.start()
    if meanwhile is not None:
        meanwhile()
    for t in threads:                     # a request may start just before the deadline; connects too
        t.join(timeout=max(0.1, deadline + 2 * timeout + THINK_S[1] + 10 - time.monotonic()))
    return out, time.monotonic() - started, [t.name for t in threads if t.is_alive()]


def warm_up(url: str, timeout: float, seed: int, out: Class):
    """One request to each endpoint in turn, before the class: what the server allocates once
    (lazy imports, first buffers) then shows in rss_warm_mb, not as growth under load."""
    rng = random.Random(-1 - seed)
    try:
        client = connect(url, timeout)
    except Exception as err:                                           # noqa: BLE001 — counted, reported
        out.add(connect_failure(err, time.monotonic()))
        return
    for action, endpoint in [("tab", e) for e in TAB_ENDPOINTS] + [("generate", None), ("translate", None)]:
        endpoint, args = request_args(action, rng, endpoint)
        record = request(client, action, endpoint, args, timeout)
        record.action = "warm-up"                     # counted as a request (and error, timeout), not timed
        out.add(record)
    try:
        client.close()
    except Exception:                                                  # noqa: BLE001 — best effort
        pass


def burst(url: str, students: int, timeout: float, seed: int, out: Class):
    """Every student connected, then all press Generate at once (records with action "burst")."""
    rng, clients = random.Random(-2 - seed), []
    for _ in range(students):
        start = time.monotonic()
        try:
            clients.append(connect(url, timeout))
        except Exception as err:                                       # noqa: BLE001 — counted, reported
            out.add(connect_failure(err, start))
    requests = [request_args("generate", rng) for _ in clients]
    together = threading.Barrier(len(clients) or 1)

    def press(client, endpoint, args):
        together.wait()
        record = request(client, "generate", endpoint, args, timeout)
        record.action = "burst"
        out.add(record)
    threads = [threading.Thread(target=press, args=(c, *r), daemon=True) for c, r in zip(clients, requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=2 * timeout)
    for client in clients:
        try:
            client.close()
        except Exception:                                              # noqa: BLE001 — best effort
            pass


def alive(url: str, timeout: float) -> bool:
    try:
        outputs = connect(url, timeout).submit("Still there?", False, "gpt", api_name="/tokens").result(timeout=timeout)
        return not check("tokens", outputs)
    except Exception:                                                  # noqa: BLE001 — the answer is False
        return False


# ---------------------------------------------------------------------------- real browsers ----

NOT_FILES = ("/queue/", "/heartbeat", "/upload", "/stream/", "/run/", "/call/")   # a page's requests that are not files
MODEL_FILES = (".onnx", "model.safetensors", ".wasm.gz")   # what the page keeps in its Cache API after a first visit


def sample_in_browser(browser, url: str) -> dict:
    """A real Chromium page, fresh profile: open the Sample tab, load the model, move the temperature slider
    and generate 64 tokens in the browser → {backend, ready_s, slider_ms, tokens_per_s, queue_requests while
    sampling, page_mb, page: what it sent until its tab was drawn (open_page replays it)}."""
    from benchmarks.browser import GENERATE, SLIDER
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    files, sizes, events = {}, [], []

    def fetched(r):                                   # blob: and data: urls never reach the server
        if r.method == "GET" and r.url.startswith("http") and not any(part in r.url for part in NOT_FILES):
            files[r.url] = None
            sizes.append(r.sizes()["responseBodySize"])

    def sent(r):                                      # the events the page sends as it opens
        if "/queue/join" in r.url:
            events.append((r.url, json.loads(r.post_data)))
    context.on("requestfinished", fetched)
    context.on("request", sent)
    page = context.new_page()
    try:
        page.goto(f"{url.rstrip('/')}/?tab=sample", wait_until="domcontentloaded", timeout=180_000)
        page.wait_for_function("window.toyviz !== undefined", timeout=180_000)
        backend = page.evaluate("window.toyviz.ready")
        figures = {"backend": backend, "ready_s": round(page.evaluate("window.toyviz.readyAt") / 1000, 2)}
        if backend != "browser":
            return {**figures, "reason": page.evaluate("window.toyviz.reason")}
        page.wait_for_function("window.toyviz.shownAt !== undefined", timeout=180_000)
        page.locator("#bars-plot .gtitle").first.wait_for(timeout=180_000)      # the server's own plot: tab drawn
        page.wait_for_timeout(500)
        context.remove_listener("requestfinished", fetched)
        context.remove_listener("request", sent)
        queue = []
        page.on("request", lambda r: queue.append(r.url) if "/queue/" in r.url or "/run/" in r.url else None)
        slider = sorted(page.evaluate(SLIDER, 0.5 + i / 10) for i in range(10))
        run = page.evaluate(GENERATE, [NEW_TOKENS, 0])
        stream = events[0][0].split("/queue/join")[0] + "/queue/data" if events else None
        return {**figures, "slider_ms": round(slider[len(slider) // 2], 1),
                "tokens_per_s": round(len(run["tokens"]) / run["seconds"], 1), "queue_requests": len(queue),
                "page_mb": round(sum(sizes) / 1e6, 2),
                "page": {"files": list(files), "events": events, "stream": stream}}
    finally:
        context.close()


def browsers_during_class(url: str, pages: int, seconds: float) -> tuple[list, callable]:
    """→ (their figures, filled in as they run; meanwhile(): from a third into the class, `pages` real
    Chromium pages one after another, each a student arriving late)."""
    results = []

    def meanwhile():
        from playwright.sync_api import sync_playwright
        from benchmarks import stream
        time.sleep(seconds / 3)
        with sync_playwright() as p:
            browser = stream.launch(p)
            for _ in range(pages):
                figures = sample_in_browser(browser, url)
                figures.pop("page", None)
                results.append(figures)
            browser.close()
    return results, meanwhile


# ---------------------------------------------------------------------------- the figures ------

def percentile(values, q: float):
    """Nearest-rank percentile (None for no values)."""
    values = sorted(values)
    return values[max(0, math.ceil(q * len(values)) - 1)] if values else None


def spread(values) -> dict:
    r = lambda x: None if x is None else round(x, 3)
    return {"count": len(values), "p50_s": r(percentile(values, 0.5)), "p95_s": r(percentile(values, 0.95))}


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
    return {k: {"value": value[k], "target": ("= " if k in ("errors", "client_timeouts") else "≤ ") + str(t),
                "met": value[k] is not None and value[k] <= t}
            for k, t in TARGETS.items() if not (in_browser and k == "first_token_p95_s")}


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

    def sample():                                       # does memory level off or keep growing?
        while not done.wait(RSS_EVERY_S):
            timeline.append(round(server.memory_mb().get("rss", 0)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu_start = server.cpu_s()
    out, elapsed, stuck = run_class(server.url, students, seconds, timeout, seed, out, page, meanwhile)
    cpu = server.cpu_s() - cpu_start if cpu_start is not None else None
    done.set()
    sampler.join(timeout=5)
    after_memory = server.memory_mb()
    time.sleep(SETTLE_S)                                # what the class left behind, not what it was using
    end_memory, end_map = server.memory_mb(), server.memory_map_mb()   # before the burst's extra clients
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
                    "rss_by_mapping_start_mb": start_map, "rss_by_mapping_end_mb": end_map})
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
