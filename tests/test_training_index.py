"""'Why this token?' on a fresh clone: the training text is fetched once, on a thread, and the panel says
so until the n-gram counts are here; a failed fetch says why and the app keeps serving."""
import threading
import time

import numpy as np

from toyviz import i18n
from toyviz.app import caches
from toyviz.app.explorer import Explorer
from toyviz.interpret import explain


def test_the_index_is_built_on_a_thread_and_the_panel_says_so_meanwhile(tiny_gpt, monkeypatch):
    release = threading.Event()

    def slow_fetch(gpt, fetch=True):
        assert fetch                                  # the app may fetch the text it was trained on
        release.wait(10)
        return np.arange(500, dtype=np.int32) % 97
    monkeypatch.setattr(explain, "corpus_ids", slow_fetch)
    monkeypatch.setattr(caches, "INDEX_WAIT_S", 0.1)
    explorer = Explorer(tiny_gpt, None)
    index, why = explorer.caches.training_index()
    assert index is None and "being fetched" in str(why)
    with i18n.speaking("es"):
        assert "se está descargando el texto de entrenamiento" in i18n.said(why)
    release.set()
    deadline = time.time() + 10
    while explorer.caches.training_index()[0] is None and time.time() < deadline:
        time.sleep(0.05)
    index, why = explorer.caches.training_index()
    assert index is not None and why == ""
    assert explain.occurrences(index, [5, 6]).size > 0       # the index is of the fetched ids


def test_a_failed_fetch_says_why(tiny_gpt, monkeypatch):
    def offline(gpt, fetch=True):
        raise OSError("no network")
    monkeypatch.setattr(explain, "corpus_ids", offline)
    index, why = Explorer(tiny_gpt, None).caches.training_index()
    assert index is None and "could not be fetched" in str(why) and "no network" in str(why)
    with i18n.speaking("es"):
        assert i18n.said(why) == "no se pudo descargar el texto de entrenamiento (OSError: no network)"
