"""Every "§N" reference names a numbered section that exists: in README.md and docs/*.md, and the
``docs/PAGE.md §N`` references of the code's docstrings and comments.

A section exists when the page has a heading numbered so (``## 8.7 Speed …``, ``## 1. Opening it``). Which
page a reference means, in the pages:

* the page a link goes to, for ``[§8.6](backends.md#…)`` or ``[backends.md §8.6](…)``;
* the page named just before it, for ``backends.md §8``, ``[explorer.md](explorer.md) §2`` or
  ``docs/tasks.md §1``, and for the references chained after it (``tasks.md §2.2, §4.3 and §5–6``);
* otherwise, a bare ``§2.2``: the page it is on, or a page named earlier in the same paragraph (``the
  protocol of [interventions.md](interventions.md) is ours (§9 there)``).

A paragraph (lines up to a blank line; each table row apart) is read as one line, so that a link whose text
is wrapped (``[metrics.md\n§8.1](…)``) is read whole; a broken reference is reported at its first line.

In code only references with a page (``docs/explorer.md §2``, ``explorer.md §2``) are read: a bare ``§5.4``
there cites ``SALT_FACTS`` or the paper. Links written as ``(page.md#anchor)`` are checked by
tests/test_docs_timings.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.docs_pages import docs_pages

REPO = Path(__file__).resolve().parents[1]
CODE = ("src", "bench", "scripts", "workflow_scripts", "rules", "tests", "examples", "Snakefile", "config")
"""Where the code's references are looked for."""
SUFFIXES = {".py", ".smk", ".yaml", ".md", ".toml"}

_HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s")
_NUMBER = r"\d+(?:\.\d+)*"
_REF = re.compile(rf"§\s?(?P<a>{_NUMBER})(?:\s?[–-]\s?(?P<b>{_NUMBER})?)?")
_PAGE = re.compile(r"(?:docs/)?(?P<page>[\w-]+\.md)\b")
_PAGE_BEFORE = re.compile(r"(?:docs/)?(?P<page>[\w-]+\.md)(?:\]\([^)]*\))?\s*$")
_CHAIN = re.compile(r"[\s,;]*(?:and|or|to)?[\s,;]*")
_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]*)\)")
_CODE_REF = re.compile(rf"(?:docs/)?(?P<page>[\w-]+\.md),?\s+§\s?{_NUMBER}")


def sections(text: str) -> set[str]:
    """The numbers of a page's numbered headings, fenced code left out."""
    return {m.group(1) for line in _prose_lines(text) if (m := _HEADING.match(line))}


def _prose_lines(text: str) -> list[str]:
    """The page's lines, those of fenced code blocks blanked."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return out


def paragraphs(text: str) -> list[tuple[int, str]]:
    """``(first line, text)`` of each paragraph of prose: lines joined up to a blank line, a heading or a
    table row, which stand alone."""
    out: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate([*_prose_lines(text), ""], start=1):
        alone = line.lstrip().startswith(("|", "#"))
        if current and (not line.strip() or alone or current[-1].lstrip().startswith(("|", "#"))):
            out.append((start, " ".join(current)))
            current = []
        if line.strip():
            start = number if not current else start
            current.append(line.strip())
    return out


def _numbers(match: re.Match[str]) -> list[str]:
    return [n for n in (match.group("a"), match.group("b")) if n]


def page_references(page: str, text: str) -> list[tuple[int, tuple[str, ...], str, str]]:
    """``(line, candidate pages, section, excerpt)`` of every "§" reference of a page (module docstring):
    one candidate when the page is named, else the page itself and those named earlier in the paragraph."""
    found = []
    for number, line in paragraphs(text):
        line = re.sub(r"(`+)(?:(?!\1).)+\1", "``", line)
        links = [(m.start("text"), m.end("text"), m.group("target")) for m in _LINK.finditer(line)]
        previous: tuple[str, ...] | None = None
        end = 0
        for match in _REF.finditer(line):
            target = next((t for s, e, t in links if s <= match.start() < e), None)
            before = _PAGE_BEFORE.search(line[: match.start()].rstrip("[( "))
            if target is not None and target.split("#")[0].endswith(".md"):
                pages: tuple[str, ...] = (Path(target.split("#")[0]).name,)
            elif before is not None:
                pages = (before.group("page"),)
            elif previous is not None and _CHAIN.fullmatch(line[end : match.start()]):
                pages = previous
            else:
                named = [m.group("page") for m in _PAGE.finditer(line[: match.start()])]
                pages = tuple(dict.fromkeys((page, *named)))
            previous, end = pages, match.end()
            excerpt = line[max(0, match.start() - 40) : match.end()]
            found += [(number, pages, n, excerpt) for n in _numbers(match)]
    return found


def code_references(text: str) -> list[tuple[int, str, str]]:
    """``(line, page, section)`` of every ``docs/PAGE.md §N`` (and the references chained after it)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _CODE_REF.finditer(line):
            rest = line[match.start() :]
            end = 0
            for ref in _REF.finditer(rest):
                if end and not _CHAIN.fullmatch(rest[end : ref.start()]):
                    break
                found += [(number, match.group("page"), n) for n in _numbers(ref)]
                end = ref.end()
    return found


def _code_files() -> list[Path]:
    files: list[Path] = []
    for name in CODE:
        path = REPO / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES)
    return [f for f in files if f.name != Path(__file__).name]


def test_a_reference_is_read_with_the_page_it_names() -> None:
    line = "See [tasks.md §2.2, §4.3 and §5–6](tasks.md) or [§8.7](backends.md#8); here §3, [a.md](a.md) §1"
    refs = [(pages, n) for _, pages, n, _ in page_references("p.md", line)]
    assert refs == [
        (("tasks.md",), "2.2"),
        (("tasks.md",), "4.3"),
        (("tasks.md",), "5"),
        (("tasks.md",), "6"),
        (("backends.md",), "8.7"),
        (("p.md", "tasks.md", "backends.md"), "3"),
        (("a.md",), "1"),
    ]
    assert sections("## 8.7 Speed\n```\n## 9. not a heading\n```\n### 2. Two\n") == {"8.7", "2"}
    wrapped = "## 1. A\n\nnow ([metrics.md\n§8.1](metrics.md#81)), see\n[b.md](b.md) for it (§2 there)\n"
    wrapped += "| row §3 |\n"
    assert [(n, pages, s) for n, pages, s, _ in page_references("p.md", wrapped)] == [
        (3, ("metrics.md",), "8.1"),
        (3, ("p.md", "metrics.md", "b.md"), "2"),
        (6, ("p.md",), "3"),
    ]
    assert code_references('"""... (docs/explorer.md §2.3, §4; SALT_FACTS §5.4) and metrics.md §9"""') == [
        (1, "explorer.md", "2.3"),
        (1, "explorer.md", "4"),
        (1, "metrics.md", "9"),
    ]


@pytest.mark.parametrize("page", sorted(docs_pages()))
def test_every_section_reference_of_a_page_exists(page: str) -> None:
    pages = docs_pages()
    numbered = {name: sections(text) for name, text in pages.items()}
    broken = [
        f"{page}:{line}: {' or '.join(candidates)} §{number} ({excerpt!r})"
        for line, candidates, number, excerpt in page_references(page, pages[page])
        if not any(number in numbered.get(name, set()) for name in candidates)
    ]
    assert broken == []


def test_every_section_reference_of_the_code_exists() -> None:
    numbered = {name: sections(text) for name, text in docs_pages().items()}
    broken = [
        f"{path.relative_to(REPO)}:{line}: {page} §{number}"
        for path in _code_files()
        for line, page, number in code_references(path.read_text(encoding="utf-8", errors="replace"))
        if number not in numbered.get(page, set())
    ]
    assert broken == []
