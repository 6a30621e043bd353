"""The `toyviz` command (toyviz.cli): every subcommand listed and documented, a real job run through it, a user's
mistake one line and exit status 2; and `toyviz serve`'s quick front door (toyviz.app.serve): the page answers
before the warm-up has drawn a single tab, its tabs computed meanwhile."""
import os
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import gradio as gr
import pytest

import toyviz
from toyviz import cli

ROOT = Path(__file__).resolve().parent.parent


def run(argv, capsys) -> tuple[int, str, str]:
    """`toyviz ARGV` in this process → (exit status, stdout, stderr)."""
    with pytest.raises(SystemExit) as ended:
        cli.main(argv)
    out = capsys.readouterr()
    return ended.value.code, out.out, out.err


def test_help_lists_every_subcommand_the_design_names(capsys):
    status, out, _ = run(["--help"], capsys)
    assert status == 0
    listed = [line.split()[0] for line in out.split("subcommands:")[1].splitlines() if line.startswith("  ")]
    assert listed == list(cli.JOBS)
    assert set(listed) >= {"serve", "train", "evaluate", "experiments", "features", "transcoders", "circuits",
                           "lessons", "export", "data"}


@pytest.mark.parametrize("argv", [[name, "--help"] for name in cli.JOBS] + [["export", "web", "--help"]] +
                         [["data", corpus, "--help"] for corpus in cli.CORPORA])
def test_each_subcommand_has_a_manual(argv, capsys):
    status, out, err = run(argv, capsys)
    assert status == 0, err
    assert out.startswith(f"usage: toyviz {' '.join(argv[:-1])}"), out[:200]
    assert len(out.splitlines()) > 3 and not err


def test_a_mistake_is_one_line_and_exit_status_2(capsys, tmp_path):
    status, out, err = run(["nope"], capsys)
    assert status == 2 and "no subcommand 'nope'" in err and len(err.splitlines()) == 1
    status, out, err = run(["data", "quran"], capsys)
    assert status == 2 and err.startswith("toyviz data: error: 'quran' is none of shakespeare")
    assert "Traceback" not in err
    status, out, err = run(["lessons", "--no-such-option"], capsys)
    assert status == 2 and err.startswith("usage: toyviz lessons") and "Traceback" not in err


def test_a_real_job_runs_through_the_command(tmp_path, tiny_gpt, monkeypatch, capsys):
    """`toyviz lessons FILE`: a lesson checked on a GPT, its steps' links printed; exit status 0."""
    (tmp_path / "fine.md").write_text("---\ntitle: A test lesson\n---\n\n## Look\ntab: tokens\n\nJust look.\n",
                                      encoding="utf-8")
    monkeypatch.setattr(toyviz, "load", lambda name: tiny_gpt)
    status, out, err = run(["lessons", str(tmp_path / "fine.md")], capsys)
    assert status == 0, err
    assert "A test lesson (fine.md): 1 steps" in out and "?tab=tokens" in out


def test_the_python_m_aliases_are_the_same_jobs():
    """`python -m toyviz.train` (the model cards' form, torchrun's) and its like run the command's own job."""
    import toyviz.evaluate
    import toyviz.features
    import toyviz.train
    import toyviz.transcoders
    for alias, name in ((toyviz.train, "train"), (toyviz.evaluate, "evaluate"), (toyviz.features, "features"),
                        (toyviz.transcoders, "transcoders")):
        assert alias.main is cli.resolve(cli.JOBS[name].main)


def test_the_command_line_help_loads_no_gradio_nor_torch():
    """`toyviz --help` answers at once (~0.1 s; 4 s when it loaded torch): the subcommand's module is imported when
    it runs, and the package's API (toyviz.load and the rest) when first asked for."""
    code = ("import sys; from toyviz import cli\ntry: cli.main(['--help'])\nexcept SystemExit: pass\n"
            "print(sorted(m for m in ('gradio', 'plotly', 'torch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert "toyviz <subcommand>" in done.stdout and done.stdout.strip().splitlines()[-1] == "[]"


# ---------------------------------------------------------------- the quick front door ----------

def test_serve_answers_before_the_warm_up_has_drawn_a_tab(tiny_checkpoints, monkeypatch):
    """`toyviz serve`: the page and a tab answer while the warm-up is held before its first tab (by order of
    events, not time): the tab is computed when asked. Then the warm-up finishes."""
    import gradio_client
    from toyviz.app import serve, tabs
    held, started, launched = threading.Event(), threading.Event(), {}
    drawn = tabs.draw_every_tab

    def draw_later(explorer, values):
        started.set()
        assert held.wait(120), "the test never let the warm-up go"
        return drawn(explorer, values)

    def launch(demo, **options):
        launched["demo"] = demo
        return real_launch(demo, **{**options, "server_name": "127.0.0.1", "prevent_thread_lock": True, "quiet": True})

    real_launch = gr.Blocks.launch
    monkeypatch.setattr(tabs, "draw_every_tab", draw_later)
    monkeypatch.setattr(gr.Blocks, "launch", launch)
    serve.main(["--gpt", str(tiny_checkpoints["gpt"]), "--translator", str(tiny_checkpoints["translator"]),
                "--device", "cpu", "--workers", "0"])
    demo = launched["demo"]
    try:
        assert started.wait(120), "the warm-up did not begin once the page was served"
        with urllib.request.urlopen(demo.local_url, timeout=30) as page:
            assert page.status == 200
        client = gradio_client.Client(demo.local_url, verbose=False, analytics_enabled=False)
        note, tokens, _ = client.predict("To be, or not to be", False, api_name="/tokens")
        assert "tokens" in str(tokens) and "wrong" not in str(note).lower()
        assert not demo.ui.warmed.is_set()                   # all of that before the warm-up drew anything
        held.set()
        assert demo.ui.warmed.wait(120)
    finally:
        held.set()
        demo.close()


def test_before_a_worker_is_up_a_tab_is_computed_in_the_server(tiny_checkpoints):
    """Workers made but not started (a server starts them once it answers): the tab's renderer is computed on
    the server's own explorer, the same answer, no "busy"."""
    from toyviz.app.compute import binder, start_workers
    from toyviz.app.explorer import Explorer
    from toyviz.app.views.tokens import tokens_view
    explorer = Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu")
    workers = start_workers(2, str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu", start=False)
    try:
        assert not workers.workers and not workers.ever_up
        here = binder(explorer, workers)(tokens_view)("To be, or not to be", False, "gpt")
        assert [f.to_json() if hasattr(f, "to_json") else f for f in here] == \
            [f.to_json() if hasattr(f, "to_json") else f for f in tokens_view(explorer, "To be, or not to be", False,
                                                                               "gpt")]
    finally:
        workers.close()


def test_the_app_imports_gradio_without_writing_type_stubs(tmp_path):
    """toyviz.app, imported before Gradio, has Gradio's import skip the `.pyi` stubs it writes for every component
    class (toyviz.serving.gradio_import: half of `import gradio`'s CPU before `toyviz serve` answers); its components
    are made as before, and one defined in a module of ours writes no stub beside it."""
    (tmp_path / "made_here.py").write_text(
        "import gradio as gr\n\nclass Made(gr.Textbox):\n    EVENTS = gr.Textbox.EVENTS\n")
    script = ("import sys; import toyviz.app; import gradio as gr; import gradio.component_meta as meta\n"
              "from toyviz.serving import gradio_import\n"
              "assert meta.create_or_modify_pyi is gradio_import._no_stub\n"
              "assert not any(isinstance(f, gradio_import._SkipStubs) for f in sys.meta_path)   # gone once done\n"
              "assert gradio_import.skip_stubs()\n"
              "import made_here; made_here.Made(value='still made'); gr.Plot(); print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
    assert not (tmp_path / "made_here.pyi").exists()


def test_skipping_stubs_is_refused_once_gradio_made_its_components():
    """Gradio imported before toyviz.app (its classes made, their stubs written): skip_stubs says it came too late."""
    script = ("import gradio; from toyviz.serving.gradio_import import skip_stubs\n"
              "print(skip_stubs())\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
