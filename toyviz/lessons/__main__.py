"""toyviz lessons [FILE …] (or python -m toyviz.lessons): check lessons (the shipped ones by default) on the shipped models, and print
each step's link and its question's answer, or every mistake of a file with its line — what to run before class.
Exits 1 when any file has a mistake."""
from __future__ import annotations

import sys

import toyviz
from toyviz.errors import run_command
from toyviz.lessons import library
from toyviz.lessons.answers import answer, quoted
from toyviz.lessons.check import check
from toyviz.lessons.format import LIVE_ANSWERS, LessonError


def main(argv: list[str] | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="The lesson format, and how a class follows a lecture: docs/teach-with-it.md.")
    p.add_argument("files", nargs="*", metavar="FILE", help="lesson files (default: the shipped lessons)")
    paths = p.parse_args(sys.argv[1:] if argv is None else argv).files
    gpt, failed = toyviz.load("gpt"), 0
    for path in paths or library.shipped():
        try:
            lesson = check(library.load(path), gpt)
        except (OSError, LessonError) as err:           # every mistake, one a line, each naming its file and line
            print(err)
            failed = 1
            continue
        print(f"{lesson.title} ({lesson.name}): {len(lesson.steps)} steps")
        for n, step in enumerate(lesson.steps, start=1):
            print(f"  {n}. {step.title}  {step.link}")
            if step.question and step.question.answer in LIVE_ANSWERS:
                print("     answer read off the live run this lesson starts, at the reveal")
            elif step.question:
                a = answer(step, gpt, lang=lesson.language)
                among = "no choice matches" if step.question.choices and a.choice is None else ""
                print(f"     answer {quoted(a.value)} {among}— {a.detail}")
    return failed


if __name__ == "__main__":
    run_command(main)
