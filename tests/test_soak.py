"""benchmarks.soak's short mode (issue 35): a small class on `python app.py` with the shipped models, beside a
client exporting in a loop and one translating with beam 8 in a loop, for about a minute.

Asserted: no request of the class failed or timed out; the two looping clients were served and then
refused (their allowances, toyviz.serving.limits), with no other error; the server's temp folder and
Gradio cache never held more than the exports' budget (toyviz.serving.files) and a few MB besides; no
traceback in the server's log. Printed, not asserted: memory, file descriptors, threads and the class's
p95 (the targets on those belong to `python -m benchmarks.soak`, not to a test on a busy machine).
"""
import json
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import pytest

from benchmarks import load, soak
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.serving import files

STUDENTS, MINUTES = 4, 1.0
OTHER_FILES_MB = 10         # what the server writes besides exports (tiktoken's cache, Gradio's own)

pytestmark = [
    pytest.mark.load,
    pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(),
                       reason="checkpoints/gpt is missing: run `python -m toyviz.train gpt`"),
]


def test_a_short_soak_leaves_the_class_served_and_the_disk_bounded():
    figures = soak.run(STUDENTS, MINUTES, every=20, timeout=3 * load.TIMEOUT_S)
    print(json.dumps(figures))
    assert figures["class_errors"] == 0, figures["class_error_messages"]
    for hammer in ("export", "translate-beam8"):
        assert figures[hammer]["served"] > 0 and figures[hammer]["refused"] > 0, figures[hammer]
        assert figures[hammer]["errors"] == 0, figures[hammer]["messages"]
    assert figures["disk_mb_range"][1] <= files.BUDGET / files.MB + OTHER_FILES_MB
    assert figures["server_tracebacks"] == 0
