"""Static files served as static files, at the mechanism: one ASGI middleware in front of Gradio.

A hall opening the link at once is ~90 GETs a page, nearly all of them files that never change while the
server runs. Gradio answers them through its routes: every asset compressed again (brotli) for every
request, no Cache-Control, a validator that is never answered with 304, and the page's HTML (the config
of every component) built again and sent uncompressed. Here each such response is made once, kept with
its compressed forms, and answered from memory:

- Gradio's frontend (`/assets/…`, Vite's content-hashed names) is `immutable` for a year: a second visit
  asks for none of it;
- every other file carries a strong ETag, and a request that names it gets `304 Not Modified`;
- the page (`/`) and its theme (`/theme.css`) are rendered by Gradio once per address the page is
  reached by, then kept like a file (`no-cache`: the browser asks again and gets 304). A kept page is served
  to every visitor of that address, so it is rendered from what its key holds and nothing else: the Host
  header and, behind a trusted proxy, the X-Forwarded-Host/-Proto it wrote (toyviz.serving.proxy); never a
  visitor's own X-Gradio-Server or cookies. At most ADDRESSES_KEPT addresses are kept, the first
  PINNED_ADDRESSES ever served never evicted by invented ones; a render that failed is never kept;
- files registered by name (`Shelf.add`: the page script and the browser model's files) are served at an
  address holding their content's hash, so they too are immutable;
- compressed once per file (brotli, gzip), on first request, never again.
"""
from __future__ import annotations

import asyncio
import gzip
import hashlib
import mimetypes
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import brotli                    # Gradio's own dependency (its per-request middleware uses it)

from toyviz.serving.proxy import public_headers, trusted_hops

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"                             # kept, but asked again each time: 304 when unchanged
HASHED_NAME = re.compile(r"-[A-Za-z0-9_-]{8,}\.[A-Za-z0-9]+$")     # Vite's `Blocks-D1GWYZdr.js`
COMPRESSIBLE = {".js", ".mjs", ".css", ".html", ".json", ".svg", ".txt", ".map", ".tiktoken", ".safetensors",
                ".onnx"}
BROTLI_QUALITY = 9               # 11 is ~10 % smaller and 15× slower (22 s for a page's 5.5 MB of assets here)
RENDERED = ("/", "/theme.css")   # Gradio builds these per request; they do not change while it runs
NOT_KEPT_QUERY = ("deep_link", "page")      # a page those change: rendered by Gradio every time, as before
ADDRESSES_KEPT = 32              # pages rendered for this many addresses (Host, proxy headers) at most
# the first addresses served (the lecturer's localhost and LAN address, a Space's own name) stay kept: a visitor
# inventing Host values evicts only other invented ones (which would cost a render, never a wrong page)
PINNED_ADDRESSES = 4


@dataclass
class Kept:
    """One response made once: its bytes, type, validator, caching rule, and its compressed forms."""
    body: bytes
    media_type: str
    cache_control: str
    compress: bool
    etag: str = ""
    encoded: dict = field(default_factory=dict)        # "br" / "gzip" → bytes, made on first request
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self):
        self.etag = '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'

    def encoding_for(self, accepted: str) -> str | None:
        """The coding to send to a client whose Accept-Encoding is `accepted` (None: as it is)."""
        if not self.compress or len(self.body) < 400:
            return None
        codings = {part.split(";")[0].strip() for part in accepted.split(",")}
        return next((c for c in ("br", "gzip") if c in codings), None)

    def encode(self, coding: str) -> bytes:
        with self.lock:                  # a hall asking for the same file at once compresses it once
            if coding in self.encoded:
                return self.encoded[coding]
            self.encoded[coding] = (brotli.compress(self.body, quality=BROTLI_QUALITY) if coding == "br"
                                    else gzip.compress(self.body, compresslevel=9, mtime=0))
        return self.encoded[coding]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def media_type(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


class Shelf:
    """What the middleware answers from memory: folders served under a prefix (Gradio's frontend), files
    registered by content (`add`), and the responses Gradio renders once (`RENDERED`)."""

    def __init__(self, folders: dict[str, Path] | None = None):
        self.folders = {prefix: Path(folder).resolve() for prefix, folder in (folders or gradio_folders()).items()}
        self.named: dict[str, Path] = {}                     # "/toyviz/files/<sha>/<name>" → file
        self.kept: dict[tuple, Kept | asyncio.Future] = {}     # a file's Kept, or the future of its first read
        self.pages: OrderedDict[tuple, asyncio.Future] = OrderedDict()     # least recently served first
        self.pinned: set[tuple] = set()

    def add(self, path: Path, sha256: str | None = None) -> str:
        """Serve `path` at an address that holds its content's hash (so it is immutable): → that address,
        relative, so a page under a path prefix (a proxy, a Space) finds it too."""
        sha256 = sha256 or sha256_of(path)
        address = f"toyviz/files/{sha256[:16]}/{Path(path).name}"
        self.named["/" + address] = Path(path)
        return address

    def warm(self, coding: str = "br") -> None:
        """Compress the files registered by name now (the model's 8.4 MB of weights take ~1 s at brotli 9), so
        that the first student to open the Sample tab does not wait for it; run beside the server at start."""
        for path in list(self.named.values()):
            if path.suffix in COMPRESSIBLE:
                kept = Kept(path.read_bytes(), media_type(path.name), IMMUTABLE, compress=True)
                kept.encode(coding)
                self.kept.setdefault(("file", str(path)), kept)

    def file(self, path: str) -> tuple[Path, str] | None:
        """The file `path` names and its caching rule, or None when it is not one of ours."""
        if path in self.named:
            return self.named[path], IMMUTABLE
        for prefix, folder in self.folders.items():
            if path.startswith(prefix):
                target = (folder / path[len(prefix):]).resolve()
                if target.is_relative_to(folder) and target.is_file():
                    immutable = prefix == "/assets/" and HASHED_NAME.search(target.name)
                    return target, IMMUTABLE if immutable else REVALIDATE
        return None

    async def kept_file(self, path: Path, cache_control: str) -> Kept:
        """The file read once (the first requests for it wait for one read, off the event loop), then kept."""
        key = ("file", str(path))
        found = self.kept.get(key)
        if isinstance(found, Kept):
            return found
        if found is None:
            def read():
                return Kept(path.read_bytes(), media_type(path.name), cache_control, path.suffix in COMPRESSIBLE)
            found = self.kept[key] = asyncio.ensure_future(asyncio.to_thread(read))
        try:
            kept = await asyncio.shield(found)
        except Exception:
            self.kept.pop(key, None)
            raise
        self.kept[key] = kept
        return kept

    async def rendered(self, key: tuple, render, cache_control: str) -> Kept | tuple:
        """Gradio's response for `key`, rendered once (`render()` → (status, headers, body)) and kept; a
        response that is not a 200, or a render that raised, is returned (or raised) and not kept."""
        async def once():
            status, headers, body = await render()
            if status != 200:
                return status, headers, body
            kind = dict(headers).get(b"content-type", b"text/html; charset=utf-8").decode()
            return Kept(body, kind, cache_control, compress=True)
        if key not in self.pages:
            self.pages[key] = asyncio.ensure_future(once())
        self.pages.move_to_end(key)
        future = self.pages[key]
        try:
            answer = await asyncio.shield(future)
        except BaseException:
            if self.pages.get(key) is future and future.done():
                del self.pages[key]
            raise
        if not isinstance(answer, Kept):
            self.pages.pop(key, None)
        elif key in self.pages:
            self.keep(key)
        return answer

    def keep(self, key: tuple) -> None:
        """`key` served: pinned if among the first PINNED_ADDRESSES, and the least recently served unpinned
        pages dropped past ADDRESSES_KEPT."""
        if len(self.pinned) < PINNED_ADDRESSES:
            self.pinned.add(key)
        for old in [k for k in self.pages if k not in self.pinned][: max(0, len(self.pages) - ADDRESSES_KEPT)]:
            del self.pages[old]


def gradio_folders() -> dict[str, Path]:
    """Gradio's frontend build: `/assets/` (hashed by Vite) and `/static/` (fonts, iframeResizer)."""
    import gradio
    frontend = Path(gradio.__file__).parent / "templates" / "frontend"
    return {"/assets/": frontend / "assets", "/static/": frontend / "static"}


def matches(if_none_match: str, etag: str) -> bool:
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return "*" in tags or etag in tags


class StaticFiles:
    """The ASGI middleware: GET and HEAD of a shelf's files and rendered pages answered from memory; every
    other request goes on to Gradio untouched. Placed inside Gradio's own compression, which passes a
    response that already says its Content-Encoding."""

    def __init__(self, app, shelf: Shelf, hops: int | None = None):
        self.app, self.shelf = app, shelf
        self.hops = trusted_hops() if hops is None else hops      # proxies whose X-Forwarded-* headers count

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            return await self.app(scope, receive, send)
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):] or "/"
        if path in RENDERED:
            query = scope.get("query_string", b"")
            if any(f"{name}=".encode() in query for name in NOT_KEPT_QUERY):
                return await self.app(scope, receive, send)
            kept_query = query if path == "/theme.css" else b""
            address = public_headers(dict(scope["headers"]), self.hops)
            key = (path, kept_query, root, tuple(address))
            # rendered from the key alone: what a visitor's request carries beyond it cannot reach the page
            # that every later visitor of this address gets
            public = {**scope, "headers": address, "query_string": kept_query}
            versioned = path == "/theme.css" and b"v=" in query        # its address names the theme's hash
            kept = await self.shelf.rendered(key, lambda: render(self.app, public),
                                             IMMUTABLE if versioned else REVALIDATE)
            if isinstance(kept, tuple):
                return await respond_raw(send, *kept, head=scope["method"] == "HEAD")
            return await respond(scope, send, kept)
        found = self.shelf.file(path)
        if found is None:
            return await self.app(scope, receive, send)
        return await respond(scope, send, await self.shelf.kept_file(*found))


async def render(app, scope) -> tuple[int, list, bytes]:
    """Gradio's own response to a GET of this scope, collected: (status, headers, body)."""
    scope = {**scope, "method": "GET"}
    parts, start = [], {}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def collect(message):
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
    await app(scope, receive, collect)
    return start.get("status", 500), list(start.get("headers", [])), b"".join(parts)


async def respond(scope, send, kept: Kept):
    headers = dict(scope["headers"])
    common = [(b"etag", kept.etag.encode()), (b"cache-control", kept.cache_control.encode())]
    if kept.compress:
        common.append((b"vary", b"Accept-Encoding"))
    if matches(headers.get(b"if-none-match", b"").decode("latin-1"), kept.etag):
        await send({"type": "http.response.start", "status": 304, "headers": common})
        return await send({"type": "http.response.body", "body": b""})
    coding = kept.encoding_for(headers.get(b"accept-encoding", b"").decode("latin-1"))
    if coding is not None and coding not in kept.encoded:
        await asyncio.to_thread(kept.encode, coding)            # once per file: off the event loop
    body = kept.encoded[coding] if coding else kept.body
    out = common + [(b"content-type", kept.media_type.encode()), (b"content-length", str(len(body)).encode())]
    if coding:
        out.append((b"content-encoding", coding.encode()))
    await send({"type": "http.response.start", "status": 200, "headers": out})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


async def respond_raw(send, status: int, headers: list, body: bytes, head: bool = False):
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
