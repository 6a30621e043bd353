"""Everyday English → today's Spanish, written by a teacher: the translator's second register.

No corpus of modern sentence pairs can be had from the package registries, so the pairs are made:
English sentences a class would type (templates filled with everyday words, ranked by PyPI
`wordfreq`, plus the sentence-like English strings of the installed Debian packages' Spanish message
catalogues) translated by Debian's rule-based `apertium-eng-spa` (GPL-2). Training the translator on
a teacher's outputs is sequence-level knowledge distillation (Kim & Rush 2016). The teacher's output
is GPL data: it is made here at training time, into the data cache, and never committed.

Lines the teacher marks (`*` unknown word, `#` generation error, `@` untranslated lemma) are dropped;
its missing opening `¿`/`¡` are put back (it writes "Dónde es la escuela?").

    toyviz data everyday [PAIRS]    # make the pairs once (40,000 by default), cache, print a one-line JSON summary
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from toyviz.data import cache_dir

PACKAGES = ("apertium-eng-spa", "hunspell-es", "gettext")     # the teacher, the spelling check, msgunfmt
DEV_SET = Path(__file__).with_name("everyday_dev.tsv")        # hand-written references: the project's check
MARKS = re.compile(r"[*#@]")
CATALOGUES = Path("/usr/share/locale/es/LC_MESSAGES")
MIN_ZIPF = 3.0          # wordfreq's log10 frequency per billion words: 3.0 is about once in a million words


@dataclass(frozen=True)
class Pair:
    en: str
    es: str


def pairs_cache(n: int, seed: int) -> Path:
    """Where load_pairs keeps n pairs made with seed."""
    # "pairs2": made again since `spanish` removes the teacher's space before a stop (the pairs-* files kept it)
    return cache_dir() / "everyday" / f"pairs2-{n}-{seed}.jsonl"


def load_pairs(n: int, seed: int = 0) -> list[Pair]:
    """n (or fewer, after the teacher's marked lines are dropped) everyday pairs, made once and cached
    at pairs_cache(n, seed): only the first call needs apertium and wordfreq."""
    cache = pairs_cache(n, seed)
    if not cache.exists():
        ensure_packages()
        cache.parent.mkdir(parents=True, exist_ok=True)
        sentences = english_sentences(n, seed)
        taught = teach([s.ask for s in sentences])
        pairs = [Pair(s.en, spanish(s, es)) for s, es in zip(sentences, taught) if es is not None]
        tmp = cache.with_suffix(".tmp")        # written whole, then renamed: never a half-written cache
        tmp.write_text("".join(json.dumps(asdict(p), ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
        os.replace(tmp, cache)
    with cache.open(encoding="utf-8") as lines:
        return [Pair(**json.loads(line)) for line in lines]


def dev_pairs() -> list[Pair]:
    """The everyday dev set: sentences a class types, with Spanish written by hand (not by the teacher)."""
    rows = (line.split("\t") for line in DEV_SET.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#"))
    return [Pair(en.strip(), es.strip()) for en, es in rows]


def ensure_packages() -> None:
    """Install the Debian packages the recipe runs (apertium, hunspell, msgunfmt) when they are missing."""
    if all(shutil.which(tool) for tool in ("apertium", "hunspell", "msgunfmt")):
        return
    done = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"`apt-get install {' '.join(PACKAGES)}` failed (needs root and the package lists: "
                           f"`apt-get update`):\n{done.stderr.strip()[-500:]}")


# ---------------------------------------------------------------- the teacher ----------------

@dataclass(frozen=True)
class Sentence:
    """An English sentence and what the teacher is given for it. The teacher garbles English questions
    ("Can my friends drink milk?" → "Puede mi leche de bebida de los amigos?") but translates statements
    well, and a Spanish yes/no question is its statement between ¿ and ?: so a yes/no question is taught
    as its statement ("My friends can drink milk."). It reads "please" as the verb (complacer): taught
    without it, and "por favor" put back."""
    en: str
    ask: str
    please: bool = False


def teach(lines: list[str]) -> list[str | None]:
    """apertium eng-spa over all lines in one process (its text format passes each line break through, so
    line i of the output is sentence i; `-f line` would too, but drops the full stops); None where the
    teacher marked a word it could not translate."""
    done = subprocess.run(["apertium", "eng-spa"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, check=True)
    spanish = done.stdout.split("\n")[: len(lines)]
    if len(spanish) != len(lines):
        raise RuntimeError(f"apertium returned {len(spanish)} lines for {len(lines)}: the pairs would not align")
    return [None if MARKS.search(es) or not es.strip() else " ".join(es.split()) for es in spanish]


PRONOUNS = re.compile(r"(?<=.) (Me|Yo|Mi|Mis|Te|Le)\b")     # "no Me gusta": the case of "I" carried over
SPACED = re.compile(r"\s+([.,;:!?])")      # "Tengo dos años .": the teacher's space before a stop (6 % of its
                                            # lines), which translator-v8 learned ("El Señor es mi pastor .")


def spanish(sentence: Sentence, es: str) -> str:
    """The teacher's Spanish, finished: no space before a stop, the capital, the opening ¿ / ¡ it leaves out, a
    question made of a taught statement, "por favor"."""
    es = SPACED.sub(r"\1", PRONOUNS.sub(lambda m: " " + m.group(1).lower(), es))
    if sentence.please:
        es = es[:-1] + ", por favor" + es[-1]
    if sentence.en.endswith("?") and es.endswith("."):
        es = es[:-1] + "?"
    es = es[0].upper() + es[1:]
    for close, opening in (("?", "¿"), ("!", "¡")):
        if es.endswith(close) and opening not in es:
            es = opening + es
    return es


# ---------------------------------------------------------------- the English ----------------

def english_sentences(n: int, seed: int) -> list[Sentence]:
    """n distinct English sentences: about one in eight from the message catalogues, the rest templates."""
    rng = random.Random(seed)
    catalogue = catalogue_sentences()
    rng.shuffle(catalogue)
    sentences = {en: Sentence(en, en) for en in catalogue[: n // 8]}
    for _ in range(50 * n):                             # templates repeat: draw until n distinct ones
        if len(sentences) >= n:
            break
        sentence = template_sentence(rng)
        sentences.setdefault(sentence.en, sentence)
    return list(sentences.values())[:n]


def catalogue_sentences() -> list[str]:
    """The English strings (msgids) of the installed packages' Spanish catalogues that read as sentences:
    3–16 words, a capital first, a full stop, question or exclamation mark last, and no format specifiers,
    markup, shortcuts or file names."""
    found = set()
    for mo in sorted(CATALOGUES.glob("*.mo")):
        text = subprocess.run(["msgunfmt", "--no-wrap", str(mo)], capture_output=True, text=True).stdout
        for raw in re.findall(r'^msgid "(.*)"$', text, re.M):
            if SENTENCE.fullmatch(raw) and 3 <= len(raw.split()) <= 16:
                found.add(raw)
    return sorted(found)


SENTENCE = re.compile(r"[A-Z][a-z]*(?: [A-Za-z][a-z']*,?)+[.?!]")     # plain words only: no %s, {0}, _File, /path
PLEASE = re.compile(r", please(?=[.?!]$)")


def template_sentence(rng: random.Random) -> Sentence:
    """A frame filled: a string, or a (question, its statement) pair filled with the same words."""
    frame = rng.choice(FRAMES)
    if callable(frame):
        en, ask = frame(rng)
    else:
        question, statement = frame if isinstance(frame, tuple) else (frame, frame)
        words = rng.random()
        en, ask = fill(question, random.Random(words)), fill(statement, random.Random(words))
    en, ask = capital(en), capital(ask)
    return Sentence(en, PLEASE.sub("", ask), please=bool(PLEASE.search(ask)))


def capital(text: str) -> str:
    return text[0].upper() + text[1:]


def fill(frame: str, rng: random.Random) -> str:
    """A frame's {slots} filled with words of their list, the more frequent words the more often."""
    return re.sub(r"\{(\w+)\}", lambda m: pick(m.group(1), rng), frame)


def pick(slot: str, rng: random.Random) -> str:
    words, weights = WEIGHTED[slot]
    return rng.choices(words, weights)[0]


def clause(rng: random.Random) -> tuple[str, str]:
    """A subject, a verb in one of the tenses, aspects and moods a class types, and its object: a
    statement, a negation, or a yes/no question with its statement (what the teacher is given)."""
    person, subject = rng.choice(SUBJECTS)
    base, third, past, participle, ing, objects = rng.choice(VERBS)
    obj = fill(rng.choice(objects), rng)
    when = rng.choice(["", "", " " + pick("when", rng)])
    be = {"1s": "am", "3s": "is"}.get(person, "are")
    have = "has" if person == "3s" else "have"
    do = "does" if person == "3s" else "do"
    present = third if person == "3s" else base
    inner = subject if subject == "I" else subject.lower()      # the subject after an inverted verb
    statements = [f"{subject} {present} {obj}{when}.", f"{subject} {be} {ing} {obj}.",
                  f"{subject} {past} {obj}{when}.", f"{subject} will {base} {obj}{when}.",
                  f"{subject} {be} going to {base} {obj}{when}.", f"{subject} {have} {participle} {obj}.",
                  f"{subject} can {base} {obj}.", f"{subject} should {base} {obj}.",
                  f"{subject} would like to {base} {obj}."]
    questions = [f"{do} {inner} {base} {obj}{when}?", f"{be} {inner} {ing} {obj}?", f"did {inner} {base} {obj}{when}?",
                 f"will {inner} {base} {obj}{when}?", f"{be} {inner} going to {base} {obj}{when}?",
                 f"{have} {inner} {participle} {obj}?", f"can {inner} {base} {obj}?", f"should {inner} {base} {obj}?",
                 f"would {inner} like to {base} {obj}?"]
    negations = [f"{subject} {do}n't {base} {obj}{when}.", f"{subject} {be} not {ing} {obj}.",
                 f"{subject} didn't {base} {obj}{when}.", f"{subject} won't {base} {obj}{when}.",
                 f"{subject} {have}n't {participle} {obj}.", f"{subject} can't {base} {obj}."]
    kind = rng.random()
    if kind < 0.4:
        i = rng.randrange(len(questions))
        return questions[i], statements[i]
    text = rng.choice(negations if kind < 0.55 else statements)
    return text, text


# Subjects with their agreement; "you" and plurals take the plural verb forms.
SUBJECTS = [("1s", "I"), ("2", "You"), ("3s", "He"), ("3s", "She"), ("p", "We"), ("p", "They"),
            ("3s", "My sister"), ("3s", "My brother"), ("3s", "My mother"), ("3s", "My father"),
            ("3s", "My friend"), ("3s", "The teacher"), ("3s", "The doctor"), ("3s", "Our neighbour"),
            ("3s", "The woman"), ("3s", "The man"), ("3s", "The boy"), ("3s", "The girl"), ("3s", "My grandmother"),
            ("p", "My parents"), ("p", "The children"), ("p", "My friends"), ("p", "The students")]

# base, third person, past, participle, -ing, what may follow it
VERBS = [
    ("work", "works", "worked", "worked", "working", ["in a {place}", "at home", "at the {place}", "with {person}"]),
    ("go", "goes", "went", "gone", "going", ["to the {place}", "home", "to {city}", "to school"]),
    ("eat", "eats", "ate", "eaten", "eating", ["{food}", "at the {place}", "with {person}"]),
    ("drink", "drinks", "drank", "drunk", "drinking", ["{drink}", "a glass of {drink}", "a cup of {drink}"]),
    ("buy", "buys", "bought", "bought", "buying", ["{thing}", "{food}", "a new {thing_noun}"]),
    ("want", "wants", "wanted", "wanted", "wanting", ["{thing}", "{food}", "a cup of {drink}"]),
    ("like", "likes", "liked", "liked", "liking", ["{food}", "the {place}", "{drink}", "the {adj} {thing}"]),
    ("read", "reads", "read", "read", "reading", ["a book", "the newspaper", "a letter", "the message"]),
    ("write", "writes", "wrote", "written", "writing", ["a letter", "an email", "a message", "a book"]),
    ("live", "lives", "lived", "lived", "living", ["in {city}", "near the {place}", "with {person}"]),
    ("study", "studies", "studied", "studied", "studying", ["{subject}", "at the university", "at home"]),
    ("play", "plays", "played", "played", "playing", ["football", "the guitar", "the piano", "in the park"]),
    ("cook", "cooks", "cooked", "cooked", "cooking", ["{food}", "dinner", "lunch", "breakfast"]),
    ("visit", "visits", "visited", "visited", "visiting", ["{person}", "the {place}", "{city}"]),
    ("need", "needs", "needed", "needed", "needing", ["{thing}", "a doctor", "help", "more time"]),
    ("open", "opens", "opened", "opened", "opening", ["the window", "the door", "the box", "the shop"]),
    ("clean", "cleans", "cleaned", "cleaned", "cleaning", ["the kitchen", "the house", "the car", "the room"]),
    ("call", "calls", "called", "called", "calling", ["{person}", "the doctor", "the police", "a taxi"]),
    ("watch", "watches", "watched", "watched", "watching", ["television", "a film", "the game", "the news"]),
    ("wait for", "waits for", "waited for", "waited for", "waiting for", ["the bus", "the train", "{person}"]),
    ("speak", "speaks", "spoke", "spoken", "speaking", ["Spanish", "English", "with {person}", "to the teacher"]),
    ("find", "finds", "found", "found", "finding", ["the {thing_noun}", "a job", "the {place}"]),
    ("take", "takes", "took", "taken", "taking", ["the bus", "the train", "a photo", "the {thing_noun}"]),
    ("see", "sees", "saw", "seen", "seeing", ["{person}", "the {place}", "the sea", "a film"]),
    ("help", "helps", "helped", "helped", "helping", ["{person}", "the students", "the children"]),
    ("learn", "learns", "learned", "learned", "learning", ["{subject}", "to swim", "to drive"]),
    ("sell", "sells", "sold", "sold", "selling", ["{thing}", "the house", "the car", "{food}"]),
    ("pay", "pays", "paid", "paid", "paying", ["the bill", "by card", "in cash"]),
    ("travel", "travels", "travelled", "travelled", "travelling", ["to {city}", "by train", "by plane"]),
    ("finish", "finishes", "finished", "finished", "finishing", ["the work", "the homework", "the book"]),
    ("love", "loves", "loved", "loved", "loving", ["{food}", "{city}", "the {place}", "{person}"]),
    ("make", "makes", "made", "made", "making", ["a cake", "dinner", "the bed", "a mistake", "coffee"]),
    ("bring", "brings", "brought", "brought", "bringing", ["the {thing_noun}", "{food}", "a friend"]),
    ("know", "knows", "knew", "known", "knowing", ["the answer", "{person}", "the way", "{city}"]),
]

WORDS = {
    "place": "school hospital station library bank restaurant shop supermarket park museum church office "
             "airport hotel market beach cinema university kitchen garden pharmacy bakery street city "
             "house room bathroom classroom factory farm village bridge river square",
    "person": "my mother|my father|my sister|my brother|my grandmother|my grandfather|my friend|the teacher|"
              "the doctor|the children|my son|my daughter|my wife|my husband|my cousin|the neighbours|my uncle|my aunt",
    "food": "bread|rice|fish|chicken|soup|fruit|cheese|eggs|meat|salad|potatoes|vegetables|apples|oranges|"
            "a sandwich|pasta|cake|breakfast|lunch|dinner|chocolate|tomatoes|beans",
    "drink": "coffee tea water milk juice wine beer",
    "thing": "a car|a book|a phone|a computer|a bicycle|a ticket|a map|a key|a bag|a shirt|shoes|a table|a chair|"
             "a pen|a newspaper|a watch|a dress|a coat|an umbrella|a camera|a bed|a lamp|glasses|a letter",
    "city": "Madrid Mexico London Paris Barcelona Lima Seville Rome Bogota Berlin",
    "subject": "mathematics|history|Spanish|English|music|science|medicine|art|chemistry|geography",
    "when": "today|tomorrow|yesterday|every day|on Monday|on Friday|at night|in the morning|this afternoon|"
            "last week|next week|this weekend|now|later|in the summer|on Sunday|every morning|last year",
    "adj": "big small new old beautiful cheap expensive red black white green blue good bad hot cold long "
           "short happy sad tall young easy difficult clean dirty quiet",
    "animal": "horse dog cat bird cow fish mouse sheep",
    "weather": "sunny|cold|hot|windy|cloudy|warm|raining|snowing",
    "job": "teacher doctor nurse engineer cook farmer driver lawyer student waiter writer painter",
    "state": "tired|hungry|thirsty|happy|sad|cold|hot|busy|ready|late|sick|bored|worried",
    "day": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday",
    "number": "two three four five six seven eight nine ten twelve twenty",
    "hour": "one two three four five six seven eight nine ten eleven twelve",
    "plural": "books|children|students|cars|apples|houses|dogs|cats|chairs|trees|friends|tickets|rooms|"
              "glasses|shops|flowers|birds|days|weeks|hours",
    "past": "ran walked went came swam flew",
    "greeting": "Good morning.|Good afternoon.|Good evening.|Good night.|Hello, how are you?|Thank you very much.|"
                "See you tomorrow.|Nice to meet you.|Excuse me.|I am sorry.|Happy birthday!|Welcome!|"
                "Goodbye.|You are welcome.|What is your name?|Where are you from?|How old are you?|"
                "I don't understand.|Can you help me?|Do you speak English?|Of course.|I agree.|"
                "What time is it?|What day is it today?|Where is the bathroom?|How are you?|I am fine, thanks.",
}
FRAMES = [clause] * 30 + [
    ("Do you like {food}?", "You like {food}."), ("Does your {family} like {drink}?", "Your {family} likes {drink}."),
    ("Is it {weather} {when}?", "It is {weather} {when}."), ("Is the {place} open {when}?", "The {place} is open {when}."),
    "What is your {family}'s name?", "What would you like to drink?",
    "The {family} of my friend is a {job}.", "I usually get up at {hour}.", "We have {subject} on {day}.",
    "Where is the {place}?", "Where are the {plural}?", ("Is there a {place} near here?", "There is a {place} near here."),
    "How do I get to the {place}?", "The {place} is near the {place}.", "The {place} is closed {when}.",
    "I would like a cup of {drink}, please.", "I would like {food}, please.", ("Can I have {food}, please?", "I can have {food}, please."),
    "A glass of {drink}, please.", "How much is {thing}?", "How much does {thing} cost?",
    ("Do you have {thing}?", "You have {thing}."), "I have {number} {plural}.", "There are {number} {plural} in the {place}.",
    "There is {thing} on the table.", "The weather is {weather} today.", "It is {weather} {when}.",
    ("Will it rain {when}?", "It will rain {when}."), "It was very {weather} yesterday.",
    "If it rains tomorrow, we will stay at home.", "It is {hour} o'clock.", "The train leaves at {hour}.",
    "The {place} opens at {hour} in the morning.", "Today is {day}.", "See you on {day}.",
    "The {adj} {animal} {past} to the {place}.", "The {animal} is {adj}.", "My {animal} is very {adj}.",
    "My sister is a {job}.", "My father works as a {job}.", "I want to be a {job}.", ("Is your {family} a {job}?", "Your {family} is a {job}."),
    "I am {state}.", ("Are you {state}?", "You are {state}."), "We are very {state} {when}.", "She was {state} yesterday.",
    "The {thing_noun} is {adj}.", "This {thing_noun} is too {adj}.", "I like the {adj} {thing_noun}.",
    "My name is {name}.", "{name} is my {family}.", "{name} lives in {city}.", "I am {number} years old.",
    "My {family} is {number} years old.", "My {family} works in a {place}.", "My {family} is {state}.",
    "{greeting}", "{greeting}", "{greeting}", "What are you doing {when}?", "Where do you live?", "Where do you work?", "What do you want to eat?", "Who is that {family_person}?",
    "Why are you {state}?", "When does the {place} open?", "How many {plural} do you have?",
    "I think that the {place} is {adj}.", "I don't know where the {place} is.",
    "We need to buy {food} and {food}.", "Please close the door.", "Please open the window.",
    "Turn left at the {place}.", "Go straight on to the {place}.", "The {place} is on the left.",
]
WORDS |= {
    "thing_noun": "car book phone computer bicycle ticket map key bag shirt table chair pen watch dress coat "
                  "umbrella camera bed lamp house room window door",
    "name": "Maria Juan Ana Pedro Lucia Carlos Sofia Luis Elena Pablo",
    "family": "sister brother mother father son daughter grandmother grandfather cousin uncle aunt wife husband",
    "family_person": "man woman boy girl teacher doctor",
}


def weighted(words: str) -> tuple[list[str], list[float]]:
    """A slot's words, those wordfreq finds rarer than MIN_ZIPF dropped, weighted by their frequency
    (Zipf − 2: the commonest words a few times as often as the rarest kept)."""
    from wordfreq import zipf_frequency

    items = words.split("|") if "|" in words else words.split()
    scored = [(w, zipf_frequency(w.split()[-1].strip(".,!?"), "en")) for w in items]
    kept = [(w, z) for w, z in scored if z >= MIN_ZIPF]
    return [w for w, _ in kept], [z - 2 for _, z in kept]


class _Weighted(dict):
    """WORDS weighted on first use: importing this module needs no wordfreq (only making pairs does)."""

    def __missing__(self, slot):
        self[slot] = weighted(WORDS[slot])
        return self[slot]


WEIGHTED = _Weighted()


def main(argv=None) -> None:
    import argparse
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pairs", type=int, nargs="?", default=40_000, help="how many pairs to make (default 40,000)")
    pairs = load_pairs(p.parse_args(argv).pairs)
    print(json.dumps({"pairs": len(pairs), "cache": str(cache_dir() / "everyday")}))
