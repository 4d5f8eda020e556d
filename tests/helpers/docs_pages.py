"""The documentation's pages as text, for the tests that read them (timings, section references)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def docs_pages() -> dict[str, str]:
    """README.md and every docs/*.md page, by file name."""
    pages = {"README.md": (REPO / "README.md").read_text(encoding="utf-8")}
    for path in sorted((REPO / "docs").glob("*.md")):
        pages[path.name] = path.read_text(encoding="utf-8")
    return pages
