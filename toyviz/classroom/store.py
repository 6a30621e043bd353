"""A lecture's state on disk: which lesson, which step, revealed or not, the class's votes, the model's answers.

It only stores: the model's answer to a step is computed by whoever reveals it (toyviz.app.presenter) and handed
over; the lesson a lecture names is read by toyviz.lessons.library.

SQLite from the standard library, so that a Space restarting mid-lecture comes back on the same step with the
same votes. Two keys open a lecture (reveal.js multiplex's idea, the W3C TAG's capability URLs):
- the join code, short and typed by 120 students off a projector: it grants only following and voting;
- the presenter's secret (`secrets.token_urlsafe(24)`, 192 bits), which drives; only its SHA-256 is stored, so the
  file on disk cannot drive a lecture.
A lecture expires at the end of the day (UTC) on which it is three hours old, so that an evening class does not
lose its code at midnight UTC; expired lectures, their votes and answers are deleted when the next one starts.
A start is bounded too: at most LECTURES_PER_ADDRESS live from one address (the one left longest unmoved ends
first) and LECTURES_LIVE in all, so a script starting lectures in a loop fills neither the disk nor the codes.
Nothing personal is kept: a vote is (lecture, step, a random id the phone made up, the choice).

The presenter's End lecture (`end`) keeps what a report needs and deletes the lecture: per step, what the caller
says the step was (its content and hash, toyviz.classroom.report makes it from the lesson), how long it was shown,
the model's answer and the class's tally; the date, the lesson, the number of phones that voted. Reports are read
with the presenter's secret alone (the lecturer's browser keeps it), the newest REPORTS_KEPT of them and of those
the newest REPORTS_PER_ADDRESS ended from any one address (the presenter's, as the trusted proxies report it), so
that one visitor ending lectures in a loop cannot push out a class's; on a public Space (SPACE_ID set) none longer
than SPACE_REPORT_DAYS.

Gradio answers on many threads: each thread has its own connection, the file is in WAL mode (readers never wait
for a writer, so 100 phones polling do not queue behind a vote), and every change is one transaction.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from toyviz.errors import UserError
from toyviz.i18n import LANGUAGES, mistake, t
from toyviz.lessons.format import Answer

DEFAULT_PATH = Path("~/.cache/toyviz/lectures.sqlite3")
# a Hugging Face Space's own disk is emptied when the Space restarts; its persistent storage, where bought, is
# mounted here and kept: a lecture is kept there when it exists
SPACE_STORAGE = Path("/data")
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"     # no 0/O, 1/I/L: read off a projector at the back of a hall
CODE_LENGTH = 6                                  # 31**6 ≈ 890 million codes
LECTURE_HOURS = 3                                # a lecture keeps its code at least this long
VOTES_PER_STEP = 2000                            # a step's ballot box is full past this: a flood cannot fill the disk
LONGEST_CHOICE = 40                              # a typed answer is a token or a number, not an essay
REPORTS_KEPT = 200                               # ended lectures' reports kept, newest first
REPORTS_PER_ADDRESS = 20                         # of them, at most this many ended from one address: a script
                                                 # starting and ending lectures in a loop pushes out its own
SPACE_REPORT_DAYS = 30                           # a public Space keeps a report this long at most
LECTURES_PER_ADDRESS = 50                        # live lectures started from one address: the next ends the one
                                                 # left longest unmoved, so a script starting lectures in a loop
                                                 # ends its own, and a school behind one router still has 50
LECTURES_LIVE = 10_000                           # live lectures in all: past it a start is refused (a loop would
                                                 # need 200 addresses); they expire by the day's end

SCHEMA = """
CREATE TABLE IF NOT EXISTS lectures (
    code TEXT PRIMARY KEY, secret_hash TEXT NOT NULL UNIQUE, lesson TEXT NOT NULL, step INTEGER NOT NULL,
    steps INTEGER NOT NULL, revealed INTEGER NOT NULL, expires TEXT NOT NULL, version INTEGER NOT NULL,
    changed REAL NOT NULL, address TEXT NOT NULL DEFAULT '?');
CREATE TABLE IF NOT EXISTS votes (
    code TEXT NOT NULL, step INTEGER NOT NULL, device TEXT NOT NULL, choice TEXT NOT NULL,
    PRIMARY KEY (code, step, device));
CREATE TABLE IF NOT EXISTS answers (         -- a row once a step is revealed; value NULL: no model answered
    code TEXT NOT NULL, step INTEGER NOT NULL, value TEXT, detail TEXT, choice INTEGER,
    PRIMARY KEY (code, step));
CREATE TABLE IF NOT EXISTS shown (           -- how long each step was on the screen; since: shown now, from then
    code TEXT NOT NULL, step INTEGER NOT NULL, first REAL NOT NULL, seconds REAL NOT NULL, since REAL,
    PRIMARY KEY (code, step));
CREATE TABLE IF NOT EXISTS reports (         -- an ended lecture, read with its presenter's secret
    id INTEGER PRIMARY KEY AUTOINCREMENT, secret_hash TEXT NOT NULL, code TEXT NOT NULL, lesson TEXT NOT NULL,
    started REAL NOT NULL, ended REAL NOT NULL, phones INTEGER NOT NULL, address TEXT NOT NULL DEFAULT '?');
CREATE INDEX IF NOT EXISTS reports_by_secret ON reports (secret_hash);
CREATE TABLE IF NOT EXISTS report_steps (    -- content: the step as the caller described it (JSON, its hash inside)
    report INTEGER NOT NULL, step INTEGER NOT NULL, content TEXT NOT NULL, seconds REAL NOT NULL,
    revealed INTEGER NOT NULL, value TEXT, detail TEXT, choice INTEGER, tally TEXT NOT NULL,
    PRIMARY KEY (report, step));
"""
COLUMNS = "code, lesson, step, steps, revealed, expires, version, changed"


class NotPresenter(UserError):
    """A request to drive a lecture without its presenter's secret."""


@dataclass(frozen=True)
class Lecture:
    code: str                # the join code
    lesson: str              # what `start` was given: a lesson's name (toyviz.lessons.library.find reads it)
    step: int                # 0 .. steps-1
    steps: int
    revealed: bool           # the current step's answer is out
    expires: str             # ISO date (UTC): the code works until that day ends
    version: int             # +1 on every move and reveal (not on votes): the phones' ETag
    changed: float           # when the presenter last moved or revealed (Unix time): "not changed for 4 min"


@dataclass(frozen=True)
class Kept:
    """A step as End lecture kept it."""
    step: int
    content: dict            # what the caller said the step was (toyviz.classroom.report.content)
    seconds: float           # how long it was on the presenter's screen, all visits together
    revealed: bool
    answer: Answer | None    # the model's, when it was revealed and a model answered
    tally: dict[str, int]    # choice → votes, most first


@dataclass(frozen=True)
class Report:
    """An ended lecture: what its report is made of (toyviz.classroom.report)."""
    id: int
    code: str
    lesson: str
    started: float           # Unix time the first step was shown
    ended: float             # Unix time of End lecture
    phones: int              # phones that voted at least once
    steps: tuple[Kept, ...] = ()      # () when listed (`reports`), every step when read (`report`)


def report_days() -> int | None:
    """How many days a report is kept: SPACE_REPORT_DAYS on a public Space (SPACE_ID set), else no limit of age."""
    return SPACE_REPORT_DAYS if os.environ.get("SPACE_ID") else None


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def today() -> str:
    return utc_now().date().isoformat()


def default_path() -> Path:
    kept = SPACE_STORAGE.is_dir() and os.access(SPACE_STORAGE, os.W_OK)
    return SPACE_STORAGE / "toyviz" / DEFAULT_PATH.name if kept else DEFAULT_PATH


def normal(code: str) -> str:
    """A code as typed ("k7p 2qx") → as stored ("K7P2QX")."""
    return "".join(code.split()).upper()


class Lectures:
    """Every lecture in one SQLite file: `path`, else $TOYVIZ_LECTURES, else /data/toyviz/lectures.sqlite3 on a Space
    with persistent storage, else ~/.cache/toyviz/lectures.sqlite3. A step's answer is stored as its first reveal
    hands it over, so a hundred phones read it instead of recomputing it."""

    def __init__(self, path=None):
        self.path = Path(path or os.environ.get("TOYVIZ_LECTURES") or default_path()).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.local = threading.local()
        with self.db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            for table in ("lectures", "reports"):        # a file written before lectures and reports kept an address
                if "address" not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN address TEXT NOT NULL DEFAULT '?'")

    def db(self) -> sqlite3.Connection:
        """This thread's connection; `with` it for one transaction."""
        if not hasattr(self.local, "db"):
            db = sqlite3.connect(self.path, timeout=10)
            db.execute("PRAGMA synchronous=NORMAL")         # WAL: a crash of the process loses nothing committed
            self.local.db = db
        return self.local.db

    # ------------------------------------------------------------ reading ---

    def lecture(self, where: str, key: str) -> Lecture | None:
        row = self.db().execute(f"SELECT {COLUMNS} FROM lectures WHERE {where} = ? AND expires >= ?",
                                (key, today())).fetchone()
        return None if row is None else Lecture(*row[:4], bool(row[4]), *row[5:])

    def now(self, code: str) -> Lecture | None:
        """The lecture a join code follows; None when the code is unknown or expired."""
        return self.lecture("code", normal(code))

    def presenting(self, secret: str) -> Lecture | None:
        """The lecture `secret` drives; None when it drives none (or that lecture expired)."""
        return self.lecture("secret_hash", digest(secret))

    def tally(self, code: str, step: int) -> dict[str, int]:
        """The class's votes on a step: choice → how many, most first."""
        rows = self.db().execute("SELECT choice, COUNT(*) FROM votes WHERE code = ? AND step = ? GROUP BY choice "
                                 "ORDER BY COUNT(*) DESC, choice", (normal(code), step)).fetchall()
        return dict(rows)

    def closed(self, code: str, step: int) -> bool:
        """Whether a step was ever revealed: its votes are closed for good, even when the presenter comes back."""
        return self.db().execute("SELECT 1 FROM answers WHERE code = ? AND step = ?",
                                 (normal(code), step)).fetchone() is not None

    def answer(self, code: str, step: int) -> Answer | None:
        """The model's answer to a step's question, as stored at its reveal (None: not revealed, or no answer)."""
        row = self.db().execute("SELECT value, detail, choice FROM answers WHERE code = ? AND step = ?",
                                (normal(code), step)).fetchone()
        return None if row is None or row[0] is None else Answer(*row)

    # ------------------------------------------------------------ changing ---

    def start(self, lesson: str, steps: int, address: str = "?") -> tuple[str, str]:
        """A new lecture on step 0 → (join code, presenter's secret), started from `address` (the presenter's, as
        the trusted proxies report it). The secret is not kept: lose it, start again."""
        if steps < 1:
            raise ValueError("a lecture needs at least one step")
        secret, now = secrets.token_urlsafe(24), time.time()
        expires = (utc_now() + dt.timedelta(hours=LECTURE_HOURS)).date().isoformat()
        with self.db() as db:
            self.forget(db, "SELECT code FROM lectures WHERE expires < ?", (today(),))
            self.forget(db, "SELECT code FROM lectures WHERE address = ? AND code NOT IN (SELECT code FROM lectures "
                            "WHERE address = ? ORDER BY changed DESC LIMIT ?)",
                        (address, address, LECTURES_PER_ADDRESS - 1))
            if db.execute("SELECT COUNT(*) FROM lectures").fetchone()[0] >= LECTURES_LIVE:
                raise mistake("errors.lesson.server_full", most=LECTURES_LIVE)
            while True:                                  # a clash among the day's codes: draw again
                code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
                try:
                    db.execute(f"INSERT INTO lectures ({COLUMNS}, secret_hash, address) "
                               "VALUES (?, ?, 0, ?, 0, ?, 1, ?, ?, ?)",
                               (code, str(lesson), steps, expires, now, digest(secret), address))
                    db.execute("DELETE FROM shown WHERE code = ?", (code,))      # a code of an ended day's
                    db.execute("INSERT INTO shown VALUES (?, 0, ?, 0, ?)", (code, now, now))
                    return code, secret
                except sqlite3.IntegrityError:
                    continue

    @staticmethod
    def forget(db: sqlite3.Connection, codes: str, args: tuple) -> None:
        """The lectures the query `codes` selects deleted, with their votes, answers and times shown."""
        for table in ("votes", "answers", "shown", "lectures"):
            db.execute(f"DELETE FROM {table} WHERE code IN ({codes})", args)

    def driven(self, secret: str) -> Lecture:
        lecture = self.presenting(secret)
        if lecture is None:
            raise NotPresenter(t("errors.phone.presenter_only", LANGUAGES[0]), "errors.phone.presenter_only")
        return lecture

    def change(self, lecture: Lecture, step: int, revealed: bool) -> Lecture:
        if (step, revealed) == (lecture.step, lecture.revealed):
            return lecture
        now = time.time()
        with self.db() as db:
            db.execute("UPDATE lectures SET step = ?, revealed = ?, version = version + 1, changed = ? "
                       "WHERE code = ?", (step, int(revealed), now, lecture.code))
            if step != lecture.step:
                self.leave(db, lecture.code, now)
                db.execute("INSERT INTO shown VALUES (?, ?, ?, 0, ?) ON CONFLICT (code, step) DO UPDATE SET "
                           "since = excluded.since", (lecture.code, step, now, now))
        return self.now(lecture.code)

    @staticmethod
    def leave(db: sqlite3.Connection, code: str, now: float) -> None:
        """The step on the screen is left: its time there is added up."""
        db.execute("UPDATE shown SET seconds = seconds + MAX(0, ? - since), since = NULL "
                   "WHERE code = ? AND since IS NOT NULL", (now, code))

    def move(self, secret: str, step: int) -> Lecture:
        """The presenter goes to `step` (clamped to the lesson); the new step starts unrevealed."""
        lecture = self.driven(secret)
        return self.change(lecture, min(max(int(step), 0), lecture.steps - 1), False)

    def reveal(self, secret: str, answer: Answer | None = None) -> Lecture:
        """The presenter reveals the current step: its votes close for good, and `answer` (the model's, computed by
        the caller; None: no model answered) is kept with the step. Only the first reveal's answer is kept: ask
        `closed` before computing one."""
        lecture = self.driven(secret)
        code, step = lecture.code, lecture.step
        row = (answer.value, answer.detail, answer.choice) if answer else (None, None, None)
        with self.db() as db:
            db.execute("INSERT OR IGNORE INTO answers VALUES (?, ?, ?, ?, ?)", (code, step, *row))
        return self.change(lecture, step, True)

    def vote(self, code: str, device: str, choice: str) -> bool:
        """One vote of a device on the lecture's current step. False (and nothing stored) when the lecture is
        unknown or expired, the step was ever revealed, the device has voted on this step, the choice is
        empty or too long, or the step's ballot box is full."""
        lecture = self.now(code)
        if lecture is None or lecture.revealed or not choice.strip() or len(choice) > LONGEST_CHOICE or not device:
            return False
        args = (lecture.code, lecture.step)
        with self.db() as db:       # one statement: a reveal or the box filling up cannot slip in between
            inserted = db.execute(
                "INSERT OR IGNORE INTO votes SELECT ?, ?, ?, ? WHERE NOT EXISTS "
                "(SELECT 1 FROM answers WHERE code = ? AND step = ?) AND "
                "(SELECT COUNT(*) FROM votes WHERE code = ? AND step = ?) < ?",
                (*args, device[:64], choice, *args, *args, VOTES_PER_STEP))
            return inserted.rowcount == 1

    # ------------------------------------------------------------ ending, and the reports kept ---

    def end(self, secret: str, contents: dict[int, dict], address: str = "?") -> int:
        """The presenter's End lecture → its report's id. Keeps each step's content (`contents`: step → what the
        caller says it was, JSON-able), time on screen, answer and tally; then deletes the lecture, its votes and
        answers (its code stops working), and the reports past REPORTS_KEPT, past REPORTS_PER_ADDRESS of the
        presenter's `address`, or past their days on a Space."""
        lecture, now = self.driven(secret), time.time()
        code = lecture.code
        with self.db() as db:
            self.leave(db, code, now)
            shown = {step: (first, seconds) for step, first, seconds in
                     db.execute("SELECT step, first, seconds FROM shown WHERE code = ?", (code,))}
            phones = db.execute("SELECT COUNT(DISTINCT device) FROM votes WHERE code = ?", (code,)).fetchone()[0]
            started = min((first for first, _ in shown.values()), default=lecture.changed)
            report = db.execute("INSERT INTO reports (secret_hash, code, lesson, started, ended, phones, address) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?)", (digest(secret), code, lecture.lesson, started, now,
                                                                 phones, address)).lastrowid
            for step in range(lecture.steps):
                answered = db.execute("SELECT value, detail, choice FROM answers WHERE code = ? AND step = ?",
                                      (code, step)).fetchone()
                db.execute("INSERT INTO report_steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (report, step, json.dumps(contents.get(step, {}), ensure_ascii=False),
                            shown.get(step, (0, 0.0))[1], answered is not None, *(answered or (None,) * 3),
                            json.dumps(self.tally(code, step), ensure_ascii=False)))
            self.forget(db, "?", (code,))
            self.prune(db, now, address)
        return report

    @staticmethod
    def prune(db: sqlite3.Connection, now: float, address: str) -> None:
        days = report_days()
        oldest = now - days * 86400 if days else -1.0
        db.execute("DELETE FROM reports WHERE address = ? AND id NOT IN (SELECT id FROM reports WHERE address = ? "
                   "ORDER BY ended DESC, id DESC LIMIT ?)", (address, address, REPORTS_PER_ADDRESS))
        db.execute("DELETE FROM reports WHERE ended < ? OR id NOT IN "
                   "(SELECT id FROM reports ORDER BY ended DESC, id DESC LIMIT ?)", (oldest, REPORTS_KEPT))
        db.execute("DELETE FROM report_steps WHERE report NOT IN (SELECT id FROM reports)")

    def ended(self, code: str) -> bool:
        """Whether a lecture of this code was ended by its presenter today (the phones say so, not "no lecture")."""
        start = dt.datetime.combine(utc_now().date(), dt.time(), dt.timezone.utc).timestamp()
        return self.db().execute("SELECT 1 FROM reports WHERE code = ? AND ended >= ?",
                                 (normal(code), start)).fetchone() is not None

    def kept_since(self) -> float:
        days = report_days()
        return time.time() - days * 86400 if days else -1.0

    def reports(self, secrets) -> list[Report]:
        """The reports of the lectures these presenter's secrets drove (a lecturer's browser keeps them), newest
        first, without their steps."""
        hashes = sorted({digest(s) for s in secrets if s})[:1000]
        if not hashes:
            return []
        rows = self.db().execute(
            f"SELECT id, code, lesson, started, ended, phones FROM reports WHERE secret_hash IN "
            f"({', '.join('?' * len(hashes))}) AND ended >= ? ORDER BY ended DESC, id DESC",
            (*hashes, self.kept_since())).fetchall()
        return [Report(*row) for row in rows]

    def report(self, report: int, secrets) -> Report | None:
        """One report with its steps, when one of these secrets drove its lecture; else None."""
        found = {r.id: r for r in self.reports(secrets)}.get(int(report))
        if found is None:
            return None
        rows = self.db().execute("SELECT step, content, seconds, revealed, value, detail, choice, tally "
                                 "FROM report_steps WHERE report = ? ORDER BY step", (found.id,)).fetchall()
        steps = tuple(Kept(step, json.loads(content), seconds, bool(revealed),
                           None if value is None else Answer(value, detail, choice), json.loads(tally))
                      for step, content, seconds, revealed, value, detail, choice, tally in rows)
        return dataclasses.replace(found, steps=steps)
