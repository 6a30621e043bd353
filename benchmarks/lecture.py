"""A lecture hall on one machine: N simulated phones follow a presenter who moves and reveals, printed as one
JSON line (a benchmark: nothing here asserts; tests/test_classroom.py runs --quick and asserts on it).

    python -m benchmarks.lecture [--students 100] [--minutes 2] [--quick] [--log FILE]

The app runs as its own process, exactly as `python app.py --device cpu` serves it (benchmarks.harness.Server), with
its lectures in a fresh SQLite file (TOYVIZ_LECTURES). This process starts a lecture of the shipped Sampling lesson
in that file (the store is the same on disk for both), so it holds the presenter's secret and drives the lecture
over HTTP as a presenter's page would: POST /class/{code}/step and /reveal. Each student is a thread with its own
keep-alive connection that does what phone.html does: loads the phone page, then polls /class/{code}/now every
POLL_S with the ETag of what it has (304 while nothing changed), and on a new question step votes once, after
thinking 1-6 s, for a random choice (nine students in ten vote).

For the first IDLE_FRACTION of the time the presenter does nothing (the class reads the first step): the server's
CPU is measured there. Then the presenter acts every ACT_S: a reveal where the step has a question and is not yet
revealed, else a move to the next step (back to the first after the last). A reveal runs the live model on the
step's question (in the server's store, once).

- errors: requests that failed (a status other than 200/304, or 409 for a vote the presenter overtook, a dropped
  connection), throttled ones (429) included; error_messages: the first few, counted
- votes: counted, refused (a second vote, or closed), late (409: the presenter moved on between the phone seeing
  the step and its vote arriving; not errors)
- follow_p50_s / follow_p95_s / follow_max_s: per student and presenter change, seconds from the presenter's request
  returning (its page changes) to that student's poll first seeing the new version (0 if it saw it while the
  presenter's answer was on its way); followed: the share of (student, change) pairs seen at all
- presenter_p50_s / presenter_p95_s: the presenter's own requests (a reveal includes the model answering)
- polls_per_s: the class's polls; not_modified_share: the share answered 304
- server_cpu_idle_following_percent: the server's CPU (user + system, % of one core) while the class only polls;
  students_cpu_percent: this process's, the students' threads (they share the machine with the server)
- rss_start_mb: the server's resident memory before the class joins; rss_end_mb: after the class, once settled;
  rss_growth_mb = end − start; rss_timeline_mb: every 10 s
- server_tracebacks / server_errors: from the server's log (benchmarks.harness.server_errors)
- targets (issue 33): errors 0, follow p95 ≤ 2 s; each {value, target, met}
--quick: 30 students for 0.4 minutes (unless --students/--minutes say otherwise).
"""
from __future__ import annotations

import argparse
import collections
import http.client
import json
import random
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.harness import SETTLE_S, Server, percentile, server_errors, targets
from toyviz.classroom.store import Lectures
from toyviz.lessons.library import lesson_of

LESSON = "sampling"
POLL_S = 1.0                     # phone.html's POLL_MS
THINK_S = (1.0, 6.0)             # a student reads the question, then votes
VOTERS = 0.9                     # the share of students who vote on a question
IDLE_FRACTION = 0.2              # the first part of the time: nobody moves, the server's CPU is measured
ACT_S = 12.0                     # the presenter moves or reveals this often (quick: every 4 s)
TIMEOUT_S = 30.0
RSS_EVERY_S = 10.0
TARGETS = {"errors": 0, "follow_p95_s": 2.0}


class Hall:
    """What the students and the presenter saw, shared by their threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.changed: dict[int, float] = {}              # version → when the presenter's request returned
        self.seen: dict[int, list] = collections.defaultdict(list)      # student → [(version, when first seen)]
        self.errors: collections.Counter = collections.Counter()
        self.votes: collections.Counter = collections.Counter()        # counted / refused / late
        self.polls: collections.Counter = collections.Counter()        # status → how many
        self.presenter: list[float] = []

    def add(self, counter: str, key, n: int = 1):
        with self.lock:
            getattr(self, counter)[key if counter != "errors" else str(key)[:200]] += n


def call(connection: http.client.HTTPConnection, method: str, path: str, body: dict | None = None,
         tag: str | None = None) -> tuple[int, dict, bytes]:
    """One request on a keep-alive connection → (status, headers, body). A connection the server closed while it
    sat idle (uvicorn keeps one 5 s) is reopened and the request sent again, as a browser does: every request
    here may be repeated (a move to step N, a reveal, one device's vote)."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if tag:
        headers["If-None-Match"] = tag
    for attempt in (1, 2):
        try:
            connection.request(method, path, None if body is None else json.dumps(body).encode(), headers)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            connection.close()
            if attempt == 2:
                raise
        except (OSError, http.client.HTTPException):
            connection.close()
            raise


def student(port: int, code: str, n: int, deadline: float, hall: Hall):
    """One phone, as phone.html behaves: the page, then /now every POLL_S after each answer, one vote a step."""
    rng, connection = random.Random(n), http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S)
    device, tag, now, vote_at, voted = f"bench-student-{n:04}", None, None, None, set()
    time.sleep(rng.uniform(0, 3))                          # a class opens the link within a few seconds
    try:
        status, _, _ = call(connection, "GET", f"/class/{code}")
        if status != 200:
            hall.add("errors", f"page: {status}")
    except (OSError, http.client.HTTPException) as err:
        hall.add("errors", f"page: {err!r}")
    while time.monotonic() < deadline:
        try:
            status, headers, body = call(connection, "GET", f"/class/{code}/now", tag=tag)
            seen = time.monotonic()
            hall.add("polls", status)
            if status == 200:
                tag, fresh = headers.get("etag"), json.loads(body)
                hall.seen[n].append((fresh["version"], seen))             # this student's list: no other writer
                if not now or fresh["step"] != now["step"]:
                    vote_at = seen + rng.uniform(*THINK_S) if rng.random() < VOTERS else None
                now = fresh
            elif status != 304:
                hall.add("errors", f"now: {status} {body[:100]!r}")
            if now and now["question"] and not now["revealed"] and vote_at and seen >= vote_at \
                    and now["step"] not in voted:
                voted.add(now["step"])
                choice = rng.choice(now["choices"]) if now["choices"] else rng.choice(["be", "the", "4"])
                status, _, body = call(connection, "POST", f"/class/{code}/vote",
                                       {"device": device, "step": now["step"], "choice": choice})
                if status == 200:
                    hall.add("votes", "counted" if json.loads(body)["counted"] else "refused")
                elif status == 409:
                    hall.add("votes", "late")
                else:
                    hall.add("errors", f"vote: {status} {body[:100]!r}")
        except (OSError, http.client.HTTPException, ValueError) as err:
            hall.add("errors", f"now: {err!r}")
        time.sleep(POLL_S)
    connection.close()


def present(port: int, code: str, secret: str, start: float, deadline: float, act_s: float, hall: Hall):
    """The presenter: every act_s, a reveal where the step asks and is not yet revealed, else the next step."""
    connection, steps = http.client.HTTPConnection("127.0.0.1", port, timeout=300), lesson_of(LESSON).steps
    lecture, when = {"step": 0, "revealed": False}, start
    while (when := when + act_s) < deadline - act_s / 2:
        time.sleep(max(0.0, when - time.monotonic()))
        if steps[lecture["step"]].question and not lecture["revealed"]:
            path, body = "reveal", {"secret": secret}
        else:
            path, body = "step", {"secret": secret, "step": (lecture["step"] + 1) % len(steps)}
        sent = time.monotonic()
        try:
            status, _, answer = call(connection, "POST", f"/class/{code}/{path}", body)
        except (OSError, http.client.HTTPException) as err:
            hall.add("errors", f"presenter: {err!r}")
            continue
        returned = time.monotonic()
        if status != 200:
            hall.add("errors", f"presenter: {status} {answer[:100]!r}")
            continue
        lecture = json.loads(answer)
        with hall.lock:
            hall.changed.setdefault(lecture["version"], returned)
            hall.presenter.append(returned - sent)
    connection.close()


def follow(hall: Hall, students: int) -> tuple[list[float], float]:
    """(Latencies, the share followed): per student and presenter change, its first sighting of that version or a
    later one (two changes within one poll: the first is seen at the second's sighting) − the change's time."""
    latencies, pairs = [], 0
    for version, changed in sorted(hall.changed.items()):
        for n in range(students):
            pairs += 1
            when = next((w for v, w in hall.seen.get(n, []) if v >= version), None)
            if when is not None:
                latencies.append(max(0.0, when - changed))
    return latencies, len(latencies) / pairs if pairs else 1.0


def measure(server: Server, code: str, secret: str, students: int, seconds: float, act_s: float) -> dict:
    """A class of `students` following the lecture `code` on a running server for `seconds`."""
    hall, start_memory, timeline = Hall(), server.memory_mb(), []
    start = time.monotonic()
    deadline, idle_until = start + seconds, start + IDLE_FRACTION * seconds
    threads = [threading.Thread(target=student, args=(server.port, code, n, deadline, hall), daemon=True)
               for n in range(students)]
    threads.append(threading.Thread(target=present, daemon=True,
                                    args=(server.port, code, secret, idle_until, deadline, act_s, hall)))
    for t in threads:
        t.start()
    time.sleep(min(5.0, IDLE_FRACTION * seconds / 3))       # the class has joined: now only polling
    cpu = (time.monotonic(), server.cpu_s(), time.process_time())
    time.sleep(max(0.0, idle_until - time.monotonic()))
    elapsed = time.monotonic() - cpu[0]
    server_cpu = 100 * (server.cpu_s() - cpu[1]) / elapsed
    students_cpu = 100 * (time.process_time() - cpu[2]) / elapsed
    while time.monotonic() < deadline:
        time.sleep(min(RSS_EVERY_S, max(0.0, deadline - time.monotonic())))
        timeline.append(round(server.memory_mb().get("rss", 0)))
    for t in threads:
        t.join(timeout=TIMEOUT_S + 5)
    time.sleep(SETTLE_S)                                    # what the class left behind, not what it was using
    end_memory = server.memory_mb()
    latencies, followed = follow(hall, students)
    polls = sum(hall.polls.values())
    r = lambda x, n=3: None if x is None else round(x, n)
    figures = {
        "students": students, "minutes": round(seconds / 60, 2), "lesson": LESSON,
        "errors": sum(hall.errors.values()),
        "error_messages": [f"{m} (×{k})" for m, k in hall.errors.most_common(5)],
        "votes": dict(hall.votes), "presenter_changes": len(hall.changed),
        "follow_p50_s": r(percentile(latencies, 0.5)), "follow_p95_s": r(percentile(latencies, 0.95)),
        "follow_max_s": r(max(latencies, default=None)), "followed": r(followed),
        "presenter_p50_s": r(percentile(hall.presenter, 0.5)), "presenter_p95_s": r(percentile(hall.presenter, 0.95)),
        "polls_per_s": r(polls / seconds, 1), "not_modified_share": r(hall.polls[304] / polls if polls else None),
        "server_cpu_idle_following_percent": r(server_cpu, 1), "students_cpu_percent": r(students_cpu, 1),
        "rss_start_mb": r(start_memory.get("rss"), 1), "rss_end_mb": r(end_memory.get("rss"), 1),
        "rss_growth_mb": r(end_memory["rss"] - start_memory["rss"], 1) if start_memory and end_memory else None,
        "rss_timeline_mb": timeline, **server_errors(server.log())}
    figures["targets"] = targets(figures, TARGETS)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=None, help="default 100 (30 with --quick)")
    parser.add_argument("--minutes", type=float, default=None, help="default 2 (0.4 with --quick)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--log", default=None, help="keep the server's log in this file")
    args = parser.parse_args(argv)
    students = args.students or (30 if args.quick else 100)
    minutes = args.minutes or (0.4 if args.quick else 2.0)
    with tempfile.TemporaryDirectory(prefix="toyviz-lecture-") as folder:
        lectures = str(Path(folder) / "lectures.sqlite3")                               # the server's, and ours
        code, secret = Lectures(lectures).start(LESSON, len(lesson_of(LESSON).steps))
        with Server(args.device, log=args.log, env={"TOYVIZ_LECTURES": lectures}) as server:
            figures = measure(server, code, secret, students, minutes * 60, ACT_S / 3 if args.quick else ACT_S)
    print(json.dumps({**figures, "quick": args.quick}, ensure_ascii=False))
    return figures


if __name__ == "__main__":
    main()
