"""The student link as a QR code, an SVG the presenter's page shows beside the join code.

segno: pure Python, no dependencies, a standard-conforming encoder (a phone's camera reads its codes).
Error correction at least M (15 % of the code may be lost: a projector's glare, a head in the way; segno raises
it when the same size allows); a quiet zone of 4 modules, as the standard asks, or cameras miss the code
against a dark slide. One unit a module and no size: the page gives the SVG its size, and it stays sharp.
"""
from __future__ import annotations

import segno


def svg(url: str) -> str:
    """An <svg> element (no XML declaration: it goes inline into a page) encoding `url`, black on white."""
    return segno.make(url, error="m", micro=False).svg_inline(
        scale=1, border=4, dark="#000", light="#fff", omitsize=True, svgclass="toyviz-qr")
