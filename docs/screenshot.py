"""Remake docs/app.png, the README's picture of the app: `python docs/screenshot.py`.

Starts `python app.py` on a free port, opens it in Debian's Chromium (Playwright, never
`playwright install`), waits for the Attention tab's figures, saves the first screen, and stops the app.
The page is laid out for a 1920x1200 screen and drawn at 2/3 scale, a 1280x800 PNG: at 1280 px wide the
first screen holds the prompt and controls and no figure. Takes about half a minute, so it is not part
of the test suite.
"""
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/lib/chromium/chromium"
VIEW = "?tab=attention&layer=3&head=2&prompt=To+be,+or+not+to+be:+that+is+the+question.+To+be,+or+not+to+be"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, app: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if app.poll() is not None:
            raise SystemExit(f"app.py exited with {app.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"app.py did not answer at {url} within {seconds:.0f} s")


def main(out: Path = ROOT / "docs" / "app.png") -> None:
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_SERVER_PORT": str(port)}
    app = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_until_up(url, app)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
            page = browser.new_page(viewport={"width": 1920, "height": 1200}, device_scale_factor=2 / 3)
            page.goto(url + VIEW, wait_until="domcontentloaded", timeout=60_000)
            page.locator("#attn-plot .gtitle").first.wait_for(timeout=60_000)
            page.wait_for_function("() => !document.querySelector('.eta-bar')", timeout=60_000)
            page.screenshot(path=str(out))
            browser.close()
    finally:
        app.terminate()
        app.wait(timeout=30)
    print(f"{out}: {out.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
