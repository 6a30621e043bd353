"""Live runs (toyviz.training.live): reproducible with a seed, one at a time, stopped within a second,
the same record for a late watcher, the lesson's answer computed from the run; and their figures."""
import time

import numpy as np
import pytest

from toyviz.app.figures import live as figures
from toyviz.i18n import t
from toyviz.training import live, live_answers

SHORT = dict(steps=60, every=10, min_step_s=0.0)   # a few seconds even on a busy laptop
LONG = dict(steps=100_000, every=10)                # runs until stopped, at the lecture's pace
TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer " * 8


def wait(runs: live.LiveRuns, until, timeout: float = 120.0) -> live.Run:
    """Poll the run as a page does until `until(run)` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = runs.current()
        if until(run):
            return run
        time.sleep(0.05)
    raise AssertionError(f"the run never got there: {runs.current()}")


def finished(runs: live.LiveRuns) -> live.Run:
    run = wait(runs, lambda r: not r.running)
    assert run.state == "finished", run.error
    return run


def test_the_same_seed_gives_the_same_loss_curve():
    runs = live.LiveRuns()
    curves = []
    for seed in (3, 3, 4):
        runs.start("induction", seed=seed, **SHORT)
        run = finished(runs)
        assert [r["step"] for r in run.records] == list(range(0, 61, 10))
        curves.append(np.array([r["loss"] for r in run.records]))
    np.testing.assert_allclose(curves[0], curves[1], rtol=0, atol=1e-5)
    assert np.abs(curves[0] - curves[2]).max() > 1e-3          # another seed: another run
    assert runs.last_finished().seed == 4


def test_a_second_start_is_refused_while_one_runs_and_stop_ends_it_within_a_second():
    runs = live.LiveRuns()
    runs.start("induction", seed=0, **LONG)
    wait(runs, lambda r: len(r.records) >= 2)
    with pytest.raises(live.RunRefused, match="one run trains at a time"):
        runs.start("text", text=TEXT)
    started = time.perf_counter()
    stopped = runs.stop()
    took = time.perf_counter() - started
    print(f"Stop took {took:.3f} s")
    assert stopped.state == "stopped" and not runs.current().running
    assert took < 3.0                          # 1 s on this machine; room for a slow laptop
    assert runs.last_finished() is None        # a stopped run is not the last finished one
    runs.start("induction", seed=1, **SHORT)   # once stopped, a new run may start
    assert finished(runs).seed == 1


def test_only_its_owner_stops_a_run_the_page_that_started_it_or_the_lectures_presenter():
    runs = live.LiveRuns()
    owner, other = live.Who(page="s1@10.0.0.5"), live.Who(page="s2@10.0.0.6")
    runs.start("induction", seed=0, owner=owner, **LONG)
    wait(runs, lambda r: r.state == "running")
    with pytest.raises(live.RunRefused, match="only the page that started it can stop it; you are watching it"):
        runs.stop(by=other)
    assert runs.current().running                                 # another page's Stop ended nothing
    with pytest.raises(live.RunRefused, match="another page is training.*you are watching it"):
        runs.start("induction", owner=other)
    with pytest.raises(live.RunRefused, match="your run .* is still training: Stop it first"):
        runs.start("induction", owner=owner)
    assert runs.stop(by=owner).state == "stopped"

    # a lecture's run (toyviz.app.presenter.trained): its presenter stops it from any page, a student's page cannot
    runs.start("induction", seed=0, owner=live.Who(lecture="K7P2QX"), **LONG)
    wait(runs, lambda r: r.state == "running")
    with pytest.raises(live.RunRefused, match="the lecturer's run is training: only the lecturer can stop it"):
        runs.stop(by=other)
    assert runs.current().running
    assert runs.stop(by=live.Who(page="s3@10.0.0.7", lecture="K7P2QX")).state == "stopped"


def test_a_seed_is_a_whole_number_never_rounded():
    assert [live.whole_seed(s) for s in (0, 2.0, "7", 2**31 - 1)] == [0, 2, 7, 2**31 - 1]
    for seed in (1.5, -1, 2**31, float("nan"), float("inf"), "two", None):
        with pytest.raises(live.RunRefused, match="a whole number from 0 to 2,147,483,647"):
            live.whole_seed(seed)
    with pytest.raises(live.RunRefused, match=r"\(not 1.5\)"):
        live.LiveRuns().start("induction", seed=1.5)          # was run as seed 1 (the tab's Number rounded it to 2)


def test_a_page_opened_mid_run_sees_the_run_so_far():
    runs = live.LiveRuns()
    runs.start("induction", seed=0, **LONG)
    early = wait(runs, lambda r: len(r.records) >= 3)
    late = wait(runs, lambda r: len(r.records) >= len(early.records) + 2)
    runs.stop()
    for seen, again in zip(early.records, late.records):        # the late page sees what the early one saw
        assert (seen["step"], seen["loss"]) == (again["step"], again["loss"])
    assert [r["step"] for r in late.records] == list(range(0, 10 * len(late.records), 10))
    assert late.header["heads"] == [2, 4]


def test_the_text_recipe_samples_and_refuses_a_text_too_short():
    runs = live.LiveRuns()
    with pytest.raises(live.RunRefused, match="characters"):
        runs.start("text", text="too short")
    with pytest.raises(live.RunRefused, match="recipe must be"):
        runs.start("poetry")
    runs.start("text", seed=0, text=TEXT, steps=40, every=10, sample_chars=20)
    run = finished(runs)
    assert run.header["chars"] == len(set(TEXT))
    assert run.records[-1]["loss"] < run.records[0]["loss"]
    sample = run.records[-1]["sample"]
    assert len(sample) == 21 and set(sample) <= set(TEXT)
    assert "step 40" in figures.samples_markdown(run)


def made_up_run(scores: list[float]) -> live.Run:
    """A run whose best induction score follows `scores`, one record every 10 steps."""
    records = [{"step": 10 * i, "loss": 3.0, "early_loss": 3.4, "in_context_loss": 3.0 - 2.9 * s,
                "induction": [[0.0, 0.1], [s, s / 2]], "previous": [[s, 0.0], [0.0, 0.1]],
                "patterns": np.full((2, 2, 4, 4), s, dtype=np.float16)} for i, s in enumerate(scores)]
    return live.Run("induction", 0, {"steps": 10 * len(scores)}, state="finished",
                    header={"probe": [1, 2, 1, 2], "heads": [2, 2]}, records=records)


def test_the_lesson_answer_is_the_step_the_induction_score_crossed_the_threshold():
    run = made_up_run([0.05, 0.1, 0.2, 0.45, 0.7, 0.9, 0.95])
    assert live_answers.crossing_step(run, 0.5) == 40
    assert live_answers.crossing_step(run, 0.8) == 50
    assert live_answers.crossing_step(run, 0.99) is None
    assert live_answers.crossing_step(run, 0.5, "previous") == 40
    assert live_answers.plateau_loss(run) == pytest.approx(3.0 - 2.9 * 0.2)   # median of steps 10-30


def test_the_lesson_answer_from_a_real_run():
    runs = live.LiveRuns()
    runs.start("induction", seed=0, steps=300, every=10, min_step_s=0.0)
    run = finished(runs)
    born = live_answers.crossing_step(run, 0.5)
    assert born is not None and 0 < born < 300
    at_birth = next(r for r in run.records if r["step"] == born)
    assert max(map(max, at_birth["induction"])) >= 0.5
    assert all(max(map(max, r["induction"])) < 0.5 for r in run.records if r["step"] < born)


def test_figures_draw_the_run_at_a_step():
    run = made_up_run([0.05, 0.1, 0.2, 0.45, 0.7, 0.9, 0.95])
    loss = figures.loss_curves(run, projector=True)
    assert [d.name for d in loss.data][-1].startswith("in-context")
    assert list(loss.data[2].y) == pytest.approx([r["in_context_loss"] for r in run.records], abs=1e-6)
    assert any("step 40" in a.text for a in loss.layout.annotations)
    assert len(figures.loss_curves(run, upto=20).data[0].x) == 3
    heads = figures.head_scores(run, upto=30)
    assert len(heads.data) == 2 * 4 and heads.data[2].line.width == 3        # head 1.0 the strongest
    assert figures.induction_head(run) == (1, 0)
    pattern = figures.attention_pattern(run, upto=20)
    assert "step 20" in pattern.layout.title.text and np.nanmax(np.asarray(pattern.data[0].z)) == pytest.approx(0.2, abs=1e-3)
    assert np.isnan(np.asarray(pattern.data[0].z)[0, 1])                    # the future is masked
    empty = live.Run("induction", 0, {"steps": 10})
    assert "not recorded" in figures.loss_curves(empty).layout.annotations[0].text


def test_every_page_asking_for_the_same_record_gets_one_drawing(monkeypatch):
    from toyviz.app.views import watch               # the tab's renderer: no Gradio
    from toyviz.serving.memory import LRU

    run = made_up_run([0.05, 0.1, 0.6])
    monkeypatch.setattr(watch, "drawings", LRU(2))                   # the serving LRU, two drawings kept
    first = watch.drawn_run(run, None, False)
    assert watch.drawn_run(run, None, False) is first                # a second page: the same figures
    assert watch.drawn_run(run, 10, False) is not first              # another step is another drawing
    run.records.append(made_up_run([0.05, 0.1, 0.6, 0.9]).records[-1])
    later = watch.drawn_run(run, None, False)
    assert later is not first and "step 30" in later[2].layout.title.text    # a new record is drawn anew
    assert len(watch.drawings.items) == 2                            # bounded


def test_a_run_that_fails_says_it_is_our_fault_and_logs_why(caplog):
    runs = live.LiveRuns()
    with pytest.raises(live.RunRefused, match="seed must be"):
        runs.start("induction", seed=-1)
    runs.start("induction", seed=0, d_model=63, **SHORT)       # 63 does not split into 4 heads: the run breaks
    run = wait(runs, lambda r: not r.running)
    assert run.state == "failed" and "our side" in t(run.error) and "Traceback" not in t(run.error)
    assert any("Traceback" in r.getMessage() for r in caplog.records)
    assert runs.last_finished() is None


def test_before_any_run_the_tab_draws_the_recipes_loss_axes_and_where_its_curves_start():
    from toyviz.app.views import watch

    status, loss, heads, pattern, samples, polls, stop_shown = watch.watch_view(live.LiveRuns(), watch.LATEST, -1,
                                                                                False, "induction")
    assert not polls and not stop_shown
    assert "No run yet" in status and heads is None and pattern is None and samples == ""
    assert tuple(loss.layout.xaxis.range) == (0, live.settings_for("induction").steps)
    chance = [shape for shape in loss.layout.shapes if shape.line.dash == "dash"]
    assert len(chance) == 1 and chance[0].y0 == pytest.approx(np.log(32))          # ln(vocab): a uniform guess
    assert any("Start" in note.text for note in loss.layout.annotations)
    text = watch.watch_view(live.LiveRuns(), watch.LATEST, -1, True, "text")[1]
    assert not [shape for shape in text.layout.shapes] and "600 steps" in text.layout.title.text
    with pytest.raises(live.RunRefused, match="recipe must be"):
        figures.loss_before_a_run("nonsense")


def test_a_run_that_has_not_recorded_yet_says_so_in_its_figures():
    from toyviz.app.views import watch

    starting = live.Run("induction", 0, {"steps": 10})
    loss, heads, pattern, _ = watch.draw_run(starting, None, False)
    assert "not recorded" in loss.layout.annotations[0].text
    assert "No head scores" in heads.layout.annotations[0].text and "No attention" in pattern.layout.annotations[0].text
