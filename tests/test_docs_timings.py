"""Every measured timing in the docs is stated on one page; the others link to it (docs/performance.md).

A feature's measured numbers live in that feature's one page, and docs/performance.md is the index of them
all: it states the workflow-wide ones and links to the section of every other page that states one. Four
checks keep it so:

* no timing value is stated on two pages (README.md and docs/*.md);
* docs/performance.md links to every section that states a timing;
* the README states none (it links to docs/performance.md instead);
* every link between these pages names a page and section that exist.

What counts as a timing (``timings`` below), in prose only — fenced code blocks, inline code spans and
link targets are blanked first, since a value there is a setting (``timeout_s: 600``) or an address:

* a number followed by a time unit: ``ms``, ``s``, ``min``, ``h``, ``second(s)``, ``minute(s)``,
  ``hour(s)``, ``CPU s``; or by a rate, ``tok/s``, ``/s``, ``GB/s``, ``atoms/s``, … Thousands separators
  (``3,900 s``), ranges (``27–32 s``), compounds (``35 min 16 s``) and before → after pairs
  (``10.3 s → 6.6 s``, ``6.9 → 2.5 s``; one timing: a pair is compared as a pair) are read whole;
* compared only when it is precise enough to be a measurement: a decimal point (``41.7 s``), two or more
  significant digits (``29 s``, ``540 s``, ``3,900 s``; an integer's trailing zeros do not count), a range,
  a compound or a pair. A round figure of one significant digit (``10 s``, ``about 8 s``, ``600 s``,
  ``under 10 minutes``) is as often a setting, a bound or a rough size, so it is not compared; an adjective
  such as ``10-minute bound`` or ``2-hour goal`` is a target, not a timing, and is not read at all.

Values are compared after conversion to seconds (``1.1 h`` and ``3,960 s`` are the same timing); wall and
CPU time are told apart, and a rate is compared with rates of the same unit only. What no rule of this kind
sees is a restatement rounded differently (``9 min`` for ``540 s``, ``0.09 ms per unit`` for ``79–105 ms per
1,000 units``): a link, not a number, is the way to cite another page's timing.

No allow-list is needed on today's pages.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from helpers.docs_pages import docs_pages

REPO = Path(__file__).resolve().parents[1]
INDEX = "performance.md"
"""The index of timings (docs/performance.md)."""

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNIT = (
    r"CPU[ -]seconds?|CPU[ -]s|seconds?|minutes?|min|hours?|ms|h|s"
    r"|[A-Za-z]*/s"  # rates: tok/s, GB/s, atoms/s, and a bare "/s" ("3.33 /s")
)
_SP = "[ \u00a0\u202f\n]"  # a space (a no-break one, a line break): "41.7 s", never "1990s"
_START = r"(?<![\w.,/#–-])"  # not inside a word, a number, a path or an anchor
_END = r"(?![\w/-])"  # "s" of "steps" or "min" of "minimum" is no unit; "10-minute" is an adjective
_COMPOUND = re.compile(rf"{_START}(?P<a>\d+){_SP}(?P<ua>h|min){_SP}(?P<b>\d+){_SP}(?P<ub>min|s){_END}")
_PAIR = re.compile(
    rf"{_START}(?P<a>{_NUM})(?:{_SP}(?P<ua>{_UNIT}))?{_SP}?→{_SP}?(?P<b>{_NUM}){_SP}(?P<ub>{_UNIT}){_END}"
)
_SINGLE = re.compile(rf"{_START}(?P<a>{_NUM})(?:{_SP}?[–-]{_SP}?(?P<b>{_NUM}))?{_SP}(?P<ub>{_UNIT}){_END}")

_SECONDS = {"ms": Decimal("0.001"), "s": Decimal(1), "min": Decimal(60), "h": Decimal(3600)}
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$")
_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Timing:
    """One timing statement: where it is, as written, and the value it is compared by."""

    page: str
    line: int
    text: str
    key: tuple[object, ...]
    sections: tuple[str, ...]
    """Anchors of the headings it sits under (level 2 and deeper), outermost first."""


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: ``8.7 Speed: the …`` → ``87-speed-the-…``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _unit(unit: str) -> tuple[str, Decimal]:
    """(kind, factor to seconds) of a unit as written; a rate is its own kind with factor 1."""
    if "/" in unit:
        return unit.lower(), Decimal(1)
    kind = "CPU time" if unit.startswith("CPU") else "time"
    name = unit.removeprefix("CPU").strip(" -")
    name = {"second": "s", "seconds": "s", "minute": "min", "minutes": "min", "hour": "h", "hours": "h"}.get(
        name, name
    )
    return kind, _SECONDS[name]


def _value(number: str, factor: Decimal) -> Decimal:
    return (Decimal(number.replace(",", "")) * factor).normalize()


def _precise(*numbers: str) -> bool:
    """A decimal point, or two significant digits or more (an integer's trailing zeros do not count)."""
    return any("." in n or len(n.replace(",", "").strip("0")) >= 2 for n in numbers)


def _lines(text: str) -> list[str]:
    """The page's lines with fenced code blocks blanked (line numbers kept)."""
    out, fence = [], ""
    for line in text.splitlines():
        match = _FENCE.match(line)
        if fence:
            if match and match.group(1) == fence:
                fence = ""
            out.append("")
        elif match:
            fence = match.group(1)
            out.append("")
        else:
            out.append(line)
    return out


def _prose(line: str) -> str:
    """A line without inline code, link targets and emphasis markers (a link's text is kept)."""
    line = re.sub(r"(`+)(?:(?!\1).)+\1", " ", line)
    line = re.sub(r"\]\([^)]*\)", "]", line)
    return line.replace("**", "").replace("__", "")


def timings(page: str, text: str) -> list[Timing]:
    """Every timing stated in the prose of one page (compared or not: ``compared`` filters).

    A statement may wrap onto the next line (``16.8 s →`` / ``2.5 s``); it is reported at the line it starts.
    """
    prose: list[str] = []
    sections: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    for raw in _lines(text):
        heading = _HEADING.match(raw)
        if heading:
            level = len(heading.group(1))
            stack = [(lv, anchor) for lv, anchor in stack if lv < level]
            if level >= 2:
                stack.append((level, slug(heading.group(2))))
        prose.append("" if heading else _prose(raw))
        sections.append(tuple(anchor for _, anchor in stack))
    body = "\n".join(prose)
    found: list[tuple[int, Timing]] = []
    for pattern in (_COMPOUND, _PAIR, _SINGLE):
        for match in pattern.finditer(body):
            a, b, ub = match.group("a"), match.group("b"), match.group("ub")
            kind, fb = _unit(ub)
            if pattern is _COMPOUND:
                key: tuple[object, ...] = (kind, "=", _value(a, _unit(match.group("ua"))[1]) + _value(b, fb))
            elif pattern is _PAIR:
                ua = match.group("ua")
                key = (kind, "→", _value(a, _unit(ua)[1] if ua else fb), _value(b, fb))
            elif b is not None:
                key = (kind, "–", _value(a, fb), _value(b, fb))
            else:
                key = (kind, "=" if _precise(a) else "round", _value(a, fb))
            line = body.count("\n", 0, match.start())
            written = re.sub(r"\s+", " ", match.group(0))
            found.append((match.start(), Timing(page, line + 1, written, key, sections[line])))
            body = body[: match.start()] + re.sub(r"\S", " ", match.group(0)) + body[match.end() :]
    return [timing for _, timing in sorted(found, key=lambda item: item[0])]


def compared(found: list[Timing]) -> list[Timing]:
    """The timings precise enough to be compared (see the module docstring)."""
    return [t for t in found if t.key[1] != "round"]


def duplicates(pages: dict[str, str]) -> list[str]:
    """One message per timing value stated on more than one page, naming the pages and the value."""
    where: dict[tuple[object, ...], list[Timing]] = defaultdict(list)
    for page, text in pages.items():
        for timing in compared(timings(page, text)):
            where[timing.key].append(timing)
    messages = []
    for found in where.values():
        if len({t.page for t in found}) > 1:
            places = "; ".join(f"{t.page}:{t.line} {t.text!r}" for t in found)
            messages.append(f"the same timing on {len({t.page for t in found})} pages: {places}")
    return sorted(messages)


def _links(page: str, text: str) -> list[tuple[int, str, str]]:
    """(line, target page, anchor) of every link from ``page`` to README.md or a docs page."""
    here = REPO if page == "README.md" else REPO / "docs"
    out = []
    for number, line in enumerate(_lines(text), start=1):
        for match in _LINK.finditer(re.sub(r"(`+)(?:(?!\1).)+\1", "``", line)):
            path, _, anchor = match.group(1).partition("#")
            if "://" in path or not (path == "" or path.endswith(".md")):
                continue
            target = (here / path).resolve() if path else here / page
            if target == REPO / "README.md" or target.parent == REPO / "docs":
                out.append((number, target.name, anchor))
    return out


def _anchors(text: str) -> set[str]:
    return {slug(m.group(2)) for line in _lines(text) if (m := _HEADING.match(line))}


# --- the extractor itself, on fixtures -------------------------------------------------------------------


def test_a_timing_on_two_pages_is_reported_with_both_pages_and_the_value() -> None:
    pages = {
        "a.md": "## 1. Speed\n\nThe engine starts in 41.7 s.\n",
        "b.md": "# B\n\nIt starts slowly (about 41.7 s here).\n",
    }
    assert duplicates(pages) == ["the same timing on 2 pages: a.md:3 '41.7 s'; b.md:3 '41.7 s'"]


def test_the_same_timing_in_other_units_is_the_same_timing() -> None:
    pages = {
        "a.md": "The suite took 35 min 16 s; the prediction is 3,960 s; 79–105 ms per unit.\n",
        "b.md": "A run of 2,116 seconds, about 1.1 h, and 0.079–0.105 s per unit.\n",
    }
    found = duplicates(pages)
    assert len(found) == 3
    assert all("a.md:1" in m and "b.md:1" in m for m in found)
    assert "'35 min 16 s'" in found[0] + found[1] + found[2]


def test_code_settings_round_figures_and_targets_are_not_compared() -> None:
    page = (
        "```yaml\ntimeout_s: 600.5 s\n```\n"
        "Set `timeout: 600 s`, wait 10 s; under 10 minutes, a 2-hour goal, 5,500 steps, 128 heads, 2 min.\n"
        "[see 41.7 s](other.md#41-7-s) and ![x](img/540s.png)\n"
    )
    found = timings("a.md", page)
    assert [t.text for t in compared(found)] == ["41.7 s"]  # a link's text is prose, its target is not
    assert sorted(t.text for t in found if t not in compared(found)) == ["10 minutes", "10 s", "2 min"]
    assert duplicates({"a.md": page, "b.md": "`41.7 s` as code, and in a block:\n```\n41.7 s\n```\n"}) == []


def test_a_before_after_pair_is_one_timing() -> None:
    found = timings("a.md", "Planning: 10.3 s → **6.6 s**; resource evaluation 6.9 → 2.5 s; now 2.5 s.\n")
    assert [t.text for t in found] == ["10.3 s → 6.6 s", "6.9 → 2.5 s", "2.5 s"]
    assert duplicates({"a.md": "6.9 → 2.5 s\n", "b.md": "16.8 s → 2.5 s\n"}) == []
    assert duplicates({"a.md": "6.9 → 2.5 s\n", "b.md": "6.9 s → 2.5 s\n"}) != []


def test_wall_cpu_and_rates_are_told_apart() -> None:
    assert duplicates({"a.md": "128 CPU s\n", "b.md": "128 s\n", "c.md": "128 tok/s, 1.8 GB/s\n"}) == []
    found = timings("a.md", "4.6 tok/s at batch 1, 3.33 /s, 106,000 atoms/s, 20.6 CPU-s")
    assert [t.key[0] for t in found] == ["tok/s", "/s", "atoms/s", "CPU time"]


def test_sections_and_anchors() -> None:
    text = "# Page\n\n## 8. Served: `backend: openai`\n\n### 8.7 Speed: the server\n\n41.7 s\n\n## 9. Next\n"
    (found,) = timings("a.md", text)
    assert found.sections == ("8-served-backend-openai", "87-speed-the-server")
    assert _anchors(text) == {"page", "8-served-backend-openai", "87-speed-the-server", "9-next"}


# --- the docs --------------------------------------------------------------------------------------------


def test_no_timing_is_stated_on_two_pages() -> None:
    """State a timing on the page of its measurement and link there from the others."""
    assert duplicates(docs_pages()) == []


def test_performance_md_links_every_section_that_states_a_timing() -> None:
    """docs/performance.md is the index of timings: each one is on it or a link from it away."""
    pages = docs_pages()
    linked = {(name, anchor) for _, name, anchor in _links(INDEX, pages[INDEX])}
    missing = set()
    for page, text in pages.items():
        if page in (INDEX, "README.md"):
            continue
        for timing in compared(timings(page, text)):
            targets = {(page, anchor) for anchor in timing.sections} or {
                (name, anchor) for name, anchor in linked if name == page
            }
            if not targets & linked:
                missing.add(f"{page}#{timing.sections[0] if timing.sections else ''} ({timing.text!r})")
    assert sorted(missing) == []


def test_the_readme_states_no_measured_timing() -> None:
    """The README links to docs/performance.md for its times instead of restating them."""
    found = compared(timings("README.md", docs_pages()["README.md"]))
    assert [f"README.md:{t.line} {t.text!r}" for t in found] == []


@pytest.mark.parametrize("page", sorted(docs_pages()))
def test_links_between_pages_name_existing_sections(page: str) -> None:
    pages = docs_pages()
    anchors = {name: _anchors(text) for name, text in pages.items()}
    broken = [
        f"{page}:{line} → {name}#{anchor}"
        for line, name, anchor in _links(page, pages[page])
        if name not in pages or (anchor and anchor not in anchors[name])
    ]
    assert broken == []
