"""Worker processes: the models held by other processes, so the server computes on every core it is given.

Python's threads share one interpreter lock: however many a server runs, its figures, their JSON, beam
search's bookkeeping and the why panel's loops take turns on one core. Here the Gradio process only routes,
queues and streams; N worker processes each hold the models (loaded once per process from memory-mapped
safetensors) and do the heavy work, each on its own core.

    workers = Workers(2, hold="toyviz.app.explorer:Explorer.load", hold_args=("gpt", "translator", "cpu"),
                      send="toyviz.app.figures:as_sent")
    outputs = workers.call(views.tokens_view, prompt, projector, model)    # tokens_view(held, …) in a worker
    for update in workers.stream(views.generate_view, …): …                # a generator's updates as they come
    workers.close()

- A function is named by its module and name, never pickled as code: the worker imports it. `hold` is
  what a worker holds (made once, as it starts), `send` what each answer becomes before it leaves the
  worker (the figures turned into the JSON the page gets: the main process never rebuilds them).
- A request goes to the worker with the fewest requests in flight; of equals, the one its first argument
  (the prompt) hashes to, whose caches most likely hold its trace already. A worker runs requests on
  threads of its own: its generations decode together in one batch (toyviz.serving.batching).
- A stream closed by its reader (Stop, a page gone) is cancelled in the worker at its next update.
- A worker that dies is replaced; the requests it was computing fail with a fault's message (logged
  with an id), every other request goes on. A reply its reader cannot read ends the worker the same way.
- A worker that fails to start is started again after 1, 2, 4 … s, at most 60 (BACKOFF_S). While no
  worker is up, a request is refused at once with `Busy` (a UserError: "try again in a few seconds"), not
  queued behind a start that may not come. A pool made with start=False starts its processes at `.start()`
  (a server starts them once it answers: toyviz.app.serve); `ever_up` says whether one has ever held its models.
- A caller waits at most ANSWER_TIMEOUT_S for the worker's next message (a call's answer, a stream's next
  update); then its request is cancelled there and it gets a fault's message. The slowest legitimate calls
  measured on this 2-core machine take seconds (a circuit of 32 tokens 4.2 s, a beam-8 translation of 2,000
  characters 3.6 s, the why panel on 256 tokens 3.1 s), a fresh worker's first circuit 30–47 s on a loaded
  machine (it loads the transcoders): 120 s leaves room for a machine twice as slow under a class.
  Closing the pool fails the requests in flight with `Busy` ("the server is stopping").
"""
from __future__ import annotations

import argparse
import importlib
import itertools
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path

from toyviz.errors import LoggedFault, UserError, fault
from toyviz.machine import container

THREADS_PER_WORKER = 64      # requests a worker computes at once: the app's concurrency limits bound them first
START_TIMEOUT_S = 300.0      # loading the models and drawing every tab once, on a slow machine
ANSWER_TIMEOUT_S = 120.0     # the longest a caller waits for a worker's next message: see the module's docstring
BACKOFF_S = (1.0, 60.0)      # a worker that failed to start is started again after 1, 2, 4 … s, at most 60

BUSY = "The server is restarting its workers: try again in a few seconds."
STOPPING = "The server is stopping: try again in a minute."


class Busy(UserError):
    """No worker is up to compute (each one is being started or replaced, or the server is stopping): the
    visitor can only try again, and is told so."""


def start_delay(failed: int, backoff: tuple[float, float] = BACKOFF_S) -> float:
    """Seconds before a worker is started again after `failed` failed starts in a row: none after a worker
    that had started, then the first back-off, doubled each time, at most the second."""
    return min(backoff[1], backoff[0] * 2 ** (failed - 1)) if failed else 0.0


def named(fn) -> str:
    """"module:qualified.name" of a module-level function, as a worker imports it."""
    name = f"{fn.__module__}:{fn.__qualname__}"
    if resolve(name) is not fn:
        raise ValueError(f"{name} is not importable by that name: a worker could not run it")
    return name


def resolve(name: str):
    module, _, path = name.partition(":")
    value = importlib.import_module(module)
    for part in path.split("."):
        value = getattr(value, part)
    return value


# ---------------------------------------------------------------- the main process's side --------

class Worker:
    """One worker process, seen from the server: its connection, the requests in flight and their replies."""

    def __init__(self, pool: "Workers", index: int):
        self.pool, self.index = pool, index
        self.replies: dict[int, queue.SimpleQueue] = {}
        self.lock, self.ready, self.alive = threading.Lock(), threading.Event(), True
        ours, theirs = socket.socketpair()        # private to the two processes: nothing else can connect
        self.process = subprocess.Popen([sys.executable, "-m", "toyviz.serving.workers", str(theirs.fileno()),
                                         "--threads", str(pool.threads)], pass_fds=[theirs.fileno()], cwd=pool.cwd)
        theirs.close()
        self.connection = Connection(ours.detach())
        self.connection.send(("hold", pool.hold, pool.hold_args, pool.send))
        threading.Thread(target=self._read, name=f"toyviz-worker-{index}", daemon=True).start()

    @property
    def up(self) -> bool:
        """It holds its models and has not ended: a request sent now is computed."""
        return self.alive and self.ready.is_set()

    def _read(self):
        """Hand each reply to the request it answers; at the end (the worker's, or a message that could not be
        read: then the worker is not trusted any more), fail what it was computing and let the pool replace it."""
        try:
            while True:
                self._route(self.connection.recv())
        except (EOFError, OSError):
            pass
        except Exception as err:
            fault(f"reading worker {self.index}'s replies", err)
        finally:
            self._ended()

    def _route(self, message: tuple):
        if message[0] == "ready":
            self.ready.set()
            self.pool.ever_up = True
            return
        with self.lock:
            replies = self.replies.get(message[1])
        if replies is not None:
            replies.put(message)

    def _ended(self):
        self._stop_process(grace_s=1.0)      # its exit code read; left running only if its reader failed
        if not self._fail_waiting(("lost", None, self.process.returncode)):
            return                           # stopped by the pool, which has told its callers
        started = self.ready.is_set()
        self.ready.set()                     # nobody waits for a worker that will never be ready
        self.pool.replace(self, started)

    def _fail_waiting(self, message: tuple) -> bool:
        """This worker marked ended and `message` given to each request waiting on it → whether it was alive."""
        with self.lock:
            was_alive, self.alive = self.alive, False
            waiting, self.replies = list(self.replies.values()), {}
        for replies in waiting:
            replies.put(message)
        return was_alive

    def submit(self, ident: int, kind: str, fn: str, args: tuple) -> queue.SimpleQueue:
        replies = queue.SimpleQueue()
        with self.lock:
            if not self.alive:
                replies.put(("lost", ident, self.process.poll()))
                return replies
            self.replies[ident] = replies
            try:
                self.connection.send((kind, ident, fn, args))
            except (OSError, ValueError) as err:
                self.replies.pop(ident, None)
                replies.put(("lost", ident, str(err)))
        return replies

    def cancel(self, ident: int):
        with self.lock:
            self.replies.pop(ident, None)
            if self.alive:
                try:
                    self.connection.send(("cancel", ident))
                except (OSError, ValueError):
                    pass

    def done(self, ident: int):
        with self.lock:
            self.replies.pop(ident, None)

    @property
    def in_flight(self) -> int:
        return len(self.replies)

    def stop(self):
        """The pool's close: what it was computing fails with "stopping", then the process ends."""
        self._fail_waiting(("stopping", None, None))
        self._stop_process()

    def _stop_process(self, grace_s: float = 0.0):
        """The process ended: `grace_s` to end by itself (its exit code then says why: -9 for the kernel's
        out-of-memory killer), then terminated, then killed."""
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Workers:
    """`count` worker processes, each holding `resolve(hold)(*hold_args)`; see the module's docstring."""

    def __init__(self, count: int, hold: str, hold_args: tuple = (), send: str | None = None,
                 threads: int | None = None, cwd: str | Path | None = None,
                 timeout: float = ANSWER_TIMEOUT_S, backoff: tuple[float, float] = BACKOFF_S, start: bool = True):
        if count < 1:
            raise ValueError(f"workers must be at least 1, not {count}")
        self.hold, self.hold_args, self.send = hold, tuple(hold_args), send
        self.threads = threads or max(1, container().cpus // count)     # torch's threads a worker computes with
        self.cwd = str(cwd or Path.cwd())
        self.timeout, self.backoff = timeout, backoff
        self.ids, self.closed, self.lock = itertools.count(), False, threading.Lock()
        self.count, self.failed_starts = count, [0] * count    # each place's starts failed in a row
        self.ever_up = False                  # a worker has held its models: from then on, none up means Busy
        self.workers: list[Worker] = []
        self.replaced = 0
        if start:
            self.start()

    def start(self) -> "Workers":
        """The processes started (at once, unless made with start=False: a server starts them once it answers,
        so that they do not slow its own start)."""
        with self.lock:
            if not self.workers and not self.closed:
                self.workers = [Worker(self, i) for i in range(self.count)]
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> "Workers":
        """Blocks until every worker holds its models; raises if one ended first (a first start that fails
        says what to mend: a checkpoint missing, a bad argument)."""
        deadline = time.monotonic() + timeout
        for worker in list(self.workers):
            if not worker.ready.wait(max(0.0, deadline - time.monotonic())) or not worker.alive:
                raise RuntimeError(f"worker {worker.index} did not start (exit code {worker.process.poll()}): "
                                   "its error is in the log above")
        return self

    def replace(self, lost: Worker, started: bool):
        """A worker that had started is replaced at once; one that failed to start, after a back-off that
        doubles with each failed start in a row (its error is in the log each time)."""
        failed = 0 if started else self.failed_starts[lost.index] + 1
        self.failed_starts[lost.index] = failed
        timer = threading.Timer(start_delay(failed, self.backoff), self._start_again, args=(lost,))
        timer.daemon = True
        timer.start()

    def _start_again(self, lost: Worker):
        with self.lock:
            if self.closed:
                return
            try:
                self.workers[lost.index] = Worker(self, lost.index)
                self.replaced += 1
            except Exception as err:           # no process could be made (memory, file descriptors): later
                fault(f"starting worker {lost.index}", err)
                self.replace(lost, started=False)

    def pick(self, key) -> Worker | None:
        """The worker up with the fewest requests in flight (of equals, the one `key` hashes to); None if none is."""
        up = [w for w in self.workers if w.up]
        if not up:
            return None
        home = zlib.crc32(repr(key).encode()) % self.count
        return min(up, key=lambda w: (w.in_flight, (w.index - home) % self.count))

    def _start(self, kind: str, fn, args: tuple, worker: Worker | None = None):
        worker = worker or self.pick(args[0] if args else None)
        if worker is None or not worker.up:
            raise Busy(STOPPING if self.closed else BUSY)
        ident = next(self.ids)
        return worker, ident, worker.submit(ident, kind, named(fn) if callable(fn) else fn, args)

    def _next(self, worker: Worker, ident: int, replies: queue.SimpleQueue, timeout: float) -> tuple:
        """The worker's next message about this request; none within `timeout` s: the request is cancelled
        there, and the message says so."""
        try:
            return replies.get(timeout=timeout)
        except queue.Empty:
            worker.cancel(ident)
            return ("timeout", ident, timeout)

    def _raise(self, message: tuple, worker: Worker, fn):
        kind, name = message[0], getattr(fn, "__name__", fn)
        if kind == "user":
            raise UserError(message[2], message[3], **message[4])     # with its catalogue key and fields (toyviz.i18n)
        if kind == "fault":
            raise LoggedFault(message[2])
        if kind == "stopping":
            raise Busy(STOPPING)
        if kind == "timeout":
            raise LoggedFault(fault(f"worker {worker.index}", TimeoutError(
                f"{name} sent nothing for {message[2]:.0f} s; cancelled")))
        raise LoggedFault(fault(f"worker {worker.index}", RuntimeError(
            f"the worker process computing {name} stopped (exit code {message[2]}); it is being replaced")))

    def call(self, fn, *args, worker: Worker | None = None, timeout: float | None = None):
        """fn(held, *args) in a worker → its answer (as `send` made it), within `timeout` s (the pool's)."""
        worker, ident, replies = self._start("call", fn, args, worker)
        message = self._next(worker, ident, replies, timeout or self.timeout)
        worker.done(ident)
        if message[0] == "done":
            return message[2]
        self._raise(message, worker, fn)

    def stream(self, fn, *args):
        """fn(held, *args), a generator function, in a worker → its updates as they come. Closing this
        generator (Stop) cancels it there."""
        worker, ident, replies = self._start("stream", fn, args)
        finished = False
        try:
            while True:
                message = self._next(worker, ident, replies, self.timeout)
                if message[0] == "update":
                    yield message[2]
                elif message[0] == "done":
                    finished = True
                    return
                else:
                    finished = True
                    self._raise(message, worker, fn)
        finally:
            worker.done(ident) if finished else worker.cancel(ident)

    def on_each(self, fn, *args) -> list:
        """fn(held, *args) in every worker, all at once (warming each one's caches, part of its start: within
        START_TIMEOUT_S) → their answers."""
        with ThreadPoolExecutor(len(self.workers)) as each:
            return list(each.map(lambda worker: self.call(fn, *args, worker=worker, timeout=START_TIMEOUT_S),
                                 list(self.workers)))

    def pids(self) -> list[int]:
        return [w.process.pid for w in self.workers]

    def close(self):
        """Every worker stopped, the requests in flight failed with "stopping"; none started again."""
        with self.lock:
            self.closed = True
        for worker in self.workers:
            worker.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---------------------------------------------------------------- a worker process -------------

class Serving:
    """What a worker process does with its connection: make what it holds, then answer each request on a
    thread of its own (a stream's updates sent as they come, until done or cancelled)."""

    def __init__(self, connection: Connection):
        self.connection, self.sending = connection, threading.Lock()
        self.cancelled: dict[int, threading.Event] = {}
        self.pool = ThreadPoolExecutor(THREADS_PER_WORKER, thread_name_prefix="toyviz-request")
        _, hold, hold_args, send = connection.recv()
        self.held = resolve(hold)(*hold_args)
        self.encode = resolve(send) if send else (lambda value: value)
        self._send(("ready", os.getpid()))

    def _send(self, message: tuple):
        with self.sending:
            self.connection.send(message)

    def serve(self):
        while True:
            try:
                message = self.connection.recv()
            except (EOFError, OSError):
                return                      # the server is gone: so is this worker
            if message[0] == "cancel":
                self.cancelled.get(message[1], threading.Event()).set()
            else:
                kind, ident, fn, args = message
                self.cancelled[ident] = threading.Event()
                self.pool.submit(self._answer, kind, ident, fn, args)

    def _answer(self, kind: str, ident: int, fn: str, args: tuple):
        cancelled = self.cancelled[ident]
        try:
            function = resolve(fn)
            if kind == "call":
                self._send(("done", ident, self.encode(function(self.held, *args))))
                return
            updates = function(self.held, *args)
            try:
                for update in updates:
                    if cancelled.is_set():
                        break
                    self._send(("update", ident, self.encode(update)))
            finally:
                updates.close()             # a generation's batch row leaves now, not when collected
            if not cancelled.is_set():
                self._send(("done", ident, None))
        except UserError as err:
            self._send(("user", ident, str(err), getattr(err, "key", None), getattr(err, "fields", {})))
        except Exception as err:
            self._send(("fault", ident, fault(fn.rpartition(":")[2], err)))
        finally:
            self.cancelled.pop(ident, None)


def main(argv=None):
    parser = argparse.ArgumentParser(description="a toyviz worker process (started by toyviz.serving.workers)")
    parser.add_argument("descriptor", type=int, help="this end of the socket pair the server made")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    from toyviz.serving.memory import keep_returning_freed_memory, settle_allocator
    from toyviz.serving.server import share_cores
    settle_allocator()
    share_cores()
    import torch
    torch.set_num_threads(args.threads)
    serving = Serving(Connection(args.descriptor))
    keep_returning_freed_memory()
    serving.serve()


if __name__ == "__main__":
    main()
