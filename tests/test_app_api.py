"""The app through its HTTP API (gradio_client on loopback): every endpoint, streaming, bad input."""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest

import app
from toyviz.checkpoint import CHECKPOINTS

gradio_client = pytest.importorskip("gradio_client")

ODD = "café 🤖 مرحبا \x07\x00 <|endoftext|> 漢字"


def launch(explorer):
    demo = app.build(explorer)
    demo.queue(default_concurrency_limit=4, max_size=64)
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                            show_error=True)                   # as app.main launches it
    return demo, gradio_client.Client(url, verbose=False)


@pytest.fixture(scope="module")
def shipped():
    if not (CHECKPOINTS / "gpt" / "config.json").is_file():
        pytest.skip("no shipped checkpoints (run python -m toyviz.train gpt / translator)")
    demo, client = launch(app.load_explorer("gpt", "translator", "cpu"))
    yield client
    demo.close()


def is_plot(value) -> bool:
    return isinstance(value, dict) and value.get("type") == "plotly" and value["plot"].startswith("{")


PROMPT = "To be, or not to be, that is the question"
CALLS = {
    "/tokens": (PROMPT, False),
    "/positional": (PROMPT, "cosine", False),
    "/attention": (PROMPT, 1, 2, "probs", ["0.1", "1.3"], False),
    "/inside": (PROMPT, 1, 2, -1, "dream", False),
    "/layernorm": (PROMPT, "block1.ln2", 3, False),
    "/residual": (PROMPT, -1, False),
    "/next_token": (PROMPT, 0.8, 50, 0.95, False),
    "/translate": ("The Lord is my shepherd.", 4, "cross", "average", "average", False),
    "/model": (PROMPT, -1, "tokens", False),
    "/size": ("gpt2-medium", 12, 12, 768, 50257, 1024, False),
}


def answers_all(client):
    for api, args in CALLS.items():
        result = client.predict(*args, api_name=api)
        plots = [r for r in result if is_plot(r)]
        assert plots, f"{api} returned no figure"


def test_every_endpoint_answers(shipped):
    answers_all(shipped)
    text = shipped.predict(*CALLS["/translate"], api_name="/translate")[1]
    assert "Señor" in text or "pastor" in text                 # a held-in sentence, real Spanish
    size = shipped.predict(*CALLS["/size"], api_name="/size")[0]
    assert "354,823,168" in size and "345M" in size


def test_generate_streams_partials(shipped):
    parts = list(shipped.submit(PROMPT, 0.8, 50, 0.95, 12, 0, False, api_name="/generate"))
    assert len(parts) > 2
    assert "generated-text" in parts[-1][1] and parts[-1][1].count("token-prob") == 12


def test_link_endpoint_writes_the_view(shipped):
    query = shipped.predict(PROMPT, 1, 2, "scores", -1, 1.3, 40, 0.9, 7, 30, "Hello", 2, -1, True, api_name="/link")
    assert query.startswith("?tab=") and "layer=1" in query and "head=2" in query and "projector=1" in query


@pytest.mark.parametrize("prompt", ["", "   \n\t "])
def test_empty_prompt_gets_a_message_and_the_app_lives_on(shipped, prompt):
    with pytest.raises(Exception, match="empty"):
        shipped.predict(prompt, False, api_name="/tokens")
    assert is_plot(shipped.predict(PROMPT, False, api_name="/tokens")[1])


def test_huge_and_odd_prompts(shipped):
    note = shipped.predict("word " * 10_000, False, api_name="/tokens")[0]
    assert "cut" in note or "left out" in note
    note, *plots = shipped.predict(ODD, 0, 0, "probs", [], False, api_name="/attention")
    assert "NUL" in note and all(is_plot(p) for p in plots if isinstance(p, dict))


@pytest.mark.parametrize("api,args,message", [
    ("/next_token", (PROMPT, -3.0, 50, 0.9, False), "less than minimum"),
    ("/next_token", (PROMPT, 0.8, 10**9, 0.9, False), "greater than maximum"),
    ("/attention", (PROMPT, 99, 0, "probs", [], False), "greater than maximum"),
    ("/attention", (PROMPT, 0, -5, "probs", [], False), "less than minimum"),
    ("/translate", ("Hello.", 1000, "cross", "average", "average", False), "greater than maximum"),
])
def test_out_of_range_values_get_a_message_naming_the_bound(shipped, api, args, message):
    with pytest.raises(Exception, match=message):
        shipped.predict(*args, api_name=api)
    assert is_plot(shipped.predict(PROMPT, False, api_name="/tokens")[1])


def test_wrong_types_get_a_message(shipped):
    with pytest.raises(Exception, match="slider"):
        shipped.predict(PROMPT, "one", 0, "probs", [], False, api_name="/attention")
    assert is_plot(shipped.predict(PROMPT, False, api_name="/tokens")[1])


def test_any_checkpoint_works_in_the_app(tiny_checkpoints):
    explorer = app.load_explorer(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu")
    demo, client = launch(explorer)
    try:
        answers_all(client)
        assert len(list(client.submit(PROMPT, 1.0, 0, 1.0, 5, 1, False, api_name="/generate"))) > 1
    finally:
        demo.close()


def test_a_folder_that_is_not_a_checkpoint_leaves_a_message(tmp_path, capsys):
    explorer = app.load_explorer(str(tmp_path), str(tmp_path), "cpu")
    assert explorer.gpt is None and "config.json is missing" in capsys.readouterr().out
    demo, client = launch(explorer)
    try:
        with pytest.raises(Exception, match="no GPT checkpoint"):
            client.predict(PROMPT, False, api_name="/tokens")
    finally:
        demo.close()


def test_experiments_endpoint_shows_results_or_says_how_to_get_them(shipped):
    from toyviz.explorer import EXPERIMENTS
    args = (PROMPT, ["baseline", "rope"], "tokens", False)
    if (EXPERIMENTS / "results.json").is_file() and (EXPERIMENTS / "no_causal_mask" / "config.json").is_file():
        result = shipped.predict(*args, api_name="/experiments")
        assert "bits/char" in result[0] and sum(is_plot(r) for r in result) == 5
    else:
        with pytest.raises(Exception, match="python -m toyviz.experiments"):
            shipped.predict(*args, api_name="/experiments")
