"""What every benchmark that serves the app shares: the app as its own process on a free loopback port, what
/proc says about that process (CPU, memory, descriptors, threads), the tracebacks in its log, and percentile
summaries of the times measured against it.

    with Server() as server:                     # `python app.py --device cpu`, answering at server.url
        ...
        server.cpu_s(), server.memory_mb(), server.memory_map_mb(), server_errors(server.log())

The /proc readers return None or {} off Linux, so a benchmark still runs there (its figures absent).
"""
from __future__ import annotations

import asyncio
import collections
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
# the end's memory is read once the server has been idle this long, so that its keeper has handed the pages
# of freed blocks back (toyviz.serving.memory.RETURN_EVERY_S): read at once, the figure depends on when the keeper
# last ran (+92 and +230 MB in two runs of the same code), not on what the class left behind
# the line the app prints once every worker has drawn every tab (toyviz.app.serve.warm_after_serving)
WARMED = "every tab drawn once"
SETTLE_S = 12.0                  # > RETURN_EVERY_S (10 s; not imported: a benchmark's process has no torch)


# ---------------------------------------------------------------------------- /proc -----------

def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) a process has used so far (None off Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")      # utime, stime


def children(pid: int) -> list[int]:
    """The processes `pid` started that still run (the app's workers), from /proc ([] off Linux)."""
    try:
        return [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                for c in (task / "children").read_text().split()]
    except OSError:
        return []


def memory_mb(pid: int) -> dict:
    """{"rss": resident memory now, "peak": its high-water mark}, MB ({} off Linux)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    kb = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in lines) if k in ("VmRSS", "VmHWM")}
    return {"rss": kb.get("VmRSS", 0) / 1024, "peak": kb.get("VmHWM", 0) / 1024}


def memory_map_mb(pid: int) -> dict:
    """Resident memory by kind of mapping, MB, from /proc/PID/smaps ({} off Linux): "heap" (the main heap),
    "anonymous" (other malloc heaps, large allocations mapped on their own, thread stacks), "files"
    (libraries, mapped files) and "other" ([stack], [vdso] ...); where growth goes."""
    try:
        lines = Path(f"/proc/{pid}/smaps").read_text().splitlines()
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


def descriptors_and_threads(pid: int) -> dict:
    """{"fds": open file descriptors, "threads": threads} of a process ({} off Linux)."""
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    threads = next((int(line.split()[1]) for line in status if line.startswith("Threads:")), None)
    return {"fds": fds, "threads": threads}


# ---------------------------------------------------------------------------- the server -------

class Server:
    """`python app.py` on a free loopback port, its output in a log file; use as a context manager.
    root: the checkout whose app.py runs (e.g. a git worktree of the code before a change); env: variables
    set for the server only (its lectures file, its temp folders). Entered once the page answers and the
    workers have drawn every tab (the app serves first and warms after: a class measured during the warm-up
    would measure the warm-up; benchmarks.cold_start times the start itself)."""

    def __init__(self, device: str = "cpu", start_timeout: float = 240.0, log: str | Path | None = None,
                 root: str | Path | None = None, env: dict | None = None):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.keep_log = log is not None
        self.log_path = Path(log) if log else Path(tempfile.mkstemp(prefix="toyviz-load-", suffix=".log")[1])
        env = dict(os.environ, **(env or {}), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(self.port),
                   GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "app.py", "--device", device],
                                         cwd=Path(root).resolve() if root else ROOT, env=env,
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
                    if r.status == 200 and WARMED in self.log():
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"app.py did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def cpu_s(self) -> float | None:
        """CPU seconds of the server and its worker processes (a worker replaced meanwhile loses its share)."""
        seconds = [cpu_seconds(pid) for pid in [self.proc.pid] + self.worker_pids()]
        return None if seconds[0] is None else sum(s for s in seconds if s is not None)

    def worker_pids(self) -> list[int]:
        return children(self.proc.pid)

    def memory_mb(self) -> dict:
        return memory_mb(self.proc.pid)

    def memory_map_mb(self) -> dict:
        return memory_map_mb(self.proc.pid)

    def descriptors_and_threads(self) -> dict:
        return descriptors_and_threads(self.proc.pid)

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


# ---------------------------------------------------------------------------- summaries --------

def percentile(values, q: float):
    """Nearest-rank percentile (None for no values)."""
    values = sorted(values)
    return values[max(0, math.ceil(q * len(values)) - 1)] if values else None


def spread(values) -> dict:
    """{count, p50_s, p95_s} of a list of seconds (rounded to ms)."""
    r = lambda x: None if x is None else round(x, 3)
    return {"count": len(values), "p50_s": r(percentile(values, 0.5)), "p95_s": r(percentile(values, 0.95))}


def targets(figures: dict, limits: dict, exact: tuple = ("errors",)) -> dict:
    """Each figure against its limit: {name: {value, target ("= n" for those in `exact`, else "≤ n"), met}};
    a figure that is None has not met its target."""
    return {k: {"value": figures[k], "target": ("= " if k in exact else "≤ ") + str(t),
                "met": figures[k] is not None and figures[k] <= t} for k, t in limits.items()}


# ---------------------------------------------------------------------------- a cheap HTTP client --

ACCEPT = {"Accept-Encoding": "gzip, deflate, br"}       # what a browser sends


class Connection:
    """One keep-alive HTTP/1.1 connection, as little client as can read a response whole: the storm's cost
    should be the server's, not an HTTP library's (httpx spends more CPU per request than the server now)."""

    def __init__(self, host: str, port: int):
        self.host, self.port, self.reader, self.writer = host, port, None, None

    async def get(self, target: str, headers: dict) -> tuple[int, int]:
        """→ (status, bytes of the body as sent)."""
        status, body = await self.request("GET", target, headers)
        return status, len(body)

    async def request(self, method: str, target: str, headers: dict, body: bytes = b"") -> tuple[int, bytes]:
        """→ (status, the body as sent: compressed if the server compressed it)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        headers = {**ACCEPT, **headers, **({"Content-Length": str(len(body))} if body else {})}
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.writer.write(f"{method} {target} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{lines}\r\n".encode()
                          + body)
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
        if fields.get("transfer-encoding") == "chunked":
            chunks = []
            while (chunk := int((await self.reader.readline()).strip() or b"0", 16)) > 0:
                chunks.append((await self.reader.readexactly(chunk + 2))[:-2])
            await self.reader.readline()
            content = b"".join(chunks)
        else:
            content = await self.reader.readexactly(int(fields.get("content-length", 0)))
        if fields.get("connection") == "close":
            self.close()
        return status, content

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def fetch_files(files: list[dict], connections: int, counts: collections.Counter) -> float:
    """One client's files ({url, headers}: the validators a browser sends) over `connections` keep-alive
    connections (a browser's six), every byte read as sent (compressed, as a browser accepts it); → seconds
    until the last arrived. Statuses counted in `counts`; a transport failure is retried once on a new
    connection ("retried"), a second one or a status other than 200/304 counted "failed"."""
    start, address, queue = time.monotonic(), urlsplit(files[0]["url"]), asyncio.Queue()
    for f in files:
        queue.put_nowait(f)

    async def worker():
        connection = Connection(address.hostname, address.port)
        while not queue.empty():
            f = queue.get_nowait()
            parts = urlsplit(f["url"])
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            for attempt in (0, 1):
                try:
                    status, _ = await connection.get(target, f["headers"])
                    counts[status] += 1
                    counts["failed"] += status not in (200, 304)
                    break
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    connection.close()
                    counts["retried" if attempt == 0 else "failed"] += 1
        connection.close()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return time.monotonic() - start
