"""Simulated students: each a thread with its own connection to the app's HTTP API that, until the time is up, thinks for
1–4 s (uniform) and then does one of the class's MIX (benchmarks.load describes it), every answer checked and
timed as a Record. Also what a class does around its lesson: one request to each endpoint before it (warm_up),
every student pressing Generate at once (burst), and a fresh client after it (alive).
Shared by benchmarks.load (the class and its figures) and benchmarks.soak (the class beside two loops).
"""
from __future__ import annotations

import http.client
import json
import random
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

MIX = (("tab", 0.60), ("generate", 0.25), ("translate", 0.15))
IN_BROWSER = {"generate"}         # what --browser students do in their browsers: no request to the server
TAB_ENDPOINTS = ("attention", "tokens", "residual")
THINK_S = (1.0, 4.0)
NEW_TOKENS = 64
BEAM = 4
TIMEOUT_S = 60.0

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


class AppError(Exception):
    """The app answered with an error (its message, when it sent one)."""


class Client:
    """One student's connection to Gradio's HTTP API (`POST /gradio_api/call/<endpoint>`, then its event
    stream read to the end) on one keep-alive connection: as little client as reads every answer whole, so
    that on a small machine the class's CPU is the server's (a gradio_client Client a student, with its
    threads and its per-update JSON handling, took about as much CPU as the server under 100 students)."""

    def __init__(self, url: str, timeout: float):
        parts = urlsplit(url)
        self.host, self.port, self.timeout = parts.hostname, parts.port, timeout
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        self.connection.connect()

    def _send(self, method: str, path: str, body: bytes | None = None) -> http.client.HTTPResponse:
        for attempt in (0, 1):              # a keep-alive connection the server closed meanwhile: once more
            try:
                self.connection.request(method, path, body, {"Content-Type": "application/json"} if body else {})
                return self.connection.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.connection.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def call(self, endpoint: str, args: tuple, on_update=None) -> list:
        """The endpoint's outputs; on_update(outputs) for each streamed update before them."""
        answer = self._send("POST", f"/gradio_api/call/{endpoint}", json.dumps({"data": list(args)}).encode())
        body = answer.read()
        if answer.status != 200:
            raise AppError(f"POST {answer.status}: {body[:200]!r}")
        stream = self._send("GET", f"/gradio_api/call/{endpoint}/{json.loads(body)['event_id']}")
        event, outputs = None, None
        while line := stream.readline():
            line = line.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
                if event == "error":
                    stream.read()
                    raise AppError(data if data != "null" else "the app failed the request")
                if event in ("generating", "complete"):
                    outputs = json.loads(data)
                    if event == "generating" and on_update:
                        on_update(outputs)
        if outputs is None:
            raise AppError(f"the stream ended without an answer (last event {event})")
        return outputs

    def close(self):
        self.connection.close()


def connect(url: str, timeout: float) -> Client:
    return Client(url, timeout)


def connect_failure(err: Exception, start: float) -> Record:
    outcome = "timeout" if isinstance(err, TimeoutError) else "error"
    return Record("connect", "connect", outcome, time.monotonic() - start, message=f"connect: {err!r}"[:300])


def fresh_prompt(rng: random.Random, words: tuple[int, int]) -> str:
    return f"{rng.choice(OPENINGS)}, " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(*words)))


def fresh_source(rng: random.Random) -> str:
    return f"{rng.choice(SOURCES)} {rng.choice(['to', 'in', 'from', 'by'])} {rng.choice(NOUNS)} " \
           f"and {rng.choice(NOUNS)}."


def request_args(action: str, rng: random.Random, endpoint: str | None = None) -> tuple[str, tuple]:
    """The endpoint (for a tab: this one, else a random one) and inputs of one action with fresh text."""
    if action == "generate":
        return "generate", (fresh_prompt(rng, (3, 15)), 0.8, 50, 0.95, NEW_TOKENS, rng.randrange(10**6), False, -1, 0.0)
    if action == "translate":
        return "translate", (fresh_source(rng), BEAM, "cross", "average", "average", False, "today")
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


def request(client: Client, action: str, endpoint: str, args: tuple, timeout: float) -> Record:
    """One request, bounded by timeout (the connection's: a student who gives up closes it)."""
    start, first = time.monotonic(), None

    def streamed(update):
        nonlocal first
        if first is None and has_token(update):
            first = time.monotonic() - start
    try:
        outputs = client.call(endpoint, args, streamed if action == "generate" else None)
        seconds = time.monotonic() - start
        if action == "generate" and first is None:
            first = seconds if has_token(outputs) else None
        problem = check(endpoint, outputs)
        return Record(action, endpoint, "error" if problem else "ok", seconds, first, problem)
    except TimeoutError as err:
        client.close()
        return Record(action, endpoint, "timeout", time.monotonic() - start, first, f"timeout: {err!r}"[:200])
    except AppError as err:
        return Record(action, endpoint, "error", time.monotonic() - start, first, f"app error: {err}"[:300])
    except Exception as err:                                           # noqa: BLE001 — counted, reported
        client.close()
        return Record(action, endpoint, "error", time.monotonic() - start, first, repr(err)[:300])


def student(url: str, n: int, deadline: float, timeout: float, seed: int, out: Class, arrive=None):
    """arrive(): a first visit, timed as a Record, for a student who samples in the browser (--browser:
    benchmarks.replay.open_page); such a student does IN_BROWSER actions there, sending nothing."""
    rng = random.Random(seed * 100_003 + n)
    if arrive:                                        # a class opens the link within a few seconds
        time.sleep(rng.uniform(0, THINK_S[1]))
        out.add(arrive())
    start = time.monotonic()
    try:
        client = connect(url, timeout)
    except Exception as err:                                           # noqa: BLE001 — counted, reported
        out.add(connect_failure(err, start))
        return
    if not arrive:
        time.sleep(rng.uniform(0, THINK_S[1]))
    while time.monotonic() < deadline:
        action = rng.choices([a for a, _ in MIX], [w for _, w in MIX])[0]
        if arrive and action in IN_BROWSER:
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
              out: Class | None = None, arrive=None, meanwhile=None) -> tuple[Class, float, list]:
    """Students on url for `seconds` (arrive: see student); returns their records (added to out), the wall
    time and any student thread still stuck. meanwhile(): run in this thread while the class goes on."""
    out, started = out or Class(), time.monotonic()
    deadline = started + seconds
    threads = [threading.Thread(target=student, args=(url, n, deadline, timeout, seed, out, arrive), daemon=True,
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
        return not check("tokens", connect(url, timeout).call("tokens", ("Still there?", False, "gpt")))
    except Exception:                                                  # noqa: BLE001 — the answer is False
        return False


