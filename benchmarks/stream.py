"""Live sampling as a lecturer sees it, measured inside a real page (Chromium driven by Playwright).

Shared by the browser tests (which assert on these figures) and `python -m benchmarks.app` (which
prints them): how many distinct text updates the page showed while 64 tokens streamed, how long
the main thread froze at worst (the longest gap between two animation frames), and how long after
Stop the page kept drawing, and whether a page with every tab opened keeps up with a stream. Needs Debian's chromium and the playwright package; never runs
`playwright install`.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update"]
WAIT_MS = 60_000                 # the first render of a cold page under load can take tens of seconds

# (tab label, tab id, elem_id of the tab's first figure, text its title shows), in the page's order
TABS = [("Tokens", "tokens", "tokens-plot", "tokens"),
        ("Positions", "positional", "pe-plot", None),                     # sinusoidal or RoPE: any title
        ("Attention", "attention", "attn-grid-plot", "All heads"),
        ("Inside a head", "inside", "head-steps-plot", "step by step"),
        ("Layer norm", "layernorm", "ln-heat-plot", "LayerNorm"),
        ("Residual stream", "residual", "res-norm-plot", "Residual stream"),
        ("Why this token?", "why", "why-components-plot", "Which parts push"),
        ("Features", "features", "features-prompt-plot", "features most active"),
        ("Sample", "sample", "bars-plot", "Next token"),
        ("Translate", "translate", "cross-plot", "attention"),
        ("Experiments", "experiments", "exp-curves-plot", None),          # any title
        ("Model", "model", "params-plot", "Parameters")]

WATCH_STREAM = """() => {
    // each change of #generated (tokens shown, when), and main-thread stalls: the longest gap
    // between two animation frames while the stream runs
    window.__updates = []; window.__longestFrameGap = 0;
    const target = document.querySelector('#generated');
    new MutationObserver(() => {
        const n = target.querySelectorAll('.token-prob').length;
        const last = window.__updates[window.__updates.length - 1];
        if (!last || last[0] !== n) window.__updates.push([n, performance.now()]);
    }).observe(target, {childList: true, subtree: true, characterData: true});
    let previous = performance.now();
    const frame = (now) => { window.__longestFrameGap = Math.max(window.__longestFrameGap, now - previous);
                             previous = now; requestAnimationFrame(frame); };
    requestAnimationFrame(frame);
}"""


def available() -> bool:
    return importlib.util.find_spec("playwright") is not None and Path(CHROMIUM).exists()


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, timeout=60_000, args=CHROMIUM_ARGS)


def server_samples(page):
    """The page's own model kept out (its script refused): the server answers Generate, as measured here."""
    page.route("**/toyviz.js", lambda route: route.abort())


def open_sample_tab(page, url: str, max_new: int):
    """The Sample tab with `max_new` tokens to generate, its first bars drawn, the watcher installed."""
    server_samples(page)
    page.goto(f"{url.rstrip('/')}/?tab=sample&max_new={max_new}", wait_until="domcontentloaded", timeout=60_000)
    page.locator("#bars-plot .gtitle").first.wait_for(timeout=WAIT_MS)
    page.evaluate(WATCH_STREAM)


def open_every_tab(page, url: str, max_new: int):
    """The page as a lecturer has it after a tour: every tab opened and its first figure drawn, then the
    Sample tab with `max_new` tokens to generate and the watcher installed. Gradio's page does more for
    each streamed update with every tab opened (see toyviz.serving.pacing, TEXT_EVERY_S)."""
    server_samples(page)
    page.goto(f"{url.rstrip('/')}/?max_new={max_new}", wait_until="domcontentloaded", timeout=60_000)
    page.locator("#attn-plot .main-svg").first.wait_for(timeout=WAIT_MS)       # the first tab: the page is up
    for label, _, plot_id, _ in TABS:
        page.get_by_role("tab", name=label, exact=True).click()
        page.locator(f"#{plot_id} .main-svg").first.wait_for(timeout=WAIT_MS)
    page.get_by_role("tab", name="Sample", exact=True).click()
    page.locator("#bars-plot .gtitle").first.wait_for(timeout=WAIT_MS)
    page.evaluate(WATCH_STREAM)


def keeping_up(page, url: str, max_new: int = 128) -> dict:
    """After a tour of every tab, generate max_new tokens and compare when the page showed them with when
    the server sent them: alone, a generation is paced at pacing.TOKENS_PER_S (the model computes a token
    in a few ms), so the token n updates after the first one left the server (n / TOKENS_PER_S) s after
    it. {updates, behind_s: how much later than that the page showed the last tokens}. A page that cannot
    draw updates as fast as they come falls further behind with every one."""
    from toyviz.serving.pacing import TOKENS_PER_S
    open_every_tab(page, url, max_new)
    page.locator("#generate").click()
    page.locator("#generated .token-prob").nth(max_new - 1).wait_for(state="attached", timeout=120_000)
    updates = page.evaluate("window.__updates.filter(([n]) => n > 0)")
    (first, shown_first), (last, shown_last) = updates[0], updates[-1]
    return {"updates": len(updates),
            "behind_s": round((shown_last - shown_first) / 1000 - (last - first) / TOKENS_PER_S, 2)}


def stream(page, url: str, max_new: int = 64) -> dict:
    """Generate max_new tokens and report what the page showed: {updates, seconds, updates_per_s,
    longest_stall_ms} (seconds from the first visible update to the last)."""
    open_sample_tab(page, url, max_new)
    page.locator("#generate").click()
    page.locator("#generated .token-prob").nth(max_new - 1).wait_for(state="attached", timeout=60_000)
    updates, stall = page.evaluate("[window.__updates, window.__longestFrameGap]")
    seconds = (updates[-1][1] - updates[0][1]) / 1000
    return {"updates": len(updates), "seconds": round(seconds, 2),
            "updates_per_s": round(len(updates) / max(seconds, 1e-3), 1), "longest_stall_ms": round(stall)}


def stop(page, url: str, max_new: int = 256, settle_ms: int = 3000) -> dict:
    """Start a long generation, press Stop after 10 tokens: {after_stop_s: from Stop to the page's last
    update (negative when the page had shown everything before Stop), tokens_shown: how many tokens
    were out then}."""
    open_sample_tab(page, url, max_new)
    # the page itself presses Stop when the 10th token shows: pressed from here, after a wait_for and an
    # evaluate, it came 0.3-1.5 s (10-50 tokens) later, and how far the page had fallen behind by then
    # varied with it
    page.evaluate("""() => { const target = document.querySelector('#generated');
        new MutationObserver((_, observer) => {
            if (target.querySelectorAll('.token-prob').length < 10) return;
            observer.disconnect(); window.__stopped = performance.now(); document.querySelector('#stop').click();
        }).observe(target, {childList: true, subtree: true, characterData: true}); }""")
    page.locator("#generate").click()
    page.wait_for_function("() => window.__stopped !== undefined", timeout=60_000)
    page.wait_for_timeout(settle_ms)
    updates, stopped = page.evaluate("[window.__updates, window.__stopped]")
    return {"after_stop_s": round((updates[-1][1] - stopped) / 1000, 2), "tokens_shown": updates[-1][0]}


def measure(url: str, max_new: int = 64) -> dict:
    """Both measurements in a fresh headless Chromium at 1280×900."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            figures = stream(page, url, max_new)
            figures.update(stop(page, url))
            figures["after_every_tab"] = keeping_up(browser.new_page(viewport={"width": 1280, "height": 900}), url)
            return figures
        finally:
            browser.close()
