"""A hostile visitor (issue 51): each way one visitor could choose another's page, take the server's memory or
time, or pass for many people, tried as that visitor would. The page's own tests say what a friendly visitor
gets; these say what an unfriendly one cannot get."""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import gradio as gr
import httpx
import pytest
from starlette.middleware import Middleware

from toyviz.serving import proxy
from toyviz.serving.static import ADDRESSES_KEPT, PINNED_ADDRESSES, Shelf, StaticFiles


@pytest.fixture(scope="module")
def page(request):
    """A small Gradio page behind the static files' middleware, trusting `request.param` proxies (0: none).
    → (url, shelf)"""
    shelf = Shelf()
    with gr.Blocks(title="a page") as demo:
        gr.Markdown("# a page")
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                            app_kwargs={"middleware": [Middleware(StaticFiles, shelf=shelf,
                                                                  hops=getattr(request, "param", 0))]})
    yield url, shelf
    demo.close()


def root_of(page_html: str) -> str:
    """The API root a rendered page sends its requests to (Gradio's config: "root":"…")."""
    start = page_html.index('"root":"') + len('"root":"')
    return page_html[start:page_html.index('"', start)]


# ---------------------------------------------------------------- the page cache ----------------

@pytest.mark.parametrize("header", ["X-Gradio-Server", "X-Forwarded-Host"])
def test_a_first_request_naming_another_origin_does_not_choose_the_next_visitors_page(page, header):
    url, _ = page
    value = "http://evil.example:666" if header == "X-Gradio-Server" else "evil.example:666"
    for first in (httpx.get(url, headers={header: value}), httpx.get(url)):
        assert first.status_code == 200 and "evil.example" not in root_of(first.text)
    assert root_of(httpx.get(url).text).startswith(url.rstrip("/"))


def test_invented_hosts_never_evict_the_first_addresses_served(page):
    url, shelf = page
    ordinary = httpx.get(url)
    assert ordinary.status_code == 200
    for n in range(40):
        assert httpx.get(url, headers={"Host": f"invented-{n}.example"}).status_code == 200
    assert len(shelf.pages) <= ADDRESSES_KEPT and len(shelf.pinned) <= PINNED_ADDRESSES
    again = httpx.get(url, headers={"If-None-Match": ordinary.headers["etag"]})
    assert again.status_code == 304                      # still kept: not rendered again, the same page
    assert root_of(httpx.get(url).text).startswith(url.rstrip("/"))


@pytest.mark.parametrize("page", [1], indirect=True)
def test_behind_a_trusted_proxy_only_the_address_it_wrote_counts(page):
    url, _ = page
    # the visitor wrote evil.example; the proxy appended the address it was asked for
    got = httpx.get(url, headers={"X-Forwarded-Host": "evil.example, toyviz.example",
                                  "X-Forwarded-Proto": "http, https"})
    assert root_of(got.text).startswith("https://toyviz.example")
    assert "evil.example" not in got.text


def test_a_render_that_raised_is_not_kept():
    import asyncio
    shelf, calls = Shelf(folders={}), []

    async def render():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the first render fails")
        return 200, [(b"content-type", b"text/html")], b"<html>a page</html>"

    async def twice():
        with pytest.raises(RuntimeError):
            await shelf.rendered(("/", b"", "", ()), render, "no-cache")
        return await shelf.rendered(("/", b"", "", ()), render, "no-cache")
    assert asyncio.run(twice()).body == b"<html>a page</html>" and len(calls) == 2


def test_the_trusted_proxy_setting():
    assert proxy.trusted_hops({}) == 0 and proxy.trusted_hops({"SPACE_ID": "me/toyviz"}) == 1
    assert proxy.trusted_hops({"SPACE_ID": "me/toyviz", "TOYVIZ_TRUSTED_PROXIES": "0"}) == 0
    with pytest.raises(ValueError):
        proxy.trusted_hops({"TOYVIZ_TRUSTED_PROXIES": "-1"})
    forwarded = "6.6.6.6, 10.0.0.7, 10.0.0.8"          # the visitor wrote 6.6.6.6, two proxies appended theirs
    assert proxy.client_address(forwarded, "10.0.0.9", 0) == "10.0.0.9"
    assert proxy.client_address(forwarded, "10.0.0.9", 1) == "10.0.0.8"
    assert proxy.client_address(forwarded, "10.0.0.9", 2) == "10.0.0.7"
    assert proxy.client_address(None, "10.0.0.9", 1) == "10.0.0.9"
