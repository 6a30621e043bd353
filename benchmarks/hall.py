"""A hall opening the link at once: what one page open costs the server, and N of them together, printed as
one JSON line (a benchmark: nothing here asserts; tests/test_static.py asserts on the mechanism).

    python -m benchmarks.hall [--clients 100] [--connections 6] [--events] [--quick]

The app runs as its own process (`python app.py --device cpu`, benchmarks.harness.Server). A real Chromium
(Debian's) opens the page on its first tab with an empty profile and is recorded: every GET it made (the
page, Gradio's assets, fonts, the theme; the page's own model is not among them unless the first tab needs
it) and the events it sent as it opened. Then it opens the page again in the same profile, as a returning
student's browser does, and is recorded again with the validators it sent (If-None-Match / If-Modified-Since).

Each visit is then replayed by --clients clients at once (asyncio + httpx in this process, --connections
keep-alive connections each, as a browser opens six; `Accept-Encoding: gzip, deflate, br`; every byte read).
A request that fails at the transport (a reset, a refused connection) is retried once, as a browser does,
and counted in `failed_requests` / `retried_requests`; an HTTP status other than 200/304 is failed too.

- first_visit / second_visit: {requests, kb_sent (as sent, compressed), files (first visit: the GETs by kind)}
  of the recorded page; server_ms_per_page: the server's CPU (user + system, /proc) over the storm ÷ clients;
  storm: {clients, p50_s, p95_s (each client's page complete), failed_requests, retried_requests, statuses}
- with --events, each client also sends the recorded events (queue joins) in a fresh session and waits until
  the queue says each completed: the page open as the server sees it, tab drawing included
  (events_server_ms_per_page, events_p95_s)
- targets (issue 41): server ms ≤ 60 per first-visit page, p95 ≤ 6 s for 100 together, 0 failed, ≤ 60 KB a
  second visit
--quick: 10 clients.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import time

from benchmarks.harness import Server, fetch_files, spread, targets
from benchmarks.replay import NOT_FILES
from benchmarks.stream import CHROMIUM, CHROMIUM_ARGS

VALIDATORS = ("if-none-match", "if-modified-since")


def record_visits(url: str, settle_s: float = 6.0) -> dict:
    """A real Chromium's first and second visit of `url`, read off the DevTools protocol so that only what went
    to the network counts (not what the browser answered from its cache): {first, second: [{url, headers (the
    validators it sent), status, bytes (as received, headers included)}], events: [(url, body)], stream}."""
    from playwright.sync_api import sync_playwright
    visits, events = {}, []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        for name in ("first", "second"):
            page = context.new_page()
            cdp = context.new_cdp_session(page)
            sent, extra, answered, finished = {}, {}, {}, {}
            cdp.on("Network.requestWillBeSent", lambda e: sent.__setitem__(e["requestId"], e["request"]))
            cdp.on("Network.requestWillBeSentExtraInfo", lambda e: extra.__setitem__(e["requestId"], e["headers"]))
            cdp.on("Network.responseReceivedExtraInfo", lambda e: answered.__setitem__(e["requestId"], e["statusCode"]))
            cdp.on("Network.loadingFinished", lambda e: finished.__setitem__(e["requestId"], e["encodedDataLength"]))
            cdp.send("Network.enable")
            page.goto(url, wait_until="load", timeout=180_000)
            page.locator(".js-plotly-plot").first.wait_for(timeout=180_000)      # the first tab's figure drawn
            page.wait_for_timeout(settle_s * 1000)                               # what the page fetches after
            if name == "first":
                events = [(r["url"], json.loads(r["postData"])) for r in sent.values()
                          if "/queue/join" in r["url"] and r.get("postData")]
            visits[name] = [{"url": r["url"], "status": answered[i], "bytes": finished.get(i, 0),
                             "headers": {k: v for k, v in extra.get(i, {}).items() if k.lower() in VALIDATORS}}
                            for i, r in sent.items()
                            if i in answered and r["method"] == "GET" and r["url"].startswith("http")
                            and not any(part in r["url"] for part in NOT_FILES)]
            page.close()
        browser.close()
    stream = events[0][0].split("/queue/join")[0] + "/queue/data" if events else None
    return {**visits, "events": events, "stream": stream}


async def page_events(url: str, events: list, stream: str) -> float:
    """The events a page sends as it opens, in a fresh session, waited for until the queue says each
    completed; → seconds."""
    import httpx
    start, session, pending = time.monotonic(), f"hall{random.getrandbits(40):x}", set()
    async with httpx.AsyncClient(timeout=300) as http:
        for join, body in events:
            pending.add((await http.post(join, json={**body, "session_hash": session})).json()["event_id"])
        async with http.stream("GET", stream, params={"session_hash": session}) as response:
            async for line in response.aiter_lines():
                message = json.loads(line[5:]) if line.startswith("data:") else {}
                if message.get("msg") == "process_completed":
                    pending.discard(message.get("event_id"))
                    if not pending:
                        break
    return time.monotonic() - start


async def storm(url: str, files: list[dict], clients: int, connections: int, events: list = (),
                stream=None) -> dict:
    counts = collections.Counter()

    async def client():
        seconds = await fetch_files(files, connections, counts)
        return seconds + (await page_events(url, events, stream) if events else 0)
    seconds = await asyncio.gather(*(client() for _ in range(clients)))
    return {"clients": clients, **{k: v for k, v in spread(seconds).items() if k != "count"},
            "failed_requests": counts.pop("failed", 0), "retried_requests": counts.pop("retried", 0),
            "statuses": dict(counts)}


def measured_storm(server: Server, files, clients, connections, events=(), stream=None) -> tuple[dict, float]:
    before = server.cpu_s()
    result = asyncio.run(storm(server.url, files, clients, connections, events, stream))
    return result, round((server.cpu_s() - before) * 1000 / clients, 1)


def kinds(files: list[dict]) -> dict:
    kind = lambda u: ("page" if u.rstrip("/").count("/") == 2 else u.split("/")[3].split("?")[0].split("=")[0])
    return dict(collections.Counter(kind(f["url"]) for f in files))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=None)
    parser.add_argument("--connections", type=int, default=6)
    parser.add_argument("--events", action="store_true", help="also replay the page's events (queue joins)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    clients = args.clients or (10 if args.quick else 100)
    with Server() as server:
        visits = record_visits(server.url)
        first, second = visits["first"], visits["second"]
        fresh = [{**f, "headers": {}} for f in first]
        first_storm, first_ms = measured_storm(server, fresh, clients, args.connections)
        second_storm, second_ms = measured_storm(server, second, clients, args.connections)
        figures = {
            "first_visit": {"requests": len(first), "kb_sent": round(sum(f["bytes"] for f in first) / 1e3, 1),
                            "files": kinds(first)},
            "second_visit": {"requests": len(second), "kb_sent": round(sum(f["bytes"] for f in second) / 1e3, 1),
                             "statuses": dict(collections.Counter(f["status"] for f in second))},
            "first_storm": {**first_storm, "server_ms_per_page": first_ms},
            "second_storm": {**second_storm, "server_ms_per_page": second_ms},
        }
        if args.events:
            with_events, events_ms = measured_storm(server, fresh, clients, args.connections, visits["events"],
                                                    visits["stream"])
            figures["events_storm"] = {**with_events, "server_ms_per_page": events_ms,
                                       "events_per_page": len(visits["events"])}
    flat = {"server_ms_per_page": figures["first_storm"]["server_ms_per_page"],
            "p95_s": figures["first_storm"]["p95_s"],
            "failed_requests": figures["first_storm"]["failed_requests"] + figures["second_storm"]["failed_requests"],
            "second_visit_kb": figures["second_visit"]["kb_sent"]}
    limits = {"server_ms_per_page": 60, "failed_requests": 0, "second_visit_kb": 60}
    if clients >= 100:
        limits["p95_s"] = 6
    print(json.dumps({**figures, "targets": targets(flat, limits, exact=("failed_requests",))}))


if __name__ == "__main__":
    main()
