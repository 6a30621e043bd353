"""A tab's figures as one offline HTML page (the Export view button)."""
from __future__ import annotations

from toyviz.app.figures import standalone_html
from toyviz.serving.files import EXPORTS


def export_page(tab: str, outputs) -> str:
    """A tab's figures (from its renderer's outputs) as one offline HTML page → the file's path."""
    figures = [o for o in outputs if hasattr(o, "to_html")]
    return EXPORTS.write(f"toyviz-{tab}.html", standalone_html(figures, f"toyviz — {tab}"))
