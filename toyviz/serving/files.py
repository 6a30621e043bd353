"""Files the app hands its visitors (an exported view), bounded on disk.

Each export is an offline page of ~4.7 MB (plotly.js inside). Written to a fresh temporary folder, as it
once was, it stayed there for good, and Gradio copied it into its own cache as well: 15 exports left
139 MB behind, and a script calling /export in a loop filled the disk. Here a file is written once, into
Gradio's cache folder, where Gradio serves it as it is (a file already there is not copied), and the
folder keeps only the newest files: at most BUDGET bytes, none older than KEEP_S. A visitor downloads
an export seconds after pressing the button; one pushed out before that is exported again.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

from toyviz.errors import Unavailable

MB = 2 ** 20
BUDGET = 64 * MB          # ~13 exports
KEEP_S = 15 * 60


def gradio_cache() -> Path:
    """The folder Gradio serves its files from (gradio.utils.get_upload_folder, without importing Gradio)."""
    return Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio").resolve()


class Exports:
    """A folder of at most `budget` bytes of files, each in a folder of its own (two visitors' pages
    of the same tab share a name), removed `keep_s` after it was written or when newer ones need the room."""

    def __init__(self, folder: Path, budget: int = BUDGET, keep_s: float = KEEP_S):
        self.folder, self.budget, self.keep_s, self.lock = Path(folder), budget, keep_s, threading.Lock()

    def write(self, name: str, text: str) -> str:
        """text saved as `name` → its path. A disk that is full or not writable is the server's fault, said to
        the visitor (Unavailable: the page shows it where the file would be; every other tab goes on working)."""
        data = text.encode("utf-8")
        with self.lock:
            self.prune(room=len(data))
            path = self.folder / uuid.uuid4().hex / name
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            except OSError as err:
                shutil.rmtree(path.parent, ignore_errors=True)
                raise Unavailable(f"Export is unavailable: the server could not write the file "
                                  f"({err.strerror or err}); every other tab still works.") from err
        return str(path)

    def prune(self, room: int = 0) -> None:
        """Remove the expired files, then the oldest until `room` more bytes fit the budget."""
        now, entries = time.time(), []
        for entry in self.folder.glob("*/*"):
            try:
                stat = entry.stat()
            except OSError:                                    # removed meanwhile (Gradio's own clean-up)
                continue
            entries.append((stat.st_mtime, stat.st_size, entry.parent))
        entries.sort()
        total = sum(size for _, size, _ in entries)
        for written, size, folder in entries:
            if now - written <= self.keep_s and total + room <= self.budget:
                break
            shutil.rmtree(folder, ignore_errors=True)
            total -= size
        for empty in self.folder.glob("*"):                    # left empty by Gradio's own clean-up (delete_cache)
            if empty.is_dir() and not any(empty.iterdir()):
                shutil.rmtree(empty, ignore_errors=True)

    def bytes(self) -> int:
        return sum(f.stat().st_size for f in self.folder.glob("*/*") if f.is_file())


EXPORTS = Exports(gradio_cache() / "toyviz-exports")
