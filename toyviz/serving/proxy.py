"""Who sent a request and to which address, as far as a proxy the server trusts says.

Every `X-Forwarded-*` header is a line the sender wrote: a visitor can send `X-Forwarded-For: 1.2.3.4` or
`X-Forwarded-Host: evil.example` as easily as a proxy can. They mean something only when a proxy we run
behind wrote them, and then only the entries it (the nearest one) appended. `TOYVIZ_TRUSTED_PROXIES` says how
many proxies stand in front of the server: 0 on a laptop serving a hall (the phones connect directly: every
such header is ignored), 1 on a Hugging Face Space (its one proxy: the default there, read from `SPACE_ID`), 2
behind a CDN and a load balancer. Gradio's own `X-Gradio-Server` (it builds the page's API root from it) is
never honoured: it is a client's header, and a page rendered once is served to everyone (toyviz.serving.static).
"""
from __future__ import annotations

import os

FORWARDED = (b"x-forwarded-host", b"x-forwarded-proto")     # the page's address, as a proxy reports it


def trusted_hops(environ=os.environ) -> int:
    """How many proxies in front of the server write X-Forwarded-* headers we may believe."""
    value = environ.get("TOYVIZ_TRUSTED_PROXIES", "")
    if value.strip():
        hops = int(value)
        if hops < 0:
            raise ValueError(f"TOYVIZ_TRUSTED_PROXIES must be 0 or more, not {hops}")
        return hops
    return 1 if environ.get("SPACE_ID") else 0


def entries(value: bytes | str | None) -> list[str]:
    """A comma-separated header's entries, in order ("a, b" → ["a", "b"])."""
    if value is None:
        return []
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    return [part.strip() for part in text.split(",") if part.strip()]


def client_address(forwarded_for: bytes | str | None, peer: str | None, hops: int) -> str:
    """The visitor's address: the peer's, or behind `hops` trusted proxies the entry the outermost of them
    appended to X-Forwarded-For (each proxy appends the address it was connected from; what the visitor wrote
    comes before all of them and is ignored)."""
    if hops > 0:
        forwarded = entries(forwarded_for)
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return peer or "?"


def public_headers(headers: dict, hops: int) -> list[tuple[bytes, bytes]]:
    """The headers a rendered page may depend on: Host, and behind a trusted proxy the X-Forwarded-Host and
    -Proto it wrote (the last entry: a proxy appends or replaces, and what came before it is the visitor's)."""
    kept = [(b"host", headers[b"host"])] if b"host" in headers else []
    if hops > 0:
        for name in FORWARDED:
            values = entries(headers.get(name))
            if values:
                kept.append((name, values[-1].encode("latin-1")))
    return kept
