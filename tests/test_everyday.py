"""The translator's second register: the teacher's everyday pairs (toyviz.data.everyday), the everyday dev set
and its spelling check. The tests that run apertium, msgunfmt or hunspell are skipped where Debian's packages
are not installed (`toyviz data everyday` installs them)."""
import random
import re
import shutil

import pytest

from toyviz.data import everyday
from toyviz.data.everyday import Sentence
from toyviz.models.tokenizer import Tokenizer
from toyviz.training.evaluate import spelled_share

needs = lambda tool: pytest.mark.skipif(shutil.which(tool) is None, reason=f"{tool} is not installed")


def test_the_teachers_spanish_is_finished_by_rule():
    question = Sentence("Can my friends drink milk?", "My friends can drink milk.")
    assert everyday.spanish(question, "Mis amigos pueden beber leche.") == "¿Mis amigos pueden beber leche?"
    please = Sentence("I would like a cup of coffee, please.", "I would like a cup of coffee.", please=True)
    assert everyday.spanish(please, "Me gustaría una taza de café.") == "Me gustaría una taza de café, por favor."
    assert everyday.spanish(Sentence("I don't like tea.", "I don't like tea."), "no Me gusta el té.") == \
        "No me gusta el té."
    assert everyday.spanish(Sentence("Welcome!", "Welcome!"), "Bienvenido!") == "¡Bienvenido!"
    assert everyday.spanish(Sentence("Madrid is big.", "Madrid is big."), "Madrid es grande.") == "Madrid es grande."
    assert everyday.spanish(Sentence("I am two years old.", "I am two years old."), "Tengo dos años .") == \
        "Tengo dos años."                       # the teacher's space before a stop, which the model would learn


def test_a_yes_no_question_is_taught_as_its_statement_with_the_same_words():
    rng = random.Random(5)
    sentences = [everyday.template_sentence(rng) for _ in range(3000)]
    questions = [s for s in sentences if s.en.endswith("?") and s.ask.endswith(".")]
    assert len(questions) > 300
    for s in questions:                     # the same last word, after the same subject
        tail = lambda text: text.replace(", please", "")[:-1].split()[-1]
        assert tail(s.en) == tail(s.ask), s
        assert s.ask.split()[0].lower() in s.en.lower().split(), s
    assert not any("{" in s.en or "  " in s.en or "the a " in s.en.lower() for s in sentences)
    assert {s.en[0] for s in sentences} <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert any(s.please for s in sentences) and not any("please" in s.ask for s in sentences if s.please)


@needs("msgunfmt")
def test_the_message_catalogues_give_plain_sentences():
    found = everyday.catalogue_sentences()
    assert found, "no sentence-like msgid in /usr/share/locale/es"
    assert not [s for s in found if re.search(r"[%{}<>_/&\\]", s) or not 3 <= len(s.split()) <= 16]


@needs("apertium")
def test_the_teacher_keeps_one_line_a_sentence_and_marked_lines_are_dropped():
    lines = ["I saw a zorbleflap yesterday.", "The black horse ran to the river.", "Hello.", "My house is big."]
    taught = everyday.teach(lines * 50)
    assert len(taught) == 200
    assert taught[0] is None                                       # *zorbleflap: the teacher did not know it
    assert taught[1:4] == ["El caballo negro corrió al río.", "Hola.", "Mi casa es grande."]
    assert taught[4:8] == taught[:4]                               # still aligned 50 sentences on


def test_the_dev_set_is_written_by_hand_and_kept_out_of_the_templates():
    dev = everyday.dev_pairs()
    assert len(dev) >= 50 and len({p.en for p in dev}) == len(dev)
    assert all(p.es and p.es[-1] in ".?!" and (p.es[0] != "¿" or p.es.endswith("?")) for p in dev)
    assert not {"fué", "á"} & {w for p in dev for w in p.es.split()}          # today's orthography, not 1909's


@needs("hunspell")
def test_the_spelling_check_accepts_the_hand_written_spanish_and_rejects_invented_words():
    assert spelled_share([p.es for p in everyday.dev_pairs()]) > 0.97
    assert spelled_share(["¿Dónde está el escolino?"]) == pytest.approx(3 / 4)
    assert spelled_share(["Y fué á la ciudad"]) == pytest.approx(3 / 5)         # 1909's spelling is not today's
    assert spelled_share([""]) == 1.0


def test_todays_spanish_round_trips_through_the_1909_target_tokenizer(tmp_path):
    """The target BPE was learned on 1909 Spanish, but byte-level: modern words are spelled in more pieces."""
    target = Tokenizer.load(everyday.Path(__file__).parents[1] / "checkpoints" / "translator", "target")
    for text in ("café", "¿Dónde está la estación?", "El niño come piña.", "¡Hola!", "Por favor, ¿qué hora es?"):
        assert target.decode(target.encode(text)) == text
