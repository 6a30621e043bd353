"""benchmarks.soak's short mode (issue 35): a small class on `python app.py` with the shipped models, beside a
client exporting in a loop and one translating with beam 8 in a loop, for about a minute.

Asserted: no request of the class failed or timed out; each looping client was served its allowance
(toyviz.serving.limits) and refused past it, never before it and never beyond what its minutes allow, with no
other error; the server's temp folder and Gradio cache never held more than the exports' budget
(toyviz.serving.files) and a few MB besides; no traceback in the server's log. Printed, not asserted: memory,
file descriptors, threads and the class's p95 (the targets on those belong to `python -m benchmarks.soak`, not
to a test on a busy machine).
"""
import json
import math
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import pytest

from benchmarks import soak, students
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.serving import files, limits

STUDENTS, MINUTES = 4, 1.0
OTHER_FILES_MB = 10         # what the server writes besides exports (tiktoken's cache, Gradio's own)

pytestmark = [
    pytest.mark.load,
    pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(),
                       reason="checkpoints/gpt is missing: run `python -m toyviz.train gpt`"),
]


def test_a_short_soak_leaves_the_class_served_and_the_disk_bounded():
    lines = []
    figures = soak.run(STUDENTS, MINUTES, every=20, timeout=3 * students.TIMEOUT_S, print_line=lines.append)
    print(json.dumps(figures))
    assert figures["class_errors"] == 0, figures["class_error_messages"]
    # the hammers ran from the first line to the last (the end's is SETTLE_S after they stopped)
    minutes = math.ceil(json.loads(lines[-1])["minute"] + 0.05)          # minutes are printed to 0.1
    for hammer, allowance, args in (("export", limits.ALLOWANCES["export"], ()),
                                    ("translate-beam8", limits.ALLOWANCES["translate"], ("", soak.BEAM))):
        per_minute = allowance.per_minute / allowance.cost(args)        # requests the allowance lets through
        served = figures[hammer]["served"]
        # served up to its allowance, and refused past it: never early, never beyond what its minutes allow
        assert per_minute <= served <= minutes * per_minute and figures[hammer]["refused"] > 0, figures[hammer]
        assert figures[hammer]["errors"] == 0, figures[hammer]["messages"]
    assert figures["disk_mb_range"][1] <= files.BUDGET / files.MB + OTHER_FILES_MB
    assert figures["server_tracebacks"] == 0
