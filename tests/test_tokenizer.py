import pytest

from toyviz.models.tokenizer import Tokenizer

ODD_TEXTS = [
    "plain ASCII, with punctuation!",
    "accents: café, naïve, señor, Ærøskøbing",
    "emoji 🤖🎭 and a family 👨‍👩‍👧",
    "right-to-left: مرحبا بالعالم — שלום",
    "control \x00 NUL \x07 bell \t tab \r\n newline",
    "CJK 漢字かな交じり文",
    "<|endoftext|> looks special but is just text",
    "",
]


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_round_trips_any_unicode(gpt_tokenizer, text):
    assert gpt_tokenizer.decode(gpt_tokenizer.encode(text)) == text


def test_special_token_strings_are_plain_text(gpt_tokenizer):
    ids = gpt_tokenizer.encode("<|endoftext|>")
    assert gpt_tokenizer.special("<|endoftext|>") not in ids
    assert len(ids) > 1


def test_vocabulary_is_ranks_plus_declared_specials(gpt_tokenizer):
    assert gpt_tokenizer.vocab_size == len(gpt_tokenizer.ranks) + 1
    assert gpt_tokenizer.special("<|endoftext|>") == len(gpt_tokenizer.ranks)


def test_training_learns_merges_for_frequent_words(gpt_tokenizer):
    assert len(gpt_tokenizer.encode(" question")) == 1          # frequent in the fixture corpus
    assert len(gpt_tokenizer.encode(" zyxwvut")) > 1


def test_save_load_gives_the_same_encoding(gpt_tokenizer, tmp_path):
    gpt_tokenizer.save(tmp_path, "tok")
    loaded = Tokenizer.load(tmp_path, "tok")
    text = "To be, or not to be 🤖"
    assert loaded.encode(text) == gpt_tokenizer.encode(text)
    assert loaded.specials == gpt_tokenizer.specials


def test_stream_decoder_holds_back_half_characters(gpt_tokenizer):
    ids = gpt_tokenizer.encode("é🤖!")
    decode = gpt_tokenizer.stream_decoder()
    pieces = [decode(t) for t in ids]
    assert "".join(pieces) == "é🤖!"
    assert all("\ufffd" not in p for p in pieces)


def test_a_tokenizer_retrained_into_the_same_folder_loads_as_the_new_one(gpt_tokenizer, tmp_path):
    """tiktoken's own loader caches a file by its path, so the shipped translator's new English BPE came back
    as the old one's ranks; loading must read what the file holds now."""
    gpt_tokenizer.save(tmp_path, "tok")
    Tokenizer.load(tmp_path, "tok")
    fewer = Tokenizer("fewer", {b: r for b, r in gpt_tokenizer.ranks.items() if r < 300}, ["<|endoftext|>"],
                      gpt_tokenizer.pattern)
    fewer.save(tmp_path, "tok")
    assert Tokenizer.load(tmp_path, "tok").ranks == fewer.ranks
