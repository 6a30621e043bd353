"""A public Space that runs for a term (issue 35): nothing a visitor does accumulates on disk, one visitor
in a loop is refused at their allowance while others are served, and faults stay local: a full or
unwritable disk fails only the export, a killed generation thread fails only its generations, a broken
checkpoint only its model's tabs.
"""
import errno
import os
import random
import shutil
import threading
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr
import httpx
import pytest
import torch

from toyviz.errors import Unavailable
from benchmarks import students
from toyviz.serving import batching, files, limits

gradio_client = pytest.importorskip("gradio_client")
from gradio_client.exceptions import AppError  # noqa: E402

import app  # noqa: E402
from test_app import TIMEOUT, App, export_args  # noqa: E402
from toyviz.app.views import export as export_view  # noqa: E402
from toyviz.app.explorer import Explorer  # noqa: E402

PAGE = "<html>" + "x" * 10_000 + "</html>"


def files_in(folder: Path) -> list[Path]:
    return [f for f in Path(folder).rglob("*") if f.is_file()]


# ------------------------------------------------------------------------------ exports on disk -----

def test_gradio_serves_exports_from_its_own_folder():
    """Written inside Gradio's cache folder, an export is served as it is, not copied a second time."""
    assert files.gradio_cache() == Path(gr.utils.get_upload_folder()).resolve()


def test_fifty_exports_stay_under_the_budget(tmp_path):
    store = files.Exports(tmp_path, budget=5 * len(PAGE))
    paths = [store.write(f"toyviz-{i}.html", PAGE) for i in range(50)]
    assert store.bytes() <= 5 * len(PAGE) and len(files_in(tmp_path)) == 5
    assert all(Path(p).exists() for p in paths[-5:]) and Path(paths[-1]).read_text() == PAGE
    assert len(list(tmp_path.iterdir())) == 5                 # no empty folder left per export either


def test_expired_exports_are_removed(tmp_path):
    store = files.Exports(tmp_path, keep_s=60)
    old = Path(store.write("toyviz-tokens.html", PAGE))
    os.utime(old, (time.time() - 120, time.time() - 120))
    new = Path(store.write("toyviz-tokens.html", PAGE))      # the same name, another visitor
    assert not old.exists() and not old.parent.exists() and new.read_text() == PAGE


def test_an_unwritable_folder_is_the_servers_fault_said_to_the_visitor(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(Unavailable, match="Export is unavailable"):
        files.Exports(tmp_path / "file" / "exports").write("toyviz-tokens.html", PAGE)


def test_a_full_disk_is_a_message_and_leaves_nothing(tmp_path, monkeypatch):
    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(Unavailable, match="Export is unavailable.*No space left on device"):
        files.Exports(tmp_path).write("toyviz-tokens.html", PAGE)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ allowances ----------

def test_an_allowance_refuses_one_visitor_and_serves_another():
    allowance = limits.Allowance("exported", 3, "views")
    for _ in range(3):
        allowance.take("a", now=100.0)
    with pytest.raises(gr.Error, match=r"exported 3 views in the last minute.*Try again in 50 s"):
        allowance.take("a", now=110.0)
    allowance.take("b", now=110.0)                            # another visitor is served
    allowance.take("a", now=160.5)                            # a minute after a's first start
    allowance.take("c", now=1000.0)
    assert set(allowance.used) == {"c"}                       # visitors of the past minute only are kept


def test_a_request_larger_than_the_allowance_runs_alone():
    allowance = limits.Allowance("generated", 100, "tokens")
    allowance.take("a", cost=500, now=0.0)
    with pytest.raises(gr.Error, match="generated 500 tokens"):
        allowance.take("a", cost=1, now=30.0)


def test_a_students_minute_is_within_the_allowance():
    """Twenty of benchmarks.load's students, each at its think-time but answered at once (faster than any
    class), for five minutes of their own requests (their mix, their texts, their beams and lengths): the
    allowances never refuse one of them."""
    for seed in range(20):
        rng, now = random.Random(seed), 0.0
        allowances = {action: limits.Allowance(a.what, a.per_minute, a.unit, a.cost)     # this student's own
                      for action, a in limits.ALLOWANCES.items()}
        while now < 5 * limits.WINDOW_S:
            now += rng.uniform(*students.THINK_S)
            action = rng.choices([a for a, _ in students.MIX], [w for _, w in students.MIX])[0]
            _, args = students.request_args(action, rng)
            if action in allowances:
                allowances[action].take(seed, allowances[action].cost(args), now=now)   # gr.Error if refused


def test_beam_eight_counts_twice():
    cost = limits.ALLOWANCES["translate"].cost
    assert cost(("x", 8)) == 2 * cost(("x", 4)) == 2


def test_the_queue_keeps_a_thousand_event_records_and_summarises_them_once_a_thousand(monkeypatch):
    """Gradio's queue summarised its last 10,000 events with pandas after every event (17 ms under the
    interpreter lock each, once the records were full); after prepare_server a queue keeps 1,000 records
    and summarises them once every 1,000 events. A value the environment already gives is kept."""
    from toyviz.serving.server import QUEUE_RECORDS, summarise_events_rarely
    for name in QUEUE_RECORDS:
        monkeypatch.setenv(name, "0")                   # recorded, so the test leaves the environment as it was
        monkeypatch.delenv(name)
    summarise_events_rarely()
    with gr.Blocks() as demo:
        gr.Textbox()
    demo.queue()
    assert demo._queue.ANALYTICS_MAX_EVENTS == 1000
    assert demo._queue.ANAYLTICS_CACHE_FREQUENCY == 1000               # sic: Gradio's spelling
    monkeypatch.setenv("GRADIO_ANALYTICS_MAX_EVENTS", "50")
    summarise_events_rarely()
    assert os.environ["GRADIO_ANALYTICS_MAX_EVENTS"] == "50"


# ------------------------------------------------------------------------------ through the app -----

@pytest.fixture
def tiny_app(tiny_checkpoints, tmp_path, monkeypatch):
    """An app on the tiny checkpoints whose Gradio cache, temp folder and exports are this test's own."""
    for name in ("gradio", "tmp"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    a = App(Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu"))
    a.root = tmp_path
    yield a
    a.close()


def client(a: App):
    """A client of its own that leaves files on the server (its downloads would land in /tmp/gradio)."""
    return gradio_client.Client(a.url, verbose=False, analytics_enabled=False, download_files=False)


def export(client, prompt) -> str:
    """/export → the exported file's URL."""
    update = client.submit(*export_args(prompt), api_name="/export").result(timeout=TIMEOUT)
    return update["value"]["url"]


def test_the_server_runs_on_uvloop_and_httptools(tiny_app):
    """uvicorn picks the C event loop and HTTP parser where they are installed (requirements.txt)."""
    config = tiny_app.demo.server.config
    assert config.http_protocol_class.__name__ == "HttpToolsProtocol"
    loop = config.get_loop_factory()()
    try:
        assert type(loop).__module__.startswith("uvloop")
    finally:
        loop.close()


def test_exports_are_bounded_and_the_looping_client_alone_is_refused(tiny_app, monkeypatch):
    """A client exporting in a loop gets a message after its allowance while another client's export is
    served; Gradio serves each file from the exports folder (no copy), which stays under its budget, and
    nothing is left in the temp folder."""
    folder = tiny_app.root / "gradio" / "toyviz-exports"
    monkeypatch.setattr(export_view, "EXPORTS", files.Exports(folder))
    first, before = Path(export_view.EXPORTS.write("probe.html", PAGE)), files_in(tiny_app.root / "tmp")   # tiktoken's cache
    student, looping = client(tiny_app), client(tiny_app)
    size = len(httpx.get(export(student, "What size is a page?"), timeout=TIMEOUT).content)
    monkeypatch.setattr(export_view.EXPORTS, "budget", 3 * size)
    served = [export(looping, f"Export {i}") for i in range(int(limits.ALLOWANCES["export"].per_minute))]
    with pytest.raises(AppError, match="You have exported 6 views in the last minute"):
        export(looping, "One more")
    page = httpx.get(export(student, "Another student"), timeout=TIMEOUT)
    assert page.status_code == 200 and page.text.count('class="plotly-graph-div"') > 0
    assert httpx.get(served[-1], timeout=TIMEOUT).status_code == 200
    on_disk = files_in(tiny_app.root / "gradio")
    assert all(folder in f.parents for f in on_disk), on_disk            # nothing copied beside the exports
    assert sum(f.stat().st_size for f in on_disk) <= 3 * size and not first.exists()
    assert files_in(tiny_app.root / "tmp") == before


def test_export_on_a_full_disk_says_so_and_every_tab_still_works(tiny_app, monkeypatch):
    (tiny_app.root / "full").write_text("a file where the exports folder should be")
    monkeypatch.setattr(export_view, "EXPORTS", files.Exports(tiny_app.root / "full" / "exports"))
    with pytest.raises(AppError, match="Export is unavailable.*the server's doing, not yours"):
        export(client(tiny_app), "Export on a full disk")
    tiny_app.still_answers()
    note, spanish, *_ = tiny_app.call("The earth was formless.", 1, "cross", "average", "average", False,
                                      api="/translate")
    assert isinstance(spanish, str)


def test_a_broken_checkpoint_leaves_the_other_model_serving(tiny_checkpoints, tmp_path):
    broken = tmp_path / "gpt"
    shutil.copytree(tiny_checkpoints["gpt"], broken)
    weights = next(broken.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:100])                      # a read cut short
    a = App(Explorer.load(str(broken), str(tiny_checkpoints["translator"]), "cpu"))
    try:
        assert "cannot load" in a.explorer.models.problems["gpt"]
        with pytest.raises(AppError, match="no GPT checkpoint is loaded"):
            a.call("To be", False, "gpt", api="/tokens")
        a.call("The earth was formless.", 1, "cross", "average", "average", False, api="/translate")
    finally:
        a.close()


class Killed(BaseException):
    """What an Exception handler cannot catch (as a thread killed from outside)."""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")     # the kill, as intended
def test_a_killed_generation_thread_fails_its_streams_not_the_next(tiny_gpt, monkeypatch):
    streams, real_round = batching.Streams(tiny_gpt.model), batching.Streams._round
    kills = [Killed()]

    def round_or_die(self, *args):
        if kills:
            raise kills.pop()
        return real_round(self, *args)
    monkeypatch.setattr(batching.Streams, "_round", round_or_die)
    outcome = {}

    def read():
        try:
            outcome["tokens"] = list(streams.generate_ids([1, 2, 3], 5, seed=0))
        except RuntimeError as err:
            outcome["error"] = str(err)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "a reader waits for good on a dead thread"
    assert "press Generate again" in outcome.get("error", "")
    after = list(streams.generate_ids([1, 2, 3], 5, seed=0))              # a new thread serves the next one
    assert [s.token for s in after] == [s.token for s in tiny_gpt.model.generate_ids([1, 2, 3], 5, seed=0,
                                                                                      use_cache=True)]


def test_uploads_are_refused(tiny_checkpoints, tmp_path, monkeypatch):
    """The page takes no files; Gradio would keep anyone's POST to /upload in its cache."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    demo = app.build(Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu"))
    demo.queue()
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **app.launch_options())
    try:
        answer = httpx.post(url + "gradio_api/upload", files={"files": ("big.txt", b"x" * 100_000)}, timeout=TIMEOUT)
        assert answer.status_code == 413 and files_in(tmp_path) == []
    finally:
        demo.close()


SESSION_MB = 0.05           # a bound over the 0.02 MB a session docs/deploying.md quotes (Gradio's own: 0.36 MB)


def test_sessions_are_kept_within_their_bound(tiny_checkpoints):
    """Gradio keeps each session until SESSIONS_KEPT newer ones push it out: the app launches with that
    bound, and what one session holds (sharing the page's default config: toyviz.serving.sessions, set up by
    prepare_server) times the bound stays within what docs/deploying.md says."""
    import tracemalloc
    from gradio.state_holder import SessionState
    from toyviz.serving.sessions import share_default_configs
    share_default_configs()
    demo = app.build(Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu"))
    demo.queue()
    demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **app.launch_options())
    try:
        holder = demo.state_holder
        assert holder.capacity == app.SESSIONS_KEPT < 10_000
        SessionState(demo)                                           # what the first one makes once
        tracemalloc.start()
        try:
            sessions = [SessionState(demo) for _ in range(20)]
            per_session = tracemalloc.get_traced_memory()[0] / len(sessions)
        finally:
            tracemalloc.stop()
        print(f"a session holds {per_session / files.MB:.3f} MB")
        assert 0.001 * files.MB < per_session <= SESSION_MB * files.MB, per_session / files.MB
        for i in range(app.SESSIONS_KEPT + 5):                       # the least recently used go
            holder.session_data[f"visitor-{i}"] = sessions[0]
            holder.update(f"visitor-{i}")
        assert len(holder.session_data) == app.SESSIONS_KEPT and "visitor-0" not in holder.session_data
    finally:
        demo.close()
