"""Cold start, printed as one JSON line per run (a benchmark: nothing here asserts).

    python -m benchmarks.cold_start [--runs 3] [--command "toyviz serve --device cpu"]

For each run the app is started as its own process on a free loopback port (default: `python app.py --device
cpu`, what the Space runs; `--command` for another, e.g. the installed `toyviz serve`) and timed from the
command to:
- page_s: the first 200 on `/` (the page a visitor opens);
- first_figure_s: the first answer of the Attention tab (the page's first tab) for the page's first values,
  asked as soon as the page answered, through its HTTP endpoint, as a class opening the link would;
- warm_s: the log line saying every worker has drawn every tab once (the warm-up after serving);
- page_cpu_s: the CPU seconds the server's own process had used when `/` first answered, and load_1m: the
  machine's load average as the run began (a shared machine stretches the seconds above; these say by how much).
Issue 54's goal on 2 cores: page_s ≤ 10 s (before: 17.6–26.5 s, the workers drew every tab first).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARM_LINE = "every tab drawn once"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(command: list[str], root: Path = ROOT, timeout: float = 240.0) -> dict:
    import gradio_client                      # imported before the clock starts: it is the visitor's, not the app's
    from toyviz.settings.controls import DEFAULTS
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    env = dict(os.environ, GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    log = Path(tempfile.mkstemp(prefix="toyviz-cold-", suffix=".log")[1])
    result = {"load_1m": os.getloadavg()[0]}
    start = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = start + timeout
        while "page_s" not in result:
            if proc.poll() is not None or time.perf_counter() > deadline:
                raise RuntimeError(f"{shlex.join(command)} did not serve:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        result["page_s"] = round(time.perf_counter() - start, 2)
                        result["page_cpu_s"] = round(cpu_seconds(proc.pid), 2)
            except OSError:
                time.sleep(0.1)
        client = gradio_client.Client(url, verbose=False, analytics_enabled=False)
        d = DEFAULTS
        client.predict(d["prompt"], d["layer"], d["head"], d["mode"], [], d["projector"], api_name="/attention")
        result["first_figure_s"] = round(time.perf_counter() - start, 2)
        while WARM_LINE not in log.read_text() and time.perf_counter() < deadline and proc.poll() is None:
            time.sleep(0.1)
        if WARM_LINE in log.read_text():
            result["warm_s"] = round(time.perf_counter() - start, 2)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.unlink(missing_ok=True)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--command", default=f"{shlex.quote(sys.executable)} app.py --device cpu",
                        help="what starts the server (run in --root)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the checkout it runs in (e.g. a git worktree of the code before a change)")
    args = parser.parse_args(argv)
    runs = []
    for n in range(args.runs):
        runs.append(measure(shlex.split(args.command), args.root))
        print(json.dumps({"run": n + 1, **runs[-1]}), flush=True)
    summary = {key: [r[key] for r in runs if key in r]
               for key in ("page_s", "first_figure_s", "warm_s", "page_cpu_s", "load_1m")}
    print(json.dumps({"command": args.command, "cpus": os.cpu_count(), **summary}))


if __name__ == "__main__":
    main()
