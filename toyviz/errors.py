"""Whose an error is: the user's mistake, or a fault of ours.

A user's mistake (an empty prompt, a number past its range, a lesson file's typo, a stale presenter link)
is one type, `UserError`, raised where the input is checked, with a message written for that user; the app
shows it in place. Anything else that escapes is a fault: `fault` logs it with its traceback under a short
id, and the user is told only that it is ours, with the id to quote — never that their input was wrong.

A leaf: it imports nothing of toyviz, so every layer may raise UserError.
"""
from __future__ import annotations

import logging
import secrets

log = logging.getLogger("toyviz")


class UserError(ValueError):
    """Input the user can correct; the message is meant for them. A ValueError, as a bad argument is to any
    Python caller: code that catches ValueError around toyviz's calls (or caught PromptError) still does.
    `key`, `fields`: the message's entry in the language catalogues and what fills it (toyviz.i18n.said), for a
    page in another language; the text is the English, as logs and Python callers read it."""

    def __init__(self, message: str = "", key: str | None = None, **fields):
        super().__init__(message)
        self.key, self.fields = key, fields


class Unavailable(Exception):
    """A fault whose cause the visitor may be told: a part this server was not given (no transcoders, no
    feature dictionary) or cannot do now (a full disk). Logged with its traceback like any fault, for whoever
    runs the server; the visitor reads the message and that it is the server's doing, never theirs."""


class LoggedFault(Exception):
    """A fault already logged where it happened (a worker process: toyviz.serving.workers); its message, with
    the log's id, is the one the user is told."""


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or unreadable; the message says what to do. Here, not beside the loader
    (toyviz.models.checkpoint, which raises it under that name too), so that the Hugging Face converter it calls
    (toyviz.models.hub) can raise it without importing its caller."""


class HubError(CheckpointError, UserError):
    """A Hugging Face folder toyviz cannot open (an architecture it has no table for, a file missing): one line,
    a CheckpointError as any unusable checkpoint is (the app's tabs say it), and the user's to correct."""


PromptError = UserError     # its name before issue 42; toyviz.PromptError stays importable


def fault(where: str, err: BaseException) -> str:
    """A fault logged with its traceback under a fresh short id → what the user is told instead of its text
    (which may say something about the server, and never says what to change)."""
    ident = secrets.token_hex(3)
    log.error("fault %s in %s: %s: %s", ident, where, type(err).__name__, err, exc_info=err)
    if isinstance(err, Unavailable):
        return f"{err} This is the server's doing, not yours (logged as {ident})."
    return f"Something went wrong on our side (id {ident}). It is logged: try again, and quote the id if it recurs."


def run_command(main) -> None:
    """A command's `main()` run as `python -m toyviz.…` runs it: a UserError (a prompt it cannot use, a file
    that is not a checkpoint) is one line on stderr and exit status 2, as argparse says a usage mistake, not a
    traceback; a fault keeps its traceback. main's integer result is the exit status (anything else: 0)."""
    import sys
    try:
        status = main()
    except UserError as err:
        print(f"{sys.argv[0].rpartition('/')[2] or 'toyviz'}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    raise SystemExit(status if isinstance(status, int) else 0)
