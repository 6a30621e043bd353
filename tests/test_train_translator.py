"""The translator's training path: its batches, two English sources, and a run that pauses and resumes.

The Bible caches are written by hand into a temporary TOYVIZ_DATA (no apt-get, no pysword): a few
hundred verse pairs over several books, the held-out ones included, in a WEB and a KJV wording.
"""
import json
from dataclasses import asdict

import pytest
import torch
from safetensors.torch import load_file

from toyviz.data import bible, everyday
from toyviz.data.bible import VersePair
from toyviz.training.batches import VerseBatches
from toyviz.training.cli import main
from toyviz.training.run import recipe_argv

TINY = ["--layers", "1", "--heads", "2", "--d-model", "32", "--d-ff", "64", "--context", "64", "--batch", "8",
        "--vocab", "300", "--warmup", "2", "--lr", "3e-3", "--eval-every", "2", "--eval-limit", "2",
        "--device", "cpu"]
WORDS_EN = "the man went to the river and saw light in the land of his fathers".split()
WORDS_ES = "el hombre fué al río y vió luz en la tierra de sus padres".split()
BOOKS = ("Gen", "Exod", "Ruth", "Matt", "Jonah", "John", "Phil", "Jas")


def fake_pairs(source: str) -> list[VersePair]:
    pairs = []
    for b, book in enumerate(BOOKS):
        for verse in range(1, 41):
            n = 4 + (verse * 7 + b) % 9
            en = f"{book} {verse}: " + " ".join(WORDS_EN[(verse + i) % len(WORDS_EN)] for i in range(n))
            es = " ".join(WORDS_ES[(verse + i) % len(WORDS_ES)] for i in range(n))
            pairs.append(VersePair(f"{book}.1.{verse}", book, en if source == "web" else en.replace("the", "thee"), es))
    return pairs


@pytest.fixture
def bible_cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TOYVIZ_DATA", str(folder))
    (folder / "bible").mkdir(parents=True)
    for source, name in (("web", "pairs.jsonl"), ("kjv", "pairs-kjv.jsonl")):
        (folder / "bible" / name).write_text("".join(json.dumps(asdict(p)) + "\n" for p in fake_pairs(source)))
    return folder


def test_each_source_loads_from_its_own_cache(bible_cache):
    web, kjv = bible.load_pairs("web"), bible.load_pairs("kjv")
    assert [p.ref for p in web] == [p.ref for p in kjv] and web[0].en != kjv[0].en and web[0].es == kjv[0].es


def test_every_verse_is_drawn_once_an_epoch_in_batches_that_change_each_epoch():
    versions = [[([v, 0], [v]), ([v, 1], [v])] for v in range(100)]     # verse v in two wordings
    batches = VerseBatches(versions, batch=8, seed=3)
    assert batches.per_epoch == 13
    epochs = [batches.epoch(e) for e in range(3)]
    for epoch in epochs:
        assert sorted(src[0] for rows in epoch for src, _ in rows) == list(range(100))   # every verse, once
        assert {len(rows) for rows in epoch} <= {7, 8}                                    # no runt batch
    assert epochs[0] != epochs[1] != epochs[2]
    drawn = [src[1] for epoch in epochs for rows in epoch for src, _ in rows]
    assert 0.35 < sum(drawn) / len(drawn) < 0.65                          # both wordings drawn
    assert batches.at(14) == epochs[1][1]
    assert VerseBatches(versions, batch=8, seed=3).epoch(2) == epochs[2]   # a pure function of the epoch


def test_a_run_paused_at_step_n_and_resumed_ends_with_the_weights_of_the_unpaused_run(tmp_path, bible_cache):
    whole, split = tmp_path / "whole", tmp_path / "split"
    main(["translator", "--steps", "8", *TINY, "--out", str(whole)])
    main(["translator", "--steps", "8", *TINY, "--out", str(split), "--pause-at-step", "3"])
    state = bible_cache / "runs" / "split"
    assert (state / "state.pt").is_file() and not (split / "training.json").exists()
    split.mkdir(exist_ok=True)
    (split / "README.md").write_text("# old card\n\n## Recipe\nold recipe\n\n## History\nHow it came to be.\n")
    main(["translator", "--steps", "8", *TINY, "--out", str(split), "--resume"])

    a, b = load_file(whole / "model.safetensors"), load_file(split / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)       # bit-identical on the CPU
    history = [json.loads((folder / "history.json").read_text()) for folder in (whole, split)]
    assert [r["step"] for r in history[1]] == list(range(1, 9))
    assert [r["train_loss"] for r in history[0]] == [r["train_loss"] for r in history[1]]
    assert [r.get("val_loss") for r in history[0]] == [r.get("val_loss") for r in history[1]]
    assert not (state / "state.pt").exists()                                      # finished: nothing to resume
    facts = json.loads((split / "training.json").read_text())
    assert "--resume" not in facts["command"] and "--pause-at-step" not in facts["command"]
    assert facts["sources"] == ["web", "kjv"] and facts["steps"] == 8
    assert facts["metrics"]["shipped"]["heldout_loss"] > 0
    card = (split / "README.md").read_text()
    assert "## History\nHow it came to be." in card and "old recipe" not in card   # hand-written sections kept
    assert "King James Version" in card and card.index("## History") < card.index("## Licence")


def test_resume_refuses_a_missing_state_and_other_flags_and_a_fresh_run_will_not_overwrite_one(tmp_path, bible_cache):
    out = tmp_path / "run"
    with pytest.raises(SystemExit, match="no saved run"):
        main(["translator", "--steps", "8", *TINY, "--out", str(out), "--resume"])
    main(["translator", "--steps", "8", *TINY, "--out", str(out), "--pause-at-step", "2"])
    with pytest.raises(SystemExit, match="holds a run of"):
        main(["translator", "--steps", "9", *TINY, "--out", str(out), "--resume"])
    with pytest.raises(SystemExit, match="unfinished run"):
        main(["translator", "--steps", "8", *TINY, "--out", str(out)])


def test_held_out_books_stay_out_of_training_in_every_source(tmp_path, bible_cache, monkeypatch):
    seen = []
    original = VerseBatches.__init__

    def spy(self, versions, batch, seed):
        seen.extend(versions)
        original(self, versions, batch, seed)

    monkeypatch.setattr(VerseBatches, "__init__", spy)
    main(["translator", "--steps", "1", *TINY, "--out", str(tmp_path / "run")])
    tok_rows = {tuple(src) for rows in seen for src, _ in rows}
    from toyviz import load
    translator = load(str(tmp_path / "run"), device="cpu")
    eos = translator.src_tok.special("<|eos|>")
    held_out = {tuple(translator.src_tok.encode(p.en) + [eos]) for source in ("web", "kjv")
                for p in bible.load_pairs(source) if p.book in bible.TEST_BOOKS}
    assert seen and not tok_rows & held_out
    assert {len(rows) for rows in seen} == {2}              # every training verse in both wordings


def test_session_flags_are_not_part_of_the_recipe():
    argv = ["translator", "--steps", "9", "--resume", "--pause-after-minutes", "5", "--state=/x", "--batch", "32"]
    assert recipe_argv(argv) == ["translator", "--steps", "9", "--batch", "32"]


def test_everyday_pairs_teach_a_1909_only_checkpoint_a_second_register(tmp_path, bible_cache, monkeypatch):
    """--init from a checkpoint without registers, --everyday N: the source vocabulary grows by the two register
    tokens, every pair ends with its register's token and EOS, and the first everyday pairs are validation only."""
    from toyviz import load
    from toyviz.training import evaluate

    words = [("the man went home", "el hombre fue a casa"), ("the light is good", "la luz es buena"),
             ("my father saw the river", "mi padre vio el río")]
    pairs = [{"en": f"{en.capitalize()} {i}.", "es": f"{es.capitalize()} {i}."} for i in range(20) for en, es in words]
    cache = everyday.pairs_cache(60, 1337)          # the pairs ready, so apertium never runs here
    assert cache.is_relative_to(bible_cache)
    cache.parent.mkdir()
    cache.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    monkeypatch.setattr(evaluate, "spelled_share", lambda texts: 0.5)      # hunspell's own test: test_everyday
    seen = []
    original = VerseBatches.__init__
    monkeypatch.setattr(VerseBatches, "__init__", lambda self, versions, batch, seed: (
        seen.extend(versions), original(self, versions, batch, seed))[1])

    main(["translator", "--steps", "2", *TINY, "--out", str(tmp_path / "old")])
    old = load(str(tmp_path / "old"), device="cpu")
    seen.clear()
    main(["translator", "--steps", "2", *TINY, "--init", str(tmp_path / "old"), "--everyday", "60",
          "--out", str(tmp_path / "new")])
    new = load(str(tmp_path / "new"), device="cpu")

    assert old.registers == ("1909",) and new.registers == ("today", "1909")
    assert new.config.src_vocab_size == old.config.src_vocab_size + 2
    today, bible_register, eos = (new.src_tok.special(t) for t in ("<|today|>", "<|1909|>", "<|eos|>"))
    everyday_rows = [src for rows in seen for src, _ in rows if src[-2:] == [today, eos]]
    assert len(everyday_rows) == 60 - 6                                       # 6 held out for validation
    assert all(src[-2:] in ([today, eos], [bible_register, eos]) for rows in seen for src, _ in rows)
    facts = json.loads((tmp_path / "new" / "training.json").read_text())
    assert facts["everyday_pairs"] == 54
    shipped = facts["metrics"]["shipped"]
    assert shipped["everyday_pairs"] == 2 and shipped["everyday_register"] == "today"
    assert shipped["everyday_beam4_spelled"] == 0.5 and "everyday_beam4_chrf" in shipped and "beam4_bleu" in shipped
    card = (tmp_path / "new" / "README.md").read_text()
    assert "apertium-eng-spa" in card and "GPL-2" in card.split("## Licence")[1]
    assert new.translate("the man", register="1909").trace.src_tokens[-2:] == ["<|1909|>", "<|eos|>"]
