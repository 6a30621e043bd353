"""Data pipelines on hand-written fixtures: cleaning, edition choice, alignment, splits and caches.

Nothing here touches the network or the real corpora; the markup samples are copied from the
SWORD modules (shortened).
"""
import json
from dataclasses import asdict

import pytest

from toyviz.data import bible, cache_dir, shakespeare
from toyviz.data.bible import VersePair, align, clean_verse


# ---------------------------------------------------------------- bible: cleaning ---------

def test_strongs_words_keep_their_text():
    raw = '<w lemma="strong:H7225">EN el principio</w> <w lemma="strong:H1254">crió</w> Dios.'
    assert clean_verse(raw) == "EN el principio crió Dios."


def test_note_leaves_a_space_not_glued_words():
    raw = ('<w lemma="strong:H0430">God</w><note placement="foot"><reference type="annotateRef">1:1 '
           '</reference>The Hebrew word rendered “God” is “אֱלֹהִ֑ים” (Elohim).</note>'
           '<w lemma="strong:H1254">created</w> the earth.')
    assert clean_verse(raw) == "God created the earth."


def test_note_before_punctuation_leaves_nothing():
    raw = ('it is incomprehensible<note placement="foot">or, wonderful</note>?” and '
           'a cross-reference<note type="crossReference">Gen 1:1</note>.')
    assert clean_verse(raw) == "it is incomprehensible?” and a cross-reference."


def test_editorial_headings_dropped_canonical_titles_kept():
    raw = ('<title>Heading by the editors</title><speaker>Beloved</speaker> '
           '<title canonical="true" type="psalm">A Psalm by David.</title> <lg sID="g1"/> '
           '<l level="1" sID="g2"/>Yahweh, how my adversaries have increased!<l eID="g2" level="1"/>')
    assert clean_verse(raw) == "A Psalm by David. Yahweh, how my adversaries have increased!"


def test_trans_change_keeps_text_and_word_boundaries():
    separate = ('<w lemma="strong:H8033">hay allí</w><transChange type="added">también</transChange>'
                '<w lemma="strong:H0916">bdelio</w>.')
    enclitic = '<w lemma="strong:H3318">sáca</w><transChange type="added">lo</transChange> de aquí.'
    inside_a_word = 'preguntándo<transChange type="added">le</transChange>, y'
    assert clean_verse(separate) == "hay allí también bdelio."
    assert clean_verse(enclitic) == "sácalo de aquí."
    assert clean_verse(inside_a_word) == "preguntándole, y"


def test_quotes_lines_milestones_pilcrows_entities_and_whitespace():
    raw = ('<div type="x-milestone" subType="x-preverse" sID="pv1"/><div sID="g3" type="x-p"/>'
           '<div type="x-milestone" subType="x-preverse" eID="pv1"/>¶ <q marker="" who="Jesus">“Salt '
           '&amp; light,”</q>  <lb type="x-p"/>\n he said.<chapter eID="Matt.5"/><div eID="g3" type="x-p"/>')
    assert clean_verse(raw) == "“Salt & light,” he said."


@pytest.mark.parametrize("start", ['<div sID="g9" type="glossary"/> ', '<milestone n="Glossary" type="x-usfm-h"/> '])
def test_glossary_after_the_last_verse_is_cut(start):
    raw = ('<w lemma="strong:G5485">The grace</w> be with all the saints. Amen. <chapter eID="Rev.22"/>'
           + start + '<title level="1" type="main">World English Bible Glossary</title> <list><item>'
                     '<seg type="keyword">Abba</seg> Abba is a Chaldee word for father.</item></list>')
    assert clean_verse(raw) == "The grace be with all the saints. Amen."


# ---------------------------------------------------------------- bible: alignment --------

LENGTHS = [30, 120, 45, 200, 70, 160, 35, 90]  # varied verse lengths, as in real chapters


def chapter(ref: str, lengths, char: str) -> dict[str, str]:
    return {f"{ref}.{v}": char * n for v, n in enumerate(lengths, start=1)}


def test_aligned_chapter_is_kept():
    pairs = align(chapter("Gen.1", LENGTHS, "e"), chapter("Gen.1", LENGTHS, "s"))
    assert [p.ref for p in pairs] == [f"Gen.1.{v}" for v in range(1, 9)]
    assert pairs[0] == VersePair("Gen.1.1", "Gen", "e" * 30, "s" * 30)


def test_chapter_shifted_by_one_verse_is_dropped():
    english = chapter("Gen.1", LENGTHS, "e") | chapter("Gen.2", LENGTHS, "e")
    # Spanish Gen 2 numbered one verse later: its verse v+1 translates English verse v
    spanish = chapter("Gen.1", LENGTHS, "s") | chapter("Gen.2", [50] + LENGTHS[:-1], "s")
    assert {p.ref.rsplit(".", 1)[0] for p in align(english, spanish)} == {"Gen.1"}


def test_length_ratio_outlier_is_dropped():
    spanish = chapter("Gen.1", LENGTHS, "s")
    spanish["Gen.1.4"] = "s" * 200 * 3  # log ratio ≈ 1.1 from the median
    assert "Gen.1.4" not in {p.ref for p in align(chapter("Gen.1", LENGTHS, "e"), spanish)}


def test_verses_next_to_a_one_sided_verse_are_dropped():
    english = chapter("Acts.8", LENGTHS, "e")
    english["Acts.8.5"] = ""  # WEB leaves Acts 8:37 empty; its text may sit in a neighbour
    refs = {p.ref for p in align(english, chapter("Acts.8", LENGTHS, "s"))}
    assert refs == {f"Acts.8.{v}" for v in (1, 2, 3, 7, 8)}


def test_bible_split_never_leaks_test_books():
    pairs = [VersePair(f"{book}.1.1", book, "e", "s") for book in ("Gen", "Ruth", "Jonah", "Matt", "Phil", "Jas")]
    train, test = bible.split(pairs)
    assert {p.book for p in test} == set(bible.TEST_BOOKS)
    assert not {p.book for p in train} & set(bible.TEST_BOOKS)
    assert len(train) + len(test) == len(pairs)


def test_pairs_load_from_a_copied_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOYVIZ_DATA", str(tmp_path))
    pair = VersePair("Ruth.1.1", "Ruth", "In the days…", "Y ACONTECIÓ en los días…")
    (tmp_path / "bible").mkdir()
    (tmp_path / "bible" / "pairs.jsonl").write_text(json.dumps(asdict(pair), ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
    assert bible.load_pairs() == [pair]


# ---------------------------------------------------------------- shakespeare -------------

METADATA = """
[hamlet_gut]
url = http://www.gutenberg.org/dirs/etext98/2ws2610.txt
title = Hamlet

[hamlet_gut_f]
url = http://www.gutenberg.org/dirs/etext00/0ws2610.txt
notes = Sourced from Project Gutenberg (url=http://www.gutenberg.org/dirs/etext00/0ws2610.txt). folio
"""

URLS = {
    "comedy_of_errors_gut": "http://www.gutenberg.org/dirs/etext98/2ws0610.txt",
    "comedy_of_errours_gut_f": "http://www.gutenberg.org/dirs/etext00/0ws0610.txt",
    "cymbeline_gut": "http://www.gutenberg.org/dirs/etext98/2ws3910.txt",
    "cymbeline_gut_f": "http://www.gutenberg.org/dirs/etext00/0ws3910.txt",
    "winters_tale_gut": "http://www.gutenberg.org/files/1539/1539.txt",
    "winters_tale_gut_f": "http://www.gutenberg.org/dirs/etext00/0ws4010.txt",
    "sonnets_gut": "http://www.gutenberg.org/dirs/etext97/wssnt10.txt",
}


def test_metadata_gives_each_file_its_url():
    assert shakespeare.edition_urls(METADATA) == {
        "hamlet_gut": "http://www.gutenberg.org/dirs/etext98/2ws2610.txt",
        "hamlet_gut_f": "http://www.gutenberg.org/dirs/etext00/0ws2610.txt"}
    assert shakespeare.series_number(URLS["comedy_of_errours_gut_f"]) == "06"
    assert shakespeare.series_number(URLS["sonnets_gut"]) is None


def test_one_edition_per_work_modern_except_cymbeline():
    assert shakespeare.select_editions(URLS) == {
        "comedy_of_errors": "comedy_of_errors_gut",  # paired with "errours" by series number
        "cymbeline": "cymbeline_gut_f",
        "winters_tale": "winters_tale_gut",  # outside the series: paired by name
        "sonnets": "sonnets_gut"}


def test_a_folio_edition_pairing_with_nothing_is_an_error():
    urls = URLS | {"titus_andronicus_gut_f": "http://www.gutenberg.org/dirs/etext00/0ws0910.txt"}
    with pytest.raises(ValueError, match="titus_andronicus_gut_f"):
        shakespeare.select_editions(urls)


def test_normalise_only_newlines_and_ends():
    assert shakespeare.normalise("\r\nHAMLET\r\n\r\n  Ham. To be.\r\n[Exit.]\r\n\r\n") == "HAMLET\n\n  Ham. To be.\n[Exit.]"


def test_shakespeare_split_never_leaks_val_works():
    works = {"hamlet": "To be", "macbeth": "Out, damned spot", "tempest": "Full fathom five",
             "twelfth_night": "If music be the food"}
    train, val = shakespeare.split(works)
    assert train == "Out, damned spot\n\nFull fathom five"
    assert val == "To be\n\nIf music be the food"


def test_works_load_from_a_copied_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOYVIZ_DATA", str(tmp_path))
    assert cache_dir() == tmp_path
    (tmp_path / "shakespeare").mkdir()
    (tmp_path / "shakespeare" / "works.json").write_text(json.dumps({"hamlet": "To be"}), encoding="utf-8")
    assert shakespeare.load_works() == {"hamlet": "To be"}


@pytest.fixture(scope="module")
def kjv_pairs():
    """The real KJV ↔ RV1909 pairs (fetched with apt-get once, then read from the data cache)."""
    try:
        return bible.load_pairs("kjv")
    except (RuntimeError, OSError) as error:
        pytest.skip(f"the KJV could not be fetched here: {error}")


def test_kjv_pairs_are_aligned_verse_for_verse(kjv_pairs):
    by_ref = {p.ref: p for p in kjv_pairs}
    assert by_ref["Gen.1.1"].en == "In the beginning God created the heaven and the earth."
    assert by_ref["Gen.1.1"].es.startswith("EN el principio crió Dios los cielos y la tierra")
    assert by_ref["John.11.35"].en == "Jesus wept." and by_ref["John.11.35"].es.startswith("Y lloró Jesús")
    web = {p.ref: p for p in bible.load_pairs("web")}
    shared = by_ref.keys() & web.keys()
    assert len(shared) > 29_000 and all(by_ref[ref].es == web[ref].es for ref in shared)   # the same Spanish
    train, test = bible.split(kjv_pairs)
    assert len(train) > 30_000 and {p.book for p in test} == set(bible.TEST_BOOKS)
    assert not {p.book for p in train} & set(bible.TEST_BOOKS)
