"""Static files served as static files (issue #41): toyviz.serving.static in front of a small Gradio page,
checked over HTTP as a browser asks — hashed assets immutable, validators answered 304, the page rendered
once and sent compressed, our own files at addresses that name their content."""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import gradio as gr
import httpx
import pytest
from starlette.middleware import Middleware

from toyviz.serving.server import keep_connections_open
from toyviz.serving.static import IMMUTABLE, REVALIDATE, Shelf, StaticFiles

BR = {"Accept-Encoding": "gzip, deflate, br"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A small page behind the middleware; its shelf holds one file of ours. → (url, shelf, that file's address)"""
    folder = tmp_path_factory.mktemp("files")
    (folder / "model.txt").write_text("weights " * 200)
    shelf = Shelf()
    address = shelf.add(folder / "model.txt")
    keep_connections_open()                  # as prepare_server does before the app launches
    with gr.Blocks(title="static files") as demo:
        gr.Markdown("# a page " + "with words " * 50)
        gr.Button("press")
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                            app_kwargs={"middleware": [Middleware(StaticFiles, shelf=shelf)]})
    yield url, shelf, address
    demo.close()


def an_asset(url: str) -> str:
    """The first /assets/ script the page names (Gradio's entry point: a Vite-hashed name)."""
    page = httpx.get(url).text
    start = page.index("assets/index-")
    return url + page[start:page.index('"', start)]


def test_a_hashed_asset_is_immutable_compressed_once_and_answered_304_to_its_validator(served):
    url, shelf, _ = served
    asset = an_asset(url)
    first = httpx.get(asset, headers=BR)
    assert first.status_code == 200 and first.headers["cache-control"] == IMMUTABLE
    assert first.headers["content-encoding"] == "br" and first.headers["vary"] == "Accept-Encoding"
    raw = httpx.get(asset, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in raw.headers and first.content == raw.content     # httpx unpacks br
    assert int(first.headers["content-length"]) < len(raw.content) / 2
    again = httpx.get(asset, headers={**BR, "If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert httpx.get(asset, headers={"If-None-Match": '"another"'}).status_code == 200
    kept = next(k for k in shelf.kept.values() if k.body == raw.content)
    assert set(kept.encoded) == {"br"}             # kept compressed: one brotli body, made once


def test_a_file_that_is_not_hashed_is_revalidated_with_a_304(served):
    url, _, _ = served
    font = url + "static/fonts/IBMPlexMono/IBMPlexMono-Regular.woff2"
    first = httpx.get(font, headers=BR)
    assert first.status_code == 200 and first.headers["cache-control"] == REVALIDATE
    assert "content-encoding" not in first.headers                     # woff2 is compressed already
    assert httpx.get(font, headers={"If-None-Match": first.headers["etag"]}).status_code == 304


def test_the_page_is_rendered_once_sent_compressed_and_answered_304(served, monkeypatch):
    url, shelf, _ = served
    plain = httpx.get(url, headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and "window.gradio_config" in plain.text
    page = httpx.get(url, headers=BR)
    assert page.headers["content-encoding"] == "br" and page.content == plain.content
    assert int(page.headers["content-length"]) < len(plain.content) / 2
    assert page.headers["cache-control"] == REVALIDATE
    assert httpx.get(url, headers={"If-None-Match": page.headers["etag"]}).status_code == 304
    assert httpx.head(url, headers=BR).content == b""
    rendered = len(shelf.pages)
    httpx.get(url + "?tab=sample&prompt=hello")                         # the app's own query: the same page
    assert len(shelf.pages) == rendered
    assert httpx.get(url.replace("127.0.0.1", "localhost")).status_code == 200     # another address: its own
    assert len(shelf.pages) == rendered + 1


def test_a_page_that_gradio_does_not_answer_200_is_not_kept(served):
    url, shelf, _ = served
    deep = httpx.get(url + "?deep_link=nonsense")            # Gradio renders a deep link itself, every time
    assert deep.status_code == 200 and "etag" not in deep.headers
    assert all(b"deep_link" not in key[1] for key in shelf.pages)


def test_our_own_files_live_at_an_address_named_by_their_content(served, tmp_path):
    url, shelf, address = served
    assert address.startswith("toyviz/files/") and address.endswith("/model.txt")
    got = httpx.get(url + address, headers=BR)
    assert got.status_code == 200 and got.headers["cache-control"] == IMMUTABLE
    assert got.headers["content-encoding"] == "br" and got.content == b"weights " * 200
    assert httpx.get(url + address.replace("/model.txt", "/other.txt")).status_code == 404
    # nothing outside the folders: "%2e%2e" reaches the server as "..", where a literal "/../" is normalised
    # away by the client before it is sent
    escape = httpx.get(url + "assets/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd")
    assert escape.status_code in (403, 404) and b"root:" not in escape.content     # (Gradio refuses it: 403)
    assert shelf.file("/assets/../../../../../../etc/passwd") is None
    changed = tmp_path / "model.txt"
    changed.write_text("other weights")
    assert shelf.add(changed) != address                  # other content, another address: a browser never mixes them


def test_warming_compresses_our_own_files_before_anyone_asks(tmp_path):
    (tmp_path / "weights.safetensors").write_bytes(b"\x00\x01" * 5000)
    (tmp_path / "packed.gz").write_bytes(b"already packed")
    shelf = Shelf(folders={})
    shelf.add(tmp_path / "weights.safetensors")
    shelf.add(tmp_path / "packed.gz")
    shelf.warm()
    (kept,) = shelf.kept.values()
    assert set(kept.encoded) == {"br"} and kept.cache_control == IMMUTABLE and kept.body == b"\x00\x01" * 5000


def test_a_connection_idle_past_uvicorns_five_seconds_still_serves_the_next_request(served):
    import socket
    import time
    from urllib.parse import urlsplit
    from toyviz.serving.server import KEEP_ALIVE_S
    url, _, _ = served
    address = urlsplit(url)
    assert KEEP_ALIVE_S > 30
    with socket.create_connection((address.hostname, address.port)) as conn:
        ask = f"HEAD / HTTP/1.1\r\nHost: {address.netloc}\r\n\r\n".encode()      # headers only: one recv
        conn.sendall(ask)
        assert conn.recv(65536).startswith(b"HTTP/1.1 200")
        time.sleep(6)
        conn.sendall(ask)
        assert conn.recv(65536).startswith(b"HTTP/1.1 200")
