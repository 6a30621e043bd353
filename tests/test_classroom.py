"""A lecture the class follows on phones (toyviz.classroom): its state on disk, the phones' routes over HTTP,
the QR code, and a short run of the lecture benchmark."""
import ast
import datetime as dt
import json
import re
import socket
import threading
import time
from pathlib import Path
from xml.etree import ElementTree

import fastapi
import gradio as gr
import pytest
import segno
from fastapi.testclient import TestClient

from benchmarks import lecture, stream
from toyviz.app import widgets
from toyviz.app.explorer import Explorer
from toyviz.app.presenter import Presenter
from toyviz.classroom import qr, routes, store
from toyviz.classroom.store import ALPHABET, Lectures, NotPresenter
from toyviz.classroom.throttle import Throttle
from toyviz.lessons import answers, library
from toyviz.lessons.library import lesson_of
from toyviz.models.checkpoint import CHECKPOINTS

CHROMIUM = stream.CHROMIUM


@pytest.fixture
def lectures(tmp_path):
    return Lectures(tmp_path / "lectures.sqlite3")


def at(monkeypatch, when: str):
    """The store's clock set to an ISO time (UTC)."""
    moment = dt.datetime.fromisoformat(when).replace(tzinfo=dt.timezone.utc)
    monkeypatch.setattr(store, "utc_now", lambda: moment)


# ---------------------------------------------------------------- the store ----------

def test_a_lecture_starts_on_step_0_with_a_short_code_and_a_long_secret(lectures):
    code, secret = lectures.start("sampling", 5)
    assert len(code) == 6 and set(code) <= set(ALPHABET) and len(secret) >= 32
    lecture = lectures.now(code)
    assert (lecture.code, lecture.lesson, lecture.step, lecture.steps, lecture.revealed) == (code, "sampling", 0, 5,
                                                                                             False)
    assert lectures.presenting(secret) == lecture
    assert lectures.now(code.lower()[:3] + " " + code.lower()[3:]) == lecture      # as a student types it
    assert secret not in lectures.path.read_bytes().decode("latin-1")              # only its hash is on disk
    assert lectures.presenting("not-the-secret") is None and lectures.now("ZZZZZZ") is None


def test_codes_of_the_day_differ(lectures):
    assert len({lectures.start("sampling", 3)[0] for _ in range(50)}) == 50


def test_the_presenter_moves_and_reveals_each_change_a_new_version(lectures):
    code, secret = lectures.start("sampling", 4)
    first = lectures.now(code)
    moved = lectures.move(secret, 2)
    assert (moved.step, moved.revealed) == (2, False) and moved.version == first.version + 1
    assert lectures.move(secret, 2) == moved                          # no change: the same version
    revealed = lectures.reveal(secret)
    assert revealed.revealed and revealed.version == moved.version + 1
    back = lectures.move(secret, 1)
    assert (back.step, back.revealed) == (1, False)                    # a move clears "revealed"
    assert lectures.move(secret, 99).step == 3 and lectures.move(secret, -5).step == 0     # clamped


def test_only_the_secret_drives(lectures):
    code, secret = lectures.start("sampling", 4)
    other_code, other_secret = lectures.start("sampling", 4)
    for wrong in (code, "", other_secret[:-1] + "x"):
        with pytest.raises(NotPresenter):
            lectures.move(wrong, 1)
        with pytest.raises(NotPresenter):
            lectures.reveal(wrong)
        with pytest.raises(gr.Error, match="only the presenter's link") as shown:    # as the app's page shows it
            widgets.friendly(lectures.move)(wrong, 1)
        assert not isinstance(shown.value, widgets.Fault)                 # the visitor's mistake, not ours
    lectures.move(other_secret, 3)
    assert lectures.now(code).step == 0 and lectures.now(other_code).step == 3


def test_one_vote_per_device_per_step_and_none_after_the_reveal(lectures):
    code, secret = lectures.start("sampling", 3)
    assert lectures.vote(code, "phone-a", " be") and lectures.vote(code, "phone-b", " be")
    assert lectures.vote(code, "phone-c", " do")
    assert not lectures.vote(code, "phone-a", " do")                   # a second vote on the same step
    assert lectures.tally(code, 0) == {" be": 2, " do": 1}
    lectures.move(secret, 1)
    assert lectures.vote(code, "phone-a", "higher")                    # a new step, a new ballot
    lectures.reveal(secret)
    assert not lectures.vote(code, "phone-b", "lower")                 # the answer is out
    lectures.move(secret, 0)
    lectures.move(secret, 1)
    assert not lectures.vote(code, "phone-d", "lower")                 # still out when the presenter comes back
    assert lectures.tally(code, 1) == {"higher": 1} and lectures.tally(code, 2) == {}
    for device, choice in (("", "x"), ("phone-e", ""), ("phone-e", "x" * 41)):
        assert not lectures.vote(code, device, choice)
    assert not lectures.vote("ZZZZZZ", "phone-a", " be")


def test_a_full_ballot_box_refuses(lectures, monkeypatch):
    monkeypatch.setattr(store, "VOTES_PER_STEP", 3)
    code, _ = lectures.start("sampling", 2)
    assert [lectures.vote(code, f"phone-{i}", "a") for i in range(5)] == [True, True, True, False, False]


def test_a_script_starting_lectures_in_a_loop_ends_its_own_never_a_classs(lectures, monkeypatch):
    """Issue 51's hostile visitor meets lecture starts: one address keeps LECTURES_PER_ADDRESS live (the one left
    longest unmoved ends, with its votes), a class's lecture from another address is untouched, and past
    LECTURES_LIVE in all a start is refused with the reason."""
    monkeypatch.setattr(store, "LECTURES_PER_ADDRESS", 3)
    class_code, class_secret = lectures.start("sampling", 4, "10.0.0.7")
    lectures.vote(class_code, "phone-a", " be")
    loop = [lectures.start("sampling", 4, "203.0.113.9") for _ in range(6)]
    lectures.vote(loop[-1][0], "phone-b", " be")
    assert [lectures.now(code) is not None for code, _ in loop] == [False, False, False, True, True, True]
    assert lectures.driven(class_secret).code == class_code and lectures.tally(class_code, 0) == {" be": 1}
    assert lectures.db().execute("SELECT COUNT(*) FROM votes").fetchone()[0] == 2     # the ended ones' went too
    lectures.move(loop[3][1], 1)                  # a lecture in use is moved: the next start ends another
    lectures.start("sampling", 4, "203.0.113.9")
    assert lectures.now(loop[3][0]) is not None and lectures.now(loop[4][0]) is None
    monkeypatch.setattr(store, "LECTURES_LIVE", 4)          # the class and the loop's 3
    with pytest.raises(store.UserError, match="running 4 lectures today"):
        lectures.start("sampling", 4, "198.51.100.2")


def test_a_lectures_file_from_before_addresses_were_kept_still_opens(tmp_path):
    import sqlite3
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:               # the lectures table as stops before 58 wrote it
        db.execute("CREATE TABLE lectures (code TEXT PRIMARY KEY, secret_hash TEXT NOT NULL UNIQUE, lesson TEXT "
                   "NOT NULL, step INTEGER NOT NULL, steps INTEGER NOT NULL, revealed INTEGER NOT NULL, expires "
                   "TEXT NOT NULL, version INTEGER NOT NULL, changed REAL NOT NULL)")
        db.execute("INSERT INTO lectures VALUES ('ABCDEF', 'x', 'sampling', 1, 4, 0, '2999-01-01', 3, 0)")
    lectures = Lectures(path)
    assert lectures.now("abc def").step == 1
    code, _ = lectures.start("sampling", 2, "10.0.0.7")
    assert lectures.now(code).step == 0


def test_votes_from_many_threads_at_once_count_once_each(lectures):
    code, _ = lectures.start("sampling", 2)
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(lectures.vote(code, f"phone-{i % 40}", "a")))
               for i in range(120)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 40 and lectures.tally(code, 0) == {"a": 40}


def test_a_restart_keeps_the_step_the_votes_and_the_answers(lectures):
    code, secret = lectures.start("sampling", 4)
    lectures.vote(code, "phone-a", " be")
    lectures.reveal(secret)
    lectures.move(secret, 2)
    lectures.vote(code, "phone-a", "5-8")
    again = Lectures(lectures.path)                                    # the Space restarted
    assert again.now(code) == lectures.now(code) and again.now(code).step == 2
    assert again.tally(code, 0) == {" be": 1} and again.tally(code, 2) == {"5-8": 1}
    assert not again.vote(code, "phone-a", "9-10")                     # still one vote per device
    assert again.move(secret, 3).step == 3                             # the presenter's link still drives


def test_the_path_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TOYVIZ_LECTURES", str(tmp_path / "here" / "class.sqlite3"))
    code, _ = Lectures().start("sampling", 2)
    assert (tmp_path / "here" / "class.sqlite3").is_file() and Lectures().now(code) is not None


def test_on_a_space_with_persistent_storage_lectures_are_kept_there(tmp_path, monkeypatch):
    monkeypatch.delenv("TOYVIZ_LECTURES", raising=False)
    monkeypatch.setattr(store, "SPACE_STORAGE", tmp_path / "data")
    assert store.default_path() == store.DEFAULT_PATH                  # no persistent storage: the cache folder
    (tmp_path / "data").mkdir()
    assert Lectures().path == tmp_path / "data" / "toyviz" / "lectures.sqlite3"


def test_a_code_expires_at_the_end_of_the_day_it_is_three_hours_old(lectures, monkeypatch):
    at(monkeypatch, "2026-11-25T09:00")
    code, secret = lectures.start("sampling", 3)
    lectures.vote(code, "phone-a", "x")
    assert lectures.now(code).expires == "2026-11-25"
    at(monkeypatch, "2026-11-25T23:59")
    assert lectures.now(code) is not None
    at(monkeypatch, "2026-11-26T00:01")
    assert lectures.now(code) is None and lectures.presenting(secret) is None
    with pytest.raises(NotPresenter):
        lectures.move(secret, 1)
    assert not lectures.vote(code, "phone-b", "x")
    lectures.start("sampling", 3)                                      # the next lecture sweeps the old one away
    assert lectures.db().execute("SELECT COUNT(*) FROM votes").fetchone()[0] == 0
    at(monkeypatch, "2026-11-25T22:30")                                # an evening class keeps its code past midnight
    assert lectures.now(lectures.start("sampling", 3)[0]).expires == "2026-11-26"


def test_the_model_answers_at_the_first_reveal_only_and_the_answer_is_kept(tmp_path, tiny_gpt, monkeypatch):
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    lectern = Presenter(Explorer(tiny_gpt, None), lectures)
    step = lesson_of("sampling").steps[0]
    expected, calls = answers.answer(step, tiny_gpt), []
    monkeypatch.setattr(answers, "answer", lambda *args: calls.append(args) or expected)
    code, secret = lectures.start("sampling", len(lesson_of("sampling").steps))
    assert lectures.answer(code, 0) is None
    lectern.reveal(secret)
    lectures.move(secret, 1)
    lectures.move(secret, 0)
    lectern.reveal(secret)
    assert len(calls) == 1 and lectures.answer(code, 0) == expected
    assert Lectures(lectures.path).answer(code, 0) == expected         # on disk, for the phones after a restart


def test_a_lecture_names_a_shipped_lesson_or_a_file(tmp_path):
    assert library.find("sampling") == library.SHIPPED / "sampling.md"
    mine = tmp_path / "mine.md"
    mine.write_text("---\ntitle: Mine\n---\n\n## One\ntab: tokens\n", encoding="utf-8")
    assert lesson_of(str(mine)).title == "Mine" and len(lesson_of(str(mine)).steps) == 1


def test_one_resolver_names_a_lecturers_lesson_and_the_store_only_stores(tmp_path, monkeypatch):
    """The lecturer's own lesson of a shipped lesson's name is the one a lecture reads (as the picker lists it);
    the store and the phones' routes import neither the models nor torch, nor the app: a reveal's answer is
    handed to them."""
    (tmp_path / "sampling.md").write_text("---\ntitle: Mine\n---\n\n## One\n", encoding="utf-8")
    monkeypatch.setenv("TOYVIZ_LESSONS", str(tmp_path))
    assert library.find("sampling") == library.available()["sampling"] == tmp_path / "sampling.md"
    assert lesson_of("sampling").title == "Mine"
    for module in ("toyviz.classroom.store", "toyviz.classroom.routes"):
        reached = imports_reached(module)
        assert "torch" not in reached and not {m for m in reached if m.startswith(("toyviz.models", "toyviz.api",
                                                                                   "toyviz.interpret"))}, module
        # nothing of the app: a lesson's views are written in toyviz.settings (the controls, the deep links), below it
        assert not {m for m in reached if m.startswith("toyviz.app")}, module


def imports_reached(module: str) -> set[str]:
    """The modules `module`'s source imports, followed through toyviz's own ("torch" for any of torch's), but not
    through toyviz's package face (toyviz/__init__.py, which loads the models for `toyviz.load`)."""
    root, reached, todo = Path(__file__).resolve().parent.parent, set(), [module]
    while todo:
        name = todo.pop()
        file, package = root / (name.replace(".", "/") + ".py"), root / name.replace(".", "/") / "__init__.py"
        path = file if file.is_file() else package if name != "toyviz" and package.is_file() else None
        if name.split(".")[0] == "torch":
            reached.add("torch")
        if name in reached or path is None:
            continue
        reached.add(name)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                todo += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return reached - {module}


# ---------------------------------------------------------------- the QR code ----------

def modules(svg: str) -> list[list[bool]]:
    """The dark modules an SVG from qr.svg draws: its path's runs "M x y.5 h n m dx dy …" back into a grid."""
    root = ElementTree.fromstring(svg)
    size = int(root.get("viewBox").split()[2])
    dark = next(p for p in root if p.get("stroke") == "#000").get("d")
    grid, x, y = [[False] * size for _ in range(size)], 0.0, 0.0
    for op, a, b in re.findall(r"([Mmhv])(-?[\d.]+)(?:[ ,](-?[\d.]+))?", dark):
        if op in "Mm":
            x, y = (float(a), float(b)) if op == "M" else (x + float(a), y + float(b))
        elif op == "h":
            for column in range(int(x), int(x + float(a))):
                grid[int(y)][column] = True
            x += float(a)
    return grid


def test_the_qr_code_is_the_student_link_with_its_quiet_zone():
    url = "https://teacher-toyviz.hf.space/class/K7P2QX"
    svg = qr.svg(url)
    assert svg.startswith("<svg") and 'fill="#fff"' in svg and "width=" not in svg      # the page sizes it
    expected = [[bool(m) for m in row] for row in segno.make(url, error="m", micro=False).matrix]
    grid = modules(svg)
    assert len(grid) == len(expected) + 8                                               # 4 light modules a side
    assert [row[4:-4] for row in grid[4:-4]] == expected
    assert not any(grid[0]) and not any(row[0] for row in grid)
    assert segno.make(url, error="m", micro=False).version <= 4     # coarse enough to scan from the back of a hall


# ---------------------------------------------------------------- the routes, over HTTP ----------

@pytest.fixture
def phones(lectures):
    """An HTTP client of a FastAPI app with the lecture routes attached, and a Sampling lecture on it."""
    app = fastapi.FastAPI()
    routes.attach(app, lectures)
    code, secret = lectures.start("sampling", len(lesson_of("sampling").steps))
    return TestClient(app), code, secret


def test_the_phone_page_is_served_for_a_code_and_for_none(phones):
    client, code, _ = phones
    for path in (f"/class/{code}", "/class"):
        page = client.get(path)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert 'name="viewport"' in page.text and "/now" in page.text


def test_now_is_the_current_step_small_and_304_while_unchanged(phones):
    client, code, secret = phones
    first = client.get(f"/class/{code}/now")
    body, tag = first.json(), first.headers["etag"]
    step = lesson_of("sampling").steps[0]
    assert (body["step"], body["steps"], body["revealed"], body["question"], body["choices"]) == \
           (0, len(lesson_of("sampling").steps), False, step.question.ask, list(step.question.choices))
    assert body["link"] == step.link and "answer" not in body and "tally" not in body
    assert len(first.content) < 400
    again = client.get(f"/class/{code}/now", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    client.post(f"/class/{code}/vote", json={"device": "phone-aaaa", "step": 0, "choice": " be"})
    assert client.get(f"/class/{code}/now", headers={"If-None-Match": tag}).status_code == 304   # votes: same step
    lectures_moved = client.post(f"/class/{code}/step", json={"secret": secret, "step": 1}).json()
    assert lectures_moved["step"] == 1
    moved = client.get(f"/class/{code}/now", headers={"If-None-Match": tag})
    assert moved.status_code == 200 and moved.json()["step"] == 1 and moved.headers["etag"] != tag
    assert client.get(f"/class/{code.lower()}/now").json()["step"] == 1                  # as a student types it
    assert client.get("/class/ZZZZZZ/now").status_code == 404


def test_the_routes_refuse_in_the_phones_language(phones, lectures):
    """The phone's page asks every route with its ?lang= (a Spanish lecture's QR link on an English phone); without
    one, the phone's Accept-Language; the /now body and its ETag are kept per language."""
    client, code, secret = phones
    ballot = lambda device, choice, lang, step=0: client.post(f"/class/{code}/vote?lang={lang}",
                                                               json={"device": device, "step": step, "choice": choice})
    assert ballot("phone-aaaa", " be", "es").json()["counted"]
    assert ballot("phone-aaaa", " do", "es").json()["why"] == "este teléfono ya ha votado en este paso"
    assert ballot("phone-aaaa", " do", "en").json()["why"] == "this phone has already voted on this step"
    assert ballot("phone-bbbb", "plátano", "es").json()["error"] == "'plátano' no es una de las opciones de este paso"
    assert ballot("phone-bbbb", " be", "es", step=1).json()["why"].startswith("el presentador ha pasado a otro paso")
    spanish_header = {"Accept-Language": "es-MX,es;q=0.9"}
    assert client.get("/class/ZZZZZZ/now", headers=spanish_header).json()["error"] == \
        "Hoy ninguna clase tiene el código ZZZZZZ (un código acaba con su día)."
    assert client.post(f"/class/{code}/reveal?lang=es", json={"secret": "guess"}).json()["error"] == \
        "solo el enlace del presentador puede mover o revelar esta clase"
    tags = {lang: client.get(f"/class/{code}/now?lang={lang}").headers["etag"] for lang in ("en", "es")}
    assert tags["en"] != tags["es"]
    assert client.get(f"/class/{code}/now?lang=en", headers={"If-None-Match": tags["es"]}).status_code == 200
    lectures.end(secret, {})
    assert client.get(f"/class/{code}/now?lang=es").json()["error"].startswith("El presentador ha terminado la clase")


def test_a_student_cannot_advance_or_reveal(phones, lectures):
    client, code, secret = phones
    _, other_secret = lectures.start("sampling", 3)
    for secret_tried in ("", code, "guess" * 8, other_secret):      # another lecture's presenter neither
        assert client.post(f"/class/{code}/step", json={"secret": secret_tried, "step": 3}).status_code == 403
        assert client.post(f"/class/{code}/reveal", json={"secret": secret_tried}).status_code == 403
    assert client.post(f"/class/{code}/step", json={"step": 3}).status_code == 422
    assert lectures.now(code).step == 0 and not lectures.now(code).revealed
    assert client.post(f"/class/{code}/step", json={"secret": secret, "step": 3}).status_code == 200


def test_votes_over_http_once_per_device_then_the_reveal_shows_them_beside_the_answer(phones, lectures):
    client, code, secret = phones
    ballot = lambda device, choice, step=0: client.post(f"/class/{code}/vote",
                                                         json={"device": device, "step": step, "choice": choice})
    assert ballot("phone-aaaa", " be").json() == {"counted": True, "step": 0, "why": ""}
    assert ballot("phone-bbbb", " do").json()["counted"]
    second = ballot("phone-aaaa", " do").json()
    assert not second["counted"] and "already voted" in second["why"]
    assert ballot("phone-cccc", "banana").status_code == 422                # not one of the step's choices
    assert ballot("bad id", " be").status_code == 422
    assert ballot("phone-cccc", " be", step=1).status_code == 409            # a phone behind the presenter
    assert client.post(f"/class/{code}/reveal", json={"secret": secret}).json()["revealed"]
    closed = ballot("phone-cccc", " be").json()
    assert not closed["counted"] and "closed" in closed["why"]
    now = client.get(f"/class/{code}/now").json()
    assert now["revealed"] and now["tally"] == {" be": 1, " do": 1} and "point" in now
    assert now["answer"] is None                # this store has no model: nothing computed (the next test has one)


def test_after_the_reveal_phones_get_the_models_answer(tmp_path, tiny_gpt):
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    app = fastapi.FastAPI()
    routes.attach(app, lectures, Presenter(Explorer(tiny_gpt, None), lectures).reveal_lecture)
    client = TestClient(app)
    code, secret = lectures.start("sampling", 3)
    client.post(f"/class/{code}/reveal", json={"secret": secret})
    expected = answers.answer(lesson_of("sampling").steps[0], tiny_gpt)
    assert client.get(f"/class/{code}/now").json()["answer"] == {"value": expected.value, "detail": expected.detail,
                                                                 "choice": expected.choice}


def test_a_loop_guessing_codes_or_stuffing_votes_is_throttled(lectures, monkeypatch):
    monkeypatch.setattr(routes, "JOINS", (5, 0.01))
    monkeypatch.setattr(routes, "VOTES", (5, 0.01))
    app = fastapi.FastAPI()
    routes.attach(app, lectures)
    client = TestClient(app)
    code, _ = lectures.start("sampling", 3)
    guesses = [client.get(f"/class/{guess}/now").status_code for guess in ("AAAAAA", "AAAAAB", "AAAAAC") * 3]
    assert guesses[:5] == [404] * 5 and set(guesses[5:]) == {429}
    assert client.get(f"/class/{code}/now").status_code == 200          # following a real lecture is never refused
    stuffed = [client.post(f"/class/{code}/vote", json={"device": f"made-up-{i:04}", "step": 0, "choice": " be"})
               for i in range(8)]
    assert [r.status_code for r in stuffed] == [200] * 5 + [429] * 3 and int(stuffed[-1].headers["retry-after"]) >= 1
    assert lectures.tally(code, 0) == {" be": 5}


def test_the_throttles_count_each_visitor_behind_a_trusted_proxy(lectures, monkeypatch):
    """On a Space every phone reaches the server through its proxy: counted by the peer's address, one script's
    guesses would spend every phone's joins. Behind TOYVIZ_TRUSTED_PROXIES=1 each visitor is the address the proxy
    appended; with no proxy trusted, a forged X-Forwarded-For changes nothing."""
    monkeypatch.setattr(routes, "JOINS", (3, 0.01))
    app = fastapi.FastAPI()
    routes.attach(app, lectures)
    client = TestClient(app)

    def guesses(forwarded: str) -> list[int]:
        return [client.get(f"/class/AAAAA{c}/now", headers={"X-Forwarded-For": forwarded}).status_code
                for c in "BCDE"]
    monkeypatch.setenv("TOYVIZ_TRUSTED_PROXIES", "1")
    assert guesses("203.0.113.9") == [404] * 3 + [429]                     # the script, refused
    assert guesses("198.51.100.4") == [404] * 3 + [429]                    # a student behind the same proxy: their own
    monkeypatch.setenv("TOYVIZ_TRUSTED_PROXIES", "0")
    assert guesses("192.0.2.1") == [404] * 3 + [429]                       # the peer's own bucket
    assert guesses("192.0.2.2") == [429] * 4                               # forging the header does not refill it


def test_a_throttle_lets_a_burst_through_then_refills():
    throttle = Throttle(burst=3, per_second=2)
    assert [throttle.wait("a", now=0) for _ in range(4)] == [0, 0, 0, 0.5]
    assert throttle.wait("b", now=0) == 0                                 # another client, its own bucket
    assert throttle.wait("a", now=0.5) == 0 and throttle.wait("a", now=0.5) > 0


# ---------------------------------------------------------------- a lecture hall on loopback ----------

@pytest.mark.load
@pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(),
                    reason="checkpoints/gpt is missing: run `python -m toyviz.train gpt`")
def test_a_short_lecture_of_thirty_phones_against_app_py(capsys):
    """`python -m benchmarks.lecture --quick`: `python app.py` serves the routes, 30 phones follow and vote while
    the presenter moves and reveals. Asserted: nothing failed, every phone saw every change, no traceback.
    Printed, not asserted: the follow latency, CPU and memory (the benchmark's targets, on a machine that may be
    busy)."""
    figures = lecture.main(["--quick"])
    with capsys.disabled():
        print("\nlecture:", json.dumps(figures, ensure_ascii=False))
    assert figures["errors"] == 0, figures["error_messages"]
    assert figures["presenter_changes"] >= 3 and figures["followed"] == 1.0
    assert figures["votes"].get("counted", 0) > 0
    assert figures["server_tracebacks"] == 0, figures["server_errors"]


# ---------------------------------------------------------------- the phone page in Chromium ----------

TYPED = """---
title: Typed
---

## Say a token
tab: sample
prompt: To be, or not to
ask: Type the token you expect next
answer: top token

## Look
tab: tokens
"""


@pytest.fixture
def served(lectures, tmp_path):
    """The routes on a real port (uvicorn on a thread), a stand-in app page at /, a lesson without choices."""
    uvicorn = pytest.importorskip("uvicorn")
    app = fastapi.FastAPI()
    routes.attach(app, lectures)
    app.get("/")(lambda: fastapi.responses.HTMLResponse("<h1 id=app-page>the app</h1>"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    lesson = tmp_path / "typed.md"
    lesson.write_text(TYPED, encoding="utf-8")
    yield f"http://127.0.0.1:{port}", str(lesson)
    server.should_exit = True
    thread.join(timeout=10)


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"Debian's chromium is not installed at {CHROMIUM}")
def test_the_phone_page_types_an_answer_explores_and_says_when_a_code_is_wrong(served, lectures):
    sync_api = pytest.importorskip("playwright.sync_api")
    url, lesson = served
    code, secret = lectures.start(lesson, 2)
    with sync_api.sync_playwright() as p:
        browser = stream.launch(p)
        phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        phone.set_default_timeout(10_000)
        errors = []
        phone.on("pageerror", lambda err: errors.append(str(err)))
        expect = sync_api.expect

        phone.goto(f"{url}/class/{code}")
        expect(phone.locator("#question")).to_have_text("Type the token you expect next")
        phone.locator("#typed-answer").fill(" be")
        phone.locator("#typed button").click()
        expect(phone.locator("#status")).to_have_text("Your vote: ␣be. Wait for the reveal.")
        expect(phone.locator("#typed")).to_be_hidden()                  # one vote: the box is gone
        phone.reload()                                                  # and stays gone after a reload
        expect(phone.locator("#status")).to_have_text("Your vote: ␣be. Wait for the reveal.")
        assert lectures.tally(code, 0) == {" be": 1}

        lectures.reveal(secret)                                         # no model here: votes, no answer
        expect(phone.locator("#tally")).to_contain_text("␣be: 1 vote")
        expect(phone.locator("#tally")).to_contain_text("The answer is on the presenter's screen.")

        phone.locator("#explore-button").click()                       # the app over the lecture, at the step's view
        expect(phone.frame_locator("#app").locator("#app-page")).to_have_text("the app")
        assert phone.locator("#app").get_attribute("src") == "/" + lesson_of(lesson).steps[0].link
        lectures.move(secret, 1)
        expect(phone.locator("#moved")).to_have_text("The presenter is on step 2 of 2.")
        phone.locator("#back").click()
        expect(phone.locator("#title")).to_have_text("Look")
        expect(phone.locator("#question")).to_have_text("Look at the presenter's screen.")

        phone.goto(f"{url}/class/NOPE22")
        expect(phone.locator("#problem")).to_contain_text("No lecture has the code NOPE22 today")
        expect(phone.locator("#join")).to_be_visible()
        assert not errors, errors
        browser.close()
