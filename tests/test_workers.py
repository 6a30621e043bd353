"""Worker processes (toyviz.serving.workers, toyviz.app.compute): the same answers as in one process, byte
for byte; a user's mistake stays theirs, a fault is ours; a stream cancelled at its reader's close; a
worker killed mid-request replaced, its request failed with a message and nobody else's lost; a replacement
that fails to start tried again after a back-off, visitors told "busy" meanwhile; no caller left waiting (a
timeout, the pool's close, a reply that cannot be read)."""
import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from toyviz.app.compute import binder, start_workers
from toyviz.app.figures import FigureJSON, as_sent
from toyviz.app.tabs import TABS
from toyviz.app.views.sampling import generate_view
from toyviz.errors import LoggedFault, UserError
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.serving.workers import BUSY, STOPPING, Busy, Workers, start_delay

HERE = Path(__file__).resolve().parent
shipped = pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(), reason="needs the shipped GPT")


# ------------------------------------------------ what a light worker holds, imported by name there -----

class Held:
    def __init__(self):
        self.closed, self.pid = [], os.getpid()


def where(held):
    return held.pid


def echo(held, value):
    return value


def slow(held, seconds):
    time.sleep(seconds)
    return held.pid


def broken(held):
    return [][1]                    # a bug's IndexError: a fault of ours, not the user's mistake


def mistaken(held):
    raise UserError("the prompt is empty: type a few words first")


def counting(held, name):
    try:
        n = 0
        while True:
            n += 1
            yield n
            time.sleep(0.01)
    finally:
        held.closed.append(name)


def closed(held):
    return list(held.closed)


def pausing(held, seconds):
    yield 1
    time.sleep(seconds)
    yield 2


def flaky(folder, failing):
    """A Held, but the starts numbered in `failing` (counted by the files left in `folder`) raise."""
    start = len(os.listdir(folder))
    Path(folder, str(start)).touch()
    if start in failing:
        raise RuntimeError(f"start {start} fails, as the test asks")
    return Held()


def explode():
    raise RuntimeError("this reply cannot be read")


class Unreadable:
    """Pickled in the worker, it raises as the server unpickles it: a reply its reader cannot read."""
    def __reduce__(self):
        return explode, ()


def unreadable(held):
    return Unreadable()


@pytest.fixture
def importable(monkeypatch):
    """Worker processes import this module by name."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))


@pytest.fixture
def light(importable):
    with Workers(2, f"{Held.__module__}:Held", cwd=HERE.parent) as workers:
        yield workers.wait_ready(60)


def in_thread(fn, *args) -> dict:
    """fn(*args) on a thread of its own (a daemon: one left waiting does not hold pytest) → what it returned
    or raised, filled in when it ends."""
    outcome = {}

    def run():
        try:
            outcome["answer"] = fn(*args)
        except Exception as err:
            outcome["error"] = err
    outcome["thread"] = threading.Thread(target=run, daemon=True)
    outcome["thread"].start()
    return outcome


def until(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not {what} after {seconds} s"
        time.sleep(0.05)


def test_requests_spread_over_the_workers_and_mistakes_keep_their_owner(light):
    pids = {light.call(slow, 0.3, worker=w) for w in light.workers}
    assert len(pids) == 2 and os.getpid() not in pids
    assert light.call(echo, {"a": [1, 2]}) == {"a": [1, 2]}
    with pytest.raises(UserError, match="the prompt is empty"):
        light.call(mistaken)
    with pytest.raises(LoggedFault, match=r"on our side \(id [0-9a-f]{6}\)"):
        light.call(broken)


def test_a_stream_closed_by_its_reader_stops_in_the_worker(light):
    updates = light.stream(counting, "first")
    assert [next(updates) for _ in range(3)] == [1, 2, 3]
    updates.close()                                 # Stop: Gradio drops the generator
    deadline = time.monotonic() + 2.0
    while "first" not in light.call(closed, worker=light.workers[0]) + light.call(closed, worker=light.workers[1]):
        assert time.monotonic() < deadline, "the worker's generator still runs 2 s after its reader closed it"
        time.sleep(0.02)


def test_a_worker_killed_mid_request_is_replaced_and_only_its_request_fails(light):
    victim, other = light.workers
    answers, errors = {}, {}

    def ask(name, worker):
        try:
            answers[name] = light.call(slow, 1.5, worker=worker)
        except LoggedFault as err:
            errors[name] = str(err)
    threads = [threading.Thread(target=ask, args=(name, w)) for name, w in (("victim", victim), ("other", other))]
    for t in threads:
        t.start()
    time.sleep(0.5)
    victim.process.kill()
    for t in threads:
        t.join(10)
    assert "victim" in errors and "on our side" in errors["victim"]
    assert answers == {"other": other.process.pid}
    fresh = light.workers[0]
    assert fresh is not victim and fresh.ready.wait(60) and fresh.alive
    assert light.call(where, worker=fresh) == fresh.process.pid
    assert light.replaced == 1


def test_one_worker_killed_mid_call_whose_replacement_fails_to_start_is_started_again_visitors_told_busy(
        importable, tmp_path, caplog):
    with Workers(1, f"{flaky.__module__}:flaky", (str(tmp_path), (1,)), cwd=HERE.parent,
                 backoff=(0.2, 1.0)) as workers:
        first = workers.wait_ready(60).workers[0]
        asked = in_thread(workers.call, slow, 30)
        until(lambda: first.in_flight == 1, 10, "computing")
        os.kill(first.process.pid, signal.SIGKILL)
        asked["thread"].join(10)
        assert "on our side" in str(asked.get("error")) and "stopped (exit code -9)" in caplog.text
        with pytest.raises(Busy, match="try again in a few seconds"):     # its replacement is starting, and fails
            workers.call(where)
        refused = []

        def answered():
            try:
                return workers.call(where)
            except Busy as err:
                refused.append(str(err))
        until(answered, 120, "answered by a fresh worker")
        assert sorted(os.listdir(tmp_path)) == ["0", "1", "2"]        # a replacement that failed, then one that held
        assert set(refused) == {BUSY} and workers.replaced == 2


def test_a_failed_start_is_tried_again_after_1_2_4_s_and_so_on_up_to_a_minute():
    assert [start_delay(failed) for failed in range(9)] == [0, 1, 2, 4, 8, 16, 32, 60, 60]


def test_closing_the_pool_fails_the_calls_in_flight(light):
    asked = in_thread(light.call, slow, 30)
    until(lambda: sum(w.in_flight for w in light.workers) == 1, 10, "computing")
    light.close()
    asked["thread"].join(10)
    assert str(asked.get("error")) == STOPPING and isinstance(asked["error"], Busy)
    with pytest.raises(Busy, match="stopping"):
        light.call(echo, 1)


def test_a_call_or_a_stream_past_its_timeout_is_a_fault_and_its_worker_goes_on(light):
    light.timeout = 1.0
    start = time.monotonic()
    with pytest.raises(LoggedFault, match="on our side"):
        light.call(slow, 20, worker=light.workers[0])
    updates = light.stream(pausing, 20)
    assert next(updates) == 1
    with pytest.raises(LoggedFault, match="on our side"):
        next(updates)
    assert time.monotonic() - start < 15
    assert light.call(echo, 5, worker=light.workers[0]) == 5 and light.replaced == 0
    assert len(set(light.on_each(slow, 1.5))) == 2          # a warm-up is part of a start: the start's timeout


def test_a_reply_that_cannot_be_read_ends_its_worker_and_fails_its_call(light):
    victim = light.workers[0]
    asked = in_thread(lambda: light.call(unreadable, worker=victim))
    asked["thread"].join(20)
    assert "on our side" in str(asked.get("error"))
    assert victim.process.poll() is not None                           # not left running unread
    until(lambda: light.workers[0] is not victim and light.workers[0].up, 60, "replaced")
    assert light.call(where, worker=light.workers[0]) == light.workers[0].process.pid


# ------------------------------------------------ the app's renderers in workers holding the real models ----

@shipped
def test_two_workers_answer_a_prompt_with_byte_identical_figures_as_one_process_does(explorer_models):
    explorer, workers = explorer_models
    inputs = {"attention": ("To be, or not to be", 1, 2, "probs", [], False, "gpt"),
              "tokens": ("To be, or not to be", True, "gpt"),
              "translate": ("The earth was empty.", 2, "cross", "average", "average", False)}
    for name, values in inputs.items():
        render = TABS[name].render
        with torch_threads(workers.threads):          # a sum over other threads adds in another order
            here = as_sent(render(explorer, *values))
        there = [workers.call(render, *values, worker=w) for w in workers.workers]
        assert there[0] == there[1] == here, name
        assert any(isinstance(v, FigureJSON) for v in here)
    with pytest.raises(UserError) as theirs:
        workers.call(TABS["tokens"].render, "   ", False, "gpt")
    with pytest.raises(UserError) as ours:
        TABS["tokens"].render(explorer, "   ", False, "gpt")
    assert str(theirs.value) == str(ours.value)


@shipped
def test_a_generation_streams_from_a_worker_as_it_does_here(explorer_models):
    explorer, workers = explorer_models
    values = ("Once upon a time", 0.8, 50, 0.95, 24, 7, False, -1, 0.0)
    with torch_threads(workers.threads):
        here = [as_sent(update) for update in generate_view(explorer, *values)]
    there = list(binder(explorer, workers)(generate_view)(*values))
    assert there[-1] == here[-1]                    # the whole text and both figures, the same seed's tokens


@contextmanager
def torch_threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def explorer_models():
    from toyviz.app.explorer import Explorer
    with start_workers(2, "gpt", "translator", "cpu") as workers:
        explorer = Explorer.load("gpt", "translator", "cpu")
        yield explorer, workers.wait_ready()
