"""The README, docs/ and the model cards quote numbers that cannot drift from the shipped files.

A figure is recognised by the label written beside it ("1.898 bits/char", "beam-4 BLEU 23.29, chrF 44.69",
"300 training verses, beam-4 BLEU 42.6, chrF 62.0", "induction score 0.99 (head 3.2)", "#1651 ' thou' (100%)",
…) and compared with the file it comes from (training.json, history.json, features/metrics.json,
features/dashboards.json, experiments/results.json), rounded as the text rounds it. Nothing is hard-coded:
retraining a model changes the JSON, and then only the text needs updating. A model card's "## History" section
tells of earlier runs, whose numbers are in no shipped file, and is not checked. Also: no shipped file names a
developer's machine, and docs/README.md's map of the code names every part of it.
"""
import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINTS = ROOT / "checkpoints"
GPT, TRANSLATOR, EXPERIMENTS = CHECKPOINTS / "gpt", CHECKPOINTS / "translator", CHECKPOINTS / "experiments"
SNAPSHOT_CARDS = sorted(GPT.glob("snapshots/*/README.md"))
MODEL_CARDS = [GPT / "README.md", TRANSLATOR / "README.md", *sorted(EXPERIMENTS.glob("*/README.md"))]
TEXTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *MODEL_CARDS, *SNAPSHOT_CARDS]
NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
HEAD_SCORE = re.compile(r"(previous-token|induction|first-token) score (\d\.\d+) \(head (\d+)\.(\d+)\)")
FEATURE_ID = re.compile(r"(?<![\w&/#])#(\d+)\b")
ABSOLUTE_PATH = re.compile(r"(?<![\w.])(/work/|/root/|/home/|/tmp/|/Users/|[A-Za-z]:\\\\?)")

pytestmark = pytest.mark.skipif(not (GPT / "training.json").is_file() or not (TRANSLATOR / "training.json").is_file(),
                                reason="the shipped checkpoints are missing")


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def checked_text(path: Path) -> str:
    """The part of a file whose numbers must match the shipped files (a card's History is not)."""
    return path.read_text(encoding="utf-8").split("\n## History")[0]


def name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def written(value: float, as_text: str) -> str:
    """`value` rounded and formatted as `as_text` is written (its decimals, its thousands commas)."""
    decimals = len(as_text.split(".")[1]) if "." in as_text else 0
    return f"{value:{',' if ',' in as_text else ''}.{decimals}f}"


def last_probe(history: list[dict]) -> dict:
    return [record for record in history if "heads" in record][-1]


def experiments_results() -> dict:
    return read_json(EXPERIMENTS / "results.json") if (EXPERIMENTS / "results.json").is_file() else {"variants": {}}


def bits_per_char(path: Path) -> list[float]:
    """What a bits/char figure in this file may quote: the experiments' variants in their own pages, the
    shipped GPT's held-out score everywhere else."""
    if "experiments" in path.parts:
        found = []
        for v in experiments_results()["variants"].values():
            found += [v["val_bits_per_char"], v.get("val_bits_per_char_as_trained")]
            found += list((v.get("extrapolation") or {}).values())
        return [x for x in found if x is not None]
    return [read_json(GPT / "training.json")["metrics"]["shipped"]["val_bits_per_char"]]


def parameter_counts() -> list[int]:
    return ([read_json(GPT / "training.json")["params"], read_json(TRANSLATOR / "training.json")["params"]]
            + [v["params"] for v in experiments_results()["variants"].values()])


def history_of(path: Path) -> list[dict]:
    """The history a card's head scores come from: a snapshot's own, else the shipped GPT's."""
    own = path.parent / "history.json"
    return read_json(own if path in SNAPSHOT_CARDS else GPT / "history.json")


# ---------------------------------------------------------------- figures ------------------

@pytest.mark.parametrize("path", TEXTS, ids=name)
def test_every_quoted_figure_matches_the_shipped_files(path):
    text, wrong = checked_text(path), []
    translator = read_json(TRANSLATOR / "training.json")["metrics"]["shipped"]
    features = read_json(GPT / "features" / "metrics.json")

    for m in re.finditer(NUMBER + r"\**\s*bits/char", text):
        if not any(written(v, m[1]) == m[1] for v in bits_per_char(path)):
            wrong.append(f"{m[0]!r}: the shipped files hold {bits_per_char(path)}")
    labelled = []
    for m in re.finditer(NUMBER + r" training verses\W+beam-4 BLEU " + NUMBER + ", chrF " + NUMBER, text):
        quoted = tuple(translator.get(f"train_sample_{k}") for k in ("verses", "beam4_bleu", "beam4_chrf"))
        if None in quoted:
            wrong.append(f"{m[0]!r}: the shipped translator's training.json has no train_sample_* figures "
                         "(`python -m toyviz.evaluate translator` prints them)")
        elif tuple(written(v, t) for v, t in zip(quoted, m.groups())) != m.groups():
            wrong.append(f"{m[0]!r}: the shipped translator's training.json says {quoted}")
        labelled.append(m.span())
    for m in re.finditer(r"everyday beam-4 chrF " + NUMBER + ", BLEU " + NUMBER, text):     # today's register
        chrf, bleu = translator.get("everyday_beam4_chrf"), translator.get("everyday_beam4_bleu")
        if None in (chrf, bleu) or (written(chrf, m[1]), written(bleu, m[2])) != (m[1], m[2]):
            wrong.append(f"{m[0]!r}: the shipped translator's training.json says {chrf}, {bleu}")
        labelled.append(m.span())
    for m in re.finditer(NUMBER + r" ?% of (?:the|its) output words", text):
        spelled = translator.get("everyday_beam4_spelled")
        if spelled is None or written(100 * spelled, m[1]) != m[1]:
            wrong.append(f"{m[0]!r}: the shipped translator's training.json says {spelled}")
    for m in re.finditer(r"(beam-4|greedy) BLEU " + NUMBER + ", chrF " + NUMBER, text):
        if any(start <= m.start() < end for start, end in labelled):      # a training-verse figure, above
            continue
        search = "beam4" if m[1] == "beam-4" else "greedy"
        bleu, chrf = translator[f"{search}_bleu"], translator[f"{search}_chrf"]
        if (written(bleu, m[2]), written(chrf, m[3])) != (m[2], m[3]):
            wrong.append(f"{m[0]!r}: the shipped translator's training.json says {bleu}, {chrf}")
        labelled.append(m.span())
    for m in re.finditer(r"(BLEU|chrF) \d+\.\d+", text):
        if not any(start <= m.start() < end for start, end in labelled):
            wrong.append(f"{m[0]!r}: write it 'beam-4 BLEU x, chrF y' or 'greedy BLEU x, chrF y' so it is checked")
    for m in re.finditer(r"variance explained\W+" + NUMBER, text):
        if written(features["fve"], m[1]) != m[1]:
            wrong.append(f"{m[0]!r}: features/metrics.json says fve {features['fve']}")
    for m in re.finditer(r"loss recovered\b[^%\n]*?(\d+\.\d+) ?%", text):
        if written(100 * features["ce_recovered"], m[1]) != m[1]:
            wrong.append(f"{m[0]!r}: features/metrics.json says ce_recovered {features['ce_recovered']}")
    for m in re.finditer(NUMBER + r" parameters", text):
        if int(m[1].replace(",", "")) not in parameter_counts():
            wrong.append(f"{m[0]!r}: the shipped models have {parameter_counts()}")
    if HEAD_SCORE.search(text):
        heads = last_probe(history_of(path))["heads"]
        for m in HEAD_SCORE.finditer(text):
            value = heads[m[1]][int(m[3])][int(m[4])]
            if written(value, m[2]) != m[2]:
                wrong.append(f"{m[0]!r}: the last probe in history.json says {value}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("card", [GPT / "README.md", TRANSLATOR / "README.md"], ids=name)
def test_a_model_card_quotes_its_training_json(card):
    facts, text = read_json(card.parent / "training.json"), checked_text(card)
    stages = (facts.get("earlier") or {}).get("stages", []) + [facts]
    quoted = re.findall(r"(\d+\.\d) minutes, (\d+) steps, ([\d,]+) tokens", text)
    assert quoted == [(f"{s['train_minutes']:.1f}", str(s["steps"]), f"{s['tokens']:,}") for s in stages]
    assert f"Parameters: {facts['params']:,}" in text
    assert f"Training text: {facts['train_chars']:,} characters" in text
    block = re.search(r"## Metrics[^\n]*\n```json\n(.*?)```", text, re.S)
    assert block and json.loads(block[1]) == facts["metrics"]
    # the card says how to load the folder it ships in
    assert f'toyviz.load("{card.parent.name}")' in text


def test_the_experiments_table_quotes_results_json():
    results, rows = experiments_results(), {}
    if not results["variants"]:
        pytest.skip("no checkpoints/experiments/results.json")
    for line in (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.replace("*", "").strip() for cell in line.strip().strip("|").split("|")]
        if re.fullmatch(r"`\w+`", cells[0]):               # | `variant` | what differs | params | bits/char | 2× | 4× | …
            rows[cells[0].strip("`")] = cells[2:6]
    assert set(rows) == set(results["variants"])
    for variant, (params, bpc, twice, four) in rows.items():
        v = results["variants"][variant]
        assert int(params.replace(",", "")) == v["params"], variant
        first = bpc.split()[0]
        assert written(v["val_bits_per_char"], first) == first, variant
        if "as trained" in bpc:
            trained = re.search(r"\((\d+\.\d+) as trained\)", bpc)[1]
            assert written(v["val_bits_per_char_as_trained"], trained) == trained
        for cell, key in ((twice, "2x"), (four, "4x")):
            if re.fullmatch(r"\d+\.\d+", cell):
                assert written(v["extrapolation"][key], cell) == cell, (variant, key)
    assert f"{results['tokens_per_variant']:,} tokens per variant" in (ROOT / "docs" / "experiments.md").read_text()


# ---------------------------------------------------------------- features -----------------

@pytest.mark.parametrize("path", TEXTS, ids=name)
def test_every_cited_feature_carries_the_shipped_dictionarys_label(path):
    """`#1651 ' thou' (100%)`, as the Features tab writes it; a feature id in code carries it in a comment."""
    text = checked_text(path)
    if not FEATURE_ID.search(text) and "steer(" not in text:
        return
    labels = read_json(GPT / "features" / "dashboards.json")["labels"]
    wrong = []
    for m in FEATURE_ID.finditer(text):
        if re.search(r"issues?\s*$", text[max(0, m.start() - 8): m.start()], re.I):
            continue
        feature = int(m[1])
        if feature >= len(labels) or not text[m.end() + 1:].startswith(labels[feature]):
            wrong.append(f"#{feature} {text[m.end() + 1: m.end() + 30]!r}…: the dictionary labels it "
                         f"{labels[feature] if feature < len(labels) else 'nothing (no such feature)'!r}")
    for line in text.splitlines():
        for m in re.finditer(r"(?:dashboard|steer)\((\d+)", line):
            if f"#{m[1]} " not in line:
                wrong.append(f"{line.strip()!r}: say which feature {m[1]} is, as `#{m[1]} <label>` on that line")
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------- snapshots ----------------

@pytest.mark.parametrize("card", SNAPSHOT_CARDS, ids=name)
def test_a_snapshot_card_says_what_the_snapshot_is(card):
    history, text = read_json(card.parent / "history.json"), card.read_text(encoding="utf-8")
    last, probe = history[-1], last_probe(history)
    assert "More Information Needed" not in text
    m = re.search(r"at step ([\d,]+), after\s+([\d,]+) tokens and (\d+\.\d) minutes", text)
    assert m and m.groups() == (f"{last['step']:,}", f"{last['tokens']:,}", f"{last['seconds'] / 60:.1f}")
    assert card.parent.name == f"step-{last['step']:06d}"
    assert f"at the probe of step {probe['step']:,}" in text
    evals = [record for record in history if "val_loss" in record]
    m = re.search(r"validation loss (\d\.\d+) nats/token at step ([\d,]+)", text)
    if evals:
        assert m and m.groups() == (f"{evals[-1]['val_loss']:.2f}", f"{evals[-1]['step']:,}")
    for m in re.finditer(r"best (\S+) score (\d\.\d+)", text):    # the best head of its kind
        best = max(max(row) for row in probe["heads"][m[1]])
        assert written(best, m[2]) == m[2], m[0]


# ---------------------------------------------------------------- the files themselves -----

def test_no_shipped_file_names_a_developers_machine():
    found = []
    for path in sorted(CHECKPOINTS.rglob("*")):
        if path.is_file() and path.suffix in (".json", ".md"):
            for m in ABSOLUTE_PATH.finditer(path.read_text(encoding="utf-8")):
                found.append(f"{name(path)}: {m[0]!r}")
    assert not found, found


@pytest.mark.parametrize("facts", sorted(CHECKPOINTS.glob("*/training.json")), ids=name)
def test_training_json_says_where_its_own_command_wrote(facts):
    """"out" is what the trainer's loadable_name gives for the command's --out (default checkpoints/<kind>)."""
    from toyviz.training.card import loadable_name
    facts_json = read_json(facts)
    args = shlex.split(facts_json["command"])
    kind = args[args.index("toyviz.train") + 1]
    out = Path(args[args.index("--out") + 1]) if "--out" in args else CHECKPOINTS / kind
    assert facts_json["out"] == loadable_name(out, kind)


def test_the_readme_is_short_shows_the_app_and_gives_cis_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    picture = re.search(r"!\[[^\]]*\]\(([^)]+\.png)\)", readme)
    assert picture and (ROOT / picture[1]).stat().st_size < 300_000
    ci = (ROOT / ".ci" / "run").read_text().split("# the README's test command\n")[1].splitlines()[0]
    assert f"```bash\n{ci}\n```" in readme


@pytest.mark.parametrize("path", TEXTS, ids=name)
def test_every_cited_path_and_link_exists(path):
    text, missing = path.read_text(encoding="utf-8"), []
    for m in re.finditer(r"`((?:toyviz|tests|benchmarks|checkpoints|docs)/[\w/.-]+)`", text):
        if not (ROOT / m[1]).exists():
            missing.append(m[1])
    for m in re.finditer(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        if not (path.parent / m[1]).exists():
            missing.append(m[1])
    assert not missing, missing


def test_the_map_in_docs_readme_names_every_part_of_the_code():
    """docs/README.md's "Where the code lives" names every folder of the code (toyviz's packages, at any depth,
    as `name/`), every module at toyviz's top, and the repository's own folders; a new one fails until it is
    on the map."""
    block = re.search(r"## Where the code lives\n+```\n(.*?)```", (ROOT / "docs" / "README.md").read_text(), re.S)
    assert block, "docs/README.md has no 'Where the code lives' block"
    text, package = block[1], ROOT / "toyviz"
    folders = [f for f in package.rglob("*") if f.is_dir() and f.name != "__pycache__" and any(f.iterdir())]
    missing = [name(f) for f in folders if f"{f.relative_to(package).as_posix()}/" not in text
               and f"{f.name}/" not in text]
    missing += [name(f) for f in package.glob("*.py") if f.name != "__init__.py" and f.name not in text]
    missing += [f"{d}/" for d in ("benchmarks", "checkpoints", "docs", "tests", "web") if f"{d}/" not in text]
    assert not missing, f"not on the map: {missing}"
