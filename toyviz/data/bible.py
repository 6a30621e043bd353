"""English→Spanish verse pairs for the translator: English Bibles against Reina-Valera 1909.

Source: the Debian packages `sword-text-web` (SWORD module engWEB2015eb, World English Bible),
`sword-text-kjv` (engKJV2006eb, King James Version: a second English text of the same verses, with
RV1909's verse numbering) and `sword-text-sparv` (spaRV1909eb, Reina-Valera 1909). The texts are in
the public domain (the name "World English Bible" is a trademark for the unmodified text; the KJV is
public domain outside the UK); the reader, PyPI `pysword`, is MIT.
The .debs are fetched with `apt-get download` and unpacked with `dpkg -x`: nothing is installed.

Verses are OSIS markup: `clean_verse` turns one into plain text. Verses are joined on their OSIS
reference ("Gen.1.1"), then filtered, because the two texts don't number every chapter alike (RV1909
numbers some Hebrew-style, WEB leaves a few verses empty or moves them). The Spanish keeps its 1909
orthography (á, fué) and capitalised chapter openings ("EN el principio").

    toyviz data bible    # fetch once, cache, print a one-line JSON summary
"""
from __future__ import annotations

import functools
import html
import json
import math
import os
import re
import statistics
import subprocess
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from toyviz.data import cache_dir

MODULES = {"sword-text-web": "engWEB2015eb", "sword-text-kjv": "engKJV2006eb",
           "sword-text-sparv": "spaRV1909eb"}                       # Debian package → module
ENGLISH = {"web": "engWEB2015eb", "kjv": "engKJV2006eb"}            # the English sources, by short name
SPANISH = "spaRV1909eb"
TEST_BOOKS = ("Ruth", "Jonah", "Phil", "Jas")  # OSIS ids of Ruth, Jonah, Philippians, James
# A pair whose log length ratio is further than this from the median is a misalignment, not a translation.
MAX_RATIO_DEVIATION = 0.7


@dataclass(frozen=True)
class VersePair:
    ref: str   # OSIS reference, "Gen.1.1"
    book: str  # OSIS book id, "Gen"
    en: str
    es: str


def load_pairs(source: str = "web") -> list[VersePair]:
    """Aligned verse pairs of one English source (`ENGLISH`'s keys) in canonical order (≈ 31 k).

    Cached at cache_dir()/bible/pairs.jsonl (the WEB) or pairs-<source>.jsonl: only the first call
    needs apt-get, dpkg and pysword.
    """
    cache = cache_dir() / "bible" / ("pairs.jsonl" if source == "web" else f"pairs-{source}.jsonl")
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        sword = fetch_modules(cache.parent)
        english = {ref: clean_verse(raw) for ref, raw in read_module(sword, ENGLISH[source]).items()}
        spanish = {ref: clean_verse(raw) for ref, raw in read_module(sword, SPANISH).items()}
        tmp = cache.with_suffix(".tmp")  # written whole, then renamed: never a half-written cache
        tmp.write_text("".join(json.dumps(asdict(p), ensure_ascii=False) + "\n" for p in align(english, spanish)),
                       encoding="utf-8")
        os.replace(tmp, cache)
    with cache.open(encoding="utf-8") as lines:
        return [VersePair(**json.loads(line)) for line in lines]


def split(pairs: list[VersePair]) -> tuple[list[VersePair], list[VersePair]]:
    """(train, test): test holds every pair of TEST_BOOKS and train none, so the test is unseen text."""
    return [p for p in pairs if p.book not in TEST_BOOKS], [p for p in pairs if p.book in TEST_BOOKS]


# ---------------------------------------------------------------- cleaning ----------------

# WEB appends its glossary to Rev 22:21, starting with a glossary <div> or USFM header milestones.
_GLOSSARY = re.compile(r'<(?:div|milestone)\b[^>]*\btype="(?:glossary|x-usfm-[^"]*)"')
_NOTE = re.compile(r"<note\b.*?</note>", re.S)
_NOTE_BEFORE_PUNCTUATION = re.compile(r"<note\b(?:(?!</note>).)*</note>(?=[,.;:!?”’)\]])", re.S)
# Editors' headings; canonical titles (Psalm superscriptions) are scripture and stay.
_HEADING = re.compile(r'<(title|speaker)\b(?![^>]*\bcanonical="true")[^>]*>.*?</\1>', re.S)
_ADDED_AFTER_WORD = re.compile(r"(\w+)</w>(?=<transChange\b[^>]*>([^<]*))")
_CLITICS = frozenset("me te se nos os lo la los las le les".split())
_TAG = re.compile(r"<[^>]*>")


def clean_verse(raw: str) -> str:
    """One verse of OSIS markup → plain text: words kept, footnotes, headings and tags gone.

    pysword's own `clean=True` deletes notes without a trace and glues their neighbours
    ("God<note>…</note>created" → "Godcreated"); here a note leaves a space, unless punctuation
    follows it ("incomprehensible<note>…</note>?").
    """
    glossary = _GLOSSARY.search(raw)
    if glossary:
        raw = raw[:glossary.start()]
    raw = _NOTE.sub(" ", _NOTE_BEFORE_PUNCTUATION.sub("", raw))
    raw = _HEADING.sub(" ", raw)
    text = html.unescape(_TAG.sub("", _space_added_words(raw))).replace("¶", "")
    return " ".join(text.split())


def _space_added_words(raw: str) -> str:
    """Put back the spaces RV1909 leaves out around translators' additions.

    Its <transChange> elements sit flush against the neighbouring <w> elements ("allí</w>
    <transChange>también</transChange><w>bdelio"). Such a boundary is a space, except when an
    object pronoun is attached to a verb (sáca + lo → "sácalo").
    """
    raw = raw.replace("</transChange><w", "</transChange> <w")
    return _ADDED_AFTER_WORD.sub(
        lambda m: m[0] if _is_enclitic(m[1], m[2].strip()) else m[0] + " ", raw)


def _is_enclitic(word: str, added: str) -> bool:
    """Whether `added` is a pronoun joined to the verb `word`, which we recognise by an infinitive or
    imperative ending (ver|me, Dad|me) or by an accent before its last letter (díjo|le, oyéndo|lo)."""
    return added in _CLITICS and re.search(r"[rd]$|[áéíóú]\w", word) is not None


# ---------------------------------------------------------------- alignment ---------------

def align(english: dict[str, str], spanish: dict[str, str]) -> list[VersePair]:
    """Pair clean verses on their OSIS reference and keep only pairs that are translations of each other.

    english, spanish: OSIS ref → clean text, "" for a verse slot the translation leaves empty.
    Drops chapters numbered differently (see `shifted_chapters`), verses next to a verse only one
    side has (its text usually sits in the neighbour), then pairs whose length ratio is off.
    Returns pairs in the order of `english`.
    """
    both = [ref for ref in english if english[ref] and spanish.get(ref)]
    median = statistics.median(_log_ratio(english[ref], spanish[ref]) for ref in both)
    shifted = shifted_chapters(english, spanish, median)
    gap_neighbours = next_to_one_sided(english, spanish)
    kept = [ref for ref in both if _chapter(ref) not in shifted and ref not in gap_neighbours]
    median = statistics.median(_log_ratio(english[ref], spanish[ref]) for ref in kept)
    return [VersePair(ref, ref.split(".")[0], english[ref], spanish[ref]) for ref in kept
            if abs(_log_ratio(english[ref], spanish[ref]) - median) <= MAX_RATIO_DEVIATION]


def shifted_chapters(english: dict[str, str], spanish: dict[str, str], median: float) -> set[str]:
    """Chapters ("Num.13") whose verse lengths match better with the Spanish shifted by ±1 verse
    than unshifted: RV1909 numbers some chapters Hebrew-style, so equal refs hold different text.

    median: the usual log(len_es / len_en); a chapter's misfit is the mean distance from it.
    """
    verses = defaultdict(set)
    for ref in english:
        verses[_chapter(ref)].add(int(ref.rsplit(".", 1)[1]))

    def misfit(chapter: str, shift: int) -> float:
        refs = [(f"{chapter}.{v}", f"{chapter}.{v + shift}") for v in verses[chapter]]
        gaps = [abs(_log_ratio(english[en], spanish[es]) - median)
                for en, es in refs if english[en] and spanish.get(es)]
        return statistics.fmean(gaps) if gaps else math.inf

    return {chapter for chapter in verses
            if min(misfit(chapter, -1), misfit(chapter, 1)) < misfit(chapter, 0)}


def next_to_one_sided(english: dict[str, str], spanish: dict[str, str]) -> set[str]:
    """Refs whose neighbour in the same chapter has text on one side only (WEB's empty Acts 8:37,
    RV1909's empty Jonah 1:17): that verse's text usually sits in the neighbour, or is shifted."""
    one_sided = {ref for ref in english.keys() | spanish.keys() if bool(english.get(ref)) != bool(spanish.get(ref))}
    neighbours = set()
    for ref in one_sided:
        chapter, verse = ref.rsplit(".", 1)
        neighbours.update((f"{chapter}.{int(verse) - 1}", f"{chapter}.{int(verse) + 1}"))
    return neighbours


def _chapter(ref: str) -> str:
    return ref.rsplit(".", 1)[0]


def _log_ratio(en: str, es: str) -> float:
    return math.log(len(es) / len(en))


# ---------------------------------------------------------------- fetching ----------------

def fetch_modules(folder: Path) -> Path:
    """A SWORD data directory holding both modules, from the .debs in `folder` (downloaded if missing)."""
    root = folder / "root"
    for package in MODULES:
        debs = sorted(folder.glob(f"{package}_*.deb"))
        if not debs:
            _apt_download(package, folder)
            debs = sorted(folder.glob(f"{package}_*.deb"))
        subprocess.run(["dpkg", "-x", str(debs[-1]), str(root)], check=True)
    return root / "usr" / "share" / "sword"


def _apt_download(package: str, folder: Path) -> None:
    try:
        done = subprocess.run(["apt-get", "download", package], cwd=folder, capture_output=True, text=True)
    except FileNotFoundError:
        raise RuntimeError("apt-get not found: fetch on a Debian machine and copy its "
                           f"{folder / 'pairs.jsonl'} here") from None
    if done.returncode != 0:
        raise RuntimeError(f"`apt-get download {package}` failed:\n{done.stderr.strip()}\n"
                           "If the package lists are missing, run `apt-get update` first.")


def read_module(sword: Path, module: str) -> dict[str, str]:
    """OSIS ref → raw OSIS markup ("" if empty) of every verse slot in the module's versification."""
    from pysword.modules import SwordModules  # only the first load_pairs() needs pysword

    modules = SwordModules(str(sword))
    modules.parse_modules()
    bible = modules.get_bible_from_module(module)
    # pysword decompresses the verse's whole book for every verse it reads: 45 s per module, < 1 s cached.
    bible._decompressed_text = functools.lru_cache(maxsize=None)(bible._decompressed_text)
    structure = bible.get_structure()
    verses = {}
    for testament, books in structure.get_books().items():
        for book in books:
            offset = structure._book_offset(book.name)
            for chapter in range(1, book.num_chapters + 1):
                indices = book.get_indicies(chapters=[chapter], offset=offset)
                for verse, index in enumerate(indices, start=1):
                    verses[f"{book.osis_name}.{chapter}.{verse}"] = bible._text_for_index(testament, index)
    return verses


def main(argv=None) -> None:
    import argparse
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    for source in ENGLISH:
        pairs = load_pairs(source)
        train, test = split(pairs)
        print(json.dumps({"source": source, "pairs": len(pairs), "train": len(train), "test": len(test),
                          "mean_words_en": round(statistics.fmean(len(p.en.split()) for p in pairs), 1),
                          "mean_words_es": round(statistics.fmean(len(p.es.split()) for p in pairs), 1)}))

