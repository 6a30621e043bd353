from urllib.parse import parse_qsl

import pytest

from toyviz import links


def round_trip(state):
    query = links.build(state)
    assert query.startswith("?")
    return links.parse(dict(parse_qsl(query[1:])))


@pytest.mark.parametrize("tab", links.TABS)
def test_every_tab_and_control_round_trips(tab):
    state = dict(links.DEFAULTS, tab=tab, prompt="ROMEO: 🤖 café & co?=", layer=3, head=2, mode="scores", query=5,
                 temperature=1.25, top_k=7, top_p=0.5, seed=42, max_new=12, text="The Lord is my shepherd.",
                 beam=3, snapshot=1, projector=True)
    assert round_trip(state) == state


def test_defaults_make_short_links():
    assert links.build(dict(links.DEFAULTS)) == "?tab=attention"


def test_junk_falls_back_to_defaults_and_unknown_keys_are_ignored():
    state = links.parse({"tab": "nope", "layer": "x", "temperature": "nan", "mode": "<script>", "evil": "1",
                         "top_p": "0.3"})
    expected = dict(links.DEFAULTS, top_p=0.3)
    assert state == expected


def test_a_link_cannot_carry_a_novel():
    assert len(links.parse({"prompt": "a" * 10_000})["prompt"]) == 2000
