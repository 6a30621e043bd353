"""Which lessons there are, and the one resolver of a lesson's name.

The shipped lessons lie in `shipped/` beside this file; a lecturer's own are the *.md in the folder $TOYVIZ_LESSONS
names (same name: the lecturer's). A lesson is named by its file's name without .md ("sampling"): the app's picker
and a ?lesson= link offer only these names, and a lecture keeps the name it was started with. A lecture started from
Python (a test, a benchmark) may name a lesson file by its path instead; `find` is what reads either.
"""
from __future__ import annotations

import os
from pathlib import Path

from toyviz.lessons.format import Lesson, LessonError, parse

SHIPPED = Path(__file__).with_name("shipped")
READ: dict[tuple[str, float], Lesson] = {}      # (file, its modification time) → the lesson parsed from it


def shipped() -> list[Path]:
    """The lessons that come with toyviz."""
    return sorted(SHIPPED.glob("*.md"))


def available() -> dict[str, Path]:
    """The lessons a page may open by name (?lesson=NAME, the Lessons picker): the shipped ones, and the lecturer's
    own *.md in the folder $TOYVIZ_LESSONS names (same name: the lecturer's). Only these: a name from a visitor's
    link is never a path, so no file elsewhere on the server is read (and quoted in an error message)."""
    folder = os.environ.get("TOYVIZ_LESSONS")
    own = sorted(Path(folder).expanduser().glob("*.md")) if folder else []
    return {path.stem: path for path in shipped() + own}


def find(name: str) -> Path:
    """A lecture's lesson file: an available lesson's name ("sampling"), else a lesson file's path. Only what a
    lecture was started with comes here: a visitor's link is checked against `available` first."""
    return available().get(name) or Path(name)


def load(path) -> Lesson:
    """Read and parse a lesson file (against a model: toyviz.lessons.check)."""
    path = Path(path)
    return parse(path.read_text(encoding="utf-8"), path.name)


def lesson_of(name: str) -> Lesson:
    """The lesson a lecture names (`find`), parsed again only when its file changes (a lecturer fixing a typo
    mid-class)."""
    path = find(name)
    key = (str(path), path.stat().st_mtime)
    if key not in READ:
        READ[key] = load(path)
    return READ[key]


def catalogue(language: str | None = None) -> list[tuple[str, str]]:
    """(title, name) of each available lesson, for the app's Lessons picker (one that does not parse is named
    by its file, and says what is wrong when opened); given a `language`, the lessons in it (every lesson where
    none is)."""
    def read(path: Path) -> tuple[str, str]:
        try:
            lesson = load(path)
            return lesson.title, lesson.language
        except (OSError, LessonError):
            return path.name, ""
    found = [(*read(path), name) for name, path in available().items()]
    if not any(lang == language for _, lang, _ in found):
        language = None
    return [(title, name) for title, lang, name in found if language is None or lang in (language, "")]
