"""A user's own text for the GPT: `toyviz train gpt --text FILE_OR_FOLDER [--val-text FILE]`.

Each path is a UTF-8 file or a folder of `.txt` files (read in name order). Several paths and
files are joined with a blank line, as the Shakespeare works are. Without `--val-text` the last
5 % of the characters are held out for validation, so the held-out part is text the model never
saw, not a random sample of lines it did. Problems a user can fix (a typo in a path, a file in
another encoding, an empty folder) end the run with a one-line message that names the file.
"""
from __future__ import annotations

from pathlib import Path

VAL_FRACTION = 0.05
NEWLINE_WINDOW = 0.01   # look this far (as a fraction of the text) around the cut for a line break
SEPARATOR = "\n\n"
LISTED_FILES = 3        # a folder's description names this many files, then "…"


def load_text(paths: list[str], val_path: str | None = None) -> tuple[str, str, str]:
    """→ (train_text, val_text, source_description). Raises SystemExit with the reason."""
    sources = [read_source(Path(p).expanduser()) for p in paths]
    text = SEPARATOR.join(t for _, t in sources)
    if not text.strip():
        raise SystemExit(f"no text to train on: {', '.join(paths)} {'is' if len(paths) == 1 else 'are'} empty")
    if val_path is None:
        train_text, val_text = split_tail(text)
        held_out = f"the last {VAL_FRACTION:.0%} ({len(val_text):,} characters)"
    else:
        val_name, val_text = read_source(Path(val_path).expanduser())
        if not val_text.strip():
            raise SystemExit(f"the validation text {val_path} is empty")
        train_text = text
        held_out = f"{val_name} ({len(val_text):,} characters)"
    described = "; ".join(f"{name} ({len(t):,} characters)" for name, t in sources)
    return train_text, val_text, (f"User text: {described}. Trained on {len(train_text):,} characters; "
                                  f"held out for validation: {held_out}.")


def read_source(path: Path) -> tuple[str, str]:
    """A file or a folder of .txt files → (short description, text)."""
    if path.is_dir():
        files = sorted(path.glob("*.txt"))
        if not files:
            raise SystemExit(f"the folder {path} has no .txt files; toyviz reads UTF-8 *.txt files from it")
        names = ", ".join(f.name for f in files[:LISTED_FILES]) + (", …" if len(files) > LISTED_FILES else "")
        return f"{path}/ ({len(files)} .txt files: {names})", SEPARATOR.join(read_file(f) for f in files)
    if not path.exists():
        raise SystemExit(f"no such file or folder: {path}")
    return str(path), read_file(path)


def read_file(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise SystemExit(f"{path} is not UTF-8 text (byte 0x{data[err.start]:02X} at line {line}); "
                         f"re-save it as UTF-8, e.g. `iconv -f cp1252 -t utf-8`") from None


def split_tail(text: str) -> tuple[str, str]:
    """Cut off the last VAL_FRACTION of the characters, right after the nearest line break when
    one is close, so validation starts on a whole line. train + val == text."""
    cut = len(text) - max(1, int(len(text) * VAL_FRACTION))
    window = int(len(text) * NEWLINE_WINDOW)
    before = text.rfind("\n", max(0, cut - window), cut)
    after = text.find("\n", cut, cut + window)
    candidates = [i + 1 for i in (before, after) if i != -1 and i + 1 < len(text)]
    if candidates:
        cut = min(candidates, key=lambda i: abs(i - cut))
    return text[:cut], text[cut:]
