"""Unit decomposition with character offsets (docs/tasks.md §1.2; docs/evaluation.md §3–4).

Every decomposition works on ``clean = text.replace("*", "").strip()`` and returns, for each unit, the
unit text and its half-open ``[start, end)`` span *in clean coordinates* (``clean[start:end] == unit``).
``_extraction.CleanText`` maps those spans back to the original text (see ``evaluate``'s span contract).

Line breaks are universal newlines: ``"\\n"``, ``"\\r\\n"`` and a lone ``"\\r"`` each end a line (as in
Python's text-mode files). Splitting replaces every ``"\\r"`` with ``"\\n"``, one character for one, so the
offsets do not move; a CRLF becomes ``"\\n\\n"``, i.e. one extra empty line, and empty lines are dropped at
both granularities that split lines. No line or atom unit therefore contains a ``"\\r"``.

Granularities:

* ``generation``: ``[clean]`` if non-empty (unchanged text; its comparison key, :meth:`UnitRule.key`,
  writes every line break as ``"\\n"``, so a CRLF answer equals its LF form).
* ``line``: ``clean.replace("\\r", "\\n").split("\\n")``, each line stripped, empty lines dropped.
* ``atom``: per non-empty stripped line — delimiter (when truthy): split on it, strip pieces, drop empties;
  otherwise every ``finditer`` match of ``atom_regex`` on the line, stripped, non-empty. Then *bracket
  trimming*: a first atom starting with ``[`` but not ending with ``]`` loses its first character; a last
  atom ending with ``]`` but not starting with ``[`` loses its last character (spans shrink accordingly).

Fast paths, all equivalent to the literal per-line rule (property-tested against it):

* space delimiter, when the only whitespace is single spaces/newlines between tokens: ``clean.split()``,
  spans from the cumulative token lengths;
* other single-character delimiters: an atom is a maximal run of characters other than the delimiter and
  ``\\n``, trimmed of whitespace, found over the whole clean text at once — a regular expression for
  short texts (``re``'s ``\\s`` is exactly ``str.isspace``), numpy code-point masks for long ones.

"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import regex

from saltbench.core.vocabulary import GRANULARITIES, Granularity

DK_MARKERS: frozenset[str] = frozenset({"DK", "<DK", "DK>", "<DK>"})
"""Don't-know markers; a unit is *selective* when ``unit.strip().upper()`` is one of them."""

DK_CASE_VARIANTS: frozenset[str] = frozenset(
    "".join(chars) for marker in DK_MARKERS for chars in itertools.product(*({c, c.lower()} for c in marker))
)
"""Every stripped string whose upper-case form is a DK marker.

Only ASCII ``d``/``k`` upper-case to ``D``/``K``.
"""

NUMPY_MIN_CHARS = 128
"""Texts at least this long are split with numpy code-point masks instead of a regular expression."""

_WS_TOP = 12289  # every whitespace code point is <= 12288 (U+3000)
_WS_TABLE = np.zeros(_WS_TOP + 1, dtype=bool)
_WS_TABLE[[c for c in range(_WS_TOP) if chr(c).isspace()]] = True
_OTHER_WHITESPACE = re.compile(r"[^\S \n]")


class TaskLike(Protocol):
    """Anything with the two atom-splitting attributes of a task (docs/tasks.md §1.2)."""

    delimiter: str | None
    atom_regex: str | None


Spans = tuple[list[int], list[int]]
"""Unit spans as two parallel lists: starts and (exclusive) ends."""


@dataclass(frozen=True)
class UnitRule:
    """How a task splits and compares units: the task's ``delimiter`` and ``atom_regex``.

    ``delimiter`` wins when truthy; ``atom_regex`` is used only when it is falsy. Comparison removes every
    space character unless the delimiter is exactly ``" "`` (docs/evaluation.md §4.1).
    """

    delimiter: str | None
    atom_regex: str | None

    @functools.cached_property
    def strip_spaces(self) -> bool:
        """Whether comparison keys drop every space (the delimiter is not exactly one space)."""
        return self.delimiter != " "

    def key(self, unit: str) -> str:
        """The normalised comparison key of a unit that is already asterisk-free and stripped.

        Every line break is written ``"\\n"`` (``"\\r\\n"`` first, then a lone ``"\\r"``), then every space is
        removed unless the delimiter is exactly ``" "``.
        """
        return line_key(unit.replace(" ", "") if self.strip_spaces else unit)


def line_key(text: str) -> str:
    """``text`` with ``"\\r\\n"`` and then every lone ``"\\r"`` replaced by ``"\\n"`` (universal newlines)."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def resolve_task(task: str | TaskLike | UnitRule, variant: str | None = None) -> UnitRule:
    """Turn a task slug (resolved lazily with ``saltbench.tasks.get_task``) or a task-like object into a rule.

    ``variant`` is used only when ``task`` is a slug (the Code variant or the Words subject).
    """
    if isinstance(task, UnitRule):
        return task
    if isinstance(task, str):
        from saltbench.tasks import get_task  # lazy: the task package is not needed for evaluation itself

        task = get_task(task, variant)
    try:
        delimiter: Any = task.delimiter
        atom_regex: Any = task.atom_regex
    except AttributeError:
        raise TypeError(
            "task must be a task slug or an object with 'delimiter' and 'atom_regex' attributes, "
            f"got {task!r}"
        ) from None
    if delimiter is not None and not isinstance(delimiter, str):
        raise TypeError(f"task.delimiter must be a string or None, got {delimiter!r}")
    if atom_regex is not None and not isinstance(atom_regex, str):
        raise TypeError(f"task.atom_regex must be a string or None, got {atom_regex!r}")
    return _rule(delimiter, atom_regex)


@functools.lru_cache(maxsize=256)
def _rule(delimiter: str | None, atom_regex: str | None) -> UnitRule:
    """One shared :class:`UnitRule` per atom rule (``resolve_task`` runs once per evaluated response)."""
    return UnitRule(delimiter, atom_regex)


@functools.lru_cache(maxsize=64)
def _delimiter_atom_re(delimiter: str) -> re.Pattern[str]:
    d = re.escape(delimiter)
    return re.compile(rf"[^\s{d}](?:[^{d}\n]*[^\s{d}])?")


@functools.lru_cache(maxsize=64)
def _compile_atom_regex(pattern: str) -> Any:
    try:
        return re.compile(pattern)
    except re.error:
        return regex.compile(pattern)  # patterns using features of the third-party module


def check_granularity(granularity: str) -> None:
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity must be one of {GRANULARITIES}, got {granularity!r}")


def _runs(clean: str, separator: str) -> Spans:
    """Spans of the maximal runs of characters other than ``separator`` and ``\\n``, trimmed of whitespace.

    Equivalent to splitting each line on ``separator`` and stripping the pieces (empty pieces dropped).
    Long texts use numpy: with ``sep`` the separator mask and ``content`` the non-separator, non-whitespace
    mask, a run starts at the first content character after a separator and ends after the last one.
    """
    if len(clean) < NUMPY_MIN_CHARS:
        spans = [m.span() for m in _delimiter_atom_re(separator).finditer(clean)]
        return [a for a, _ in spans], [b for _, b in spans]
    codes = np.frombuffer(clean.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    sep = codes == 10
    if separator != "\n":
        sep |= codes == ord(separator)
    content = ~(sep | _WS_TABLE[np.minimum(codes, _WS_TOP)])
    idx = np.flatnonzero(content)
    if not idx.size:
        return [], []
    segment = np.cumsum(sep)[idx]
    change = segment[1:] != segment[:-1]
    starts = idx[np.concatenate(([True], change))]
    ends = idx[np.concatenate((change, [True]))] + 1
    return starts.tolist(), ends.tolist()


def _space_atoms(clean: str, with_spans: bool, offset: int = 0) -> tuple[list[str], Spans] | None:
    """Fast path for the space delimiter: when the only whitespace is single spaces and newlines between
    tokens, the atoms are ``clean.split()`` and the spans (plus ``offset``) follow from the token lengths.
    ``None`` otherwise."""
    if _OTHER_WHITESPACE.search(clean) is not None:
        return None
    units = clean.split()
    if not with_spans:
        return units, ([], [])
    n = len(units)
    last = offset + len(clean)
    if n >= 32:
        lens = np.fromiter(map(len, units), dtype=np.int64, count=n)
        ends = np.cumsum(lens)
        ends += np.arange(offset, offset + n)
        if ends[-1] != last:  # some separator was longer than one character
            return None
        return units, ((ends - lens).tolist(), ends.tolist())
    starts: list[int] = []
    end_list: list[int] = []
    pos = offset
    for unit in units:
        starts.append(pos)
        pos += len(unit)
        end_list.append(pos)
        pos += 1
    if pos - 1 != last:
        return None
    return units, (starts, end_list)


def _lines(clean: str, with_spans: bool = True, offset: int = 0) -> tuple[list[str], Spans]:
    """``clean.split("\\n")``, each line stripped, empty lines dropped, with spans plus ``offset`` (empty if
    not wanted)."""
    if not with_spans:
        return [u for u in (line.strip() for line in clean.split("\n")) if u], ([], [])
    units: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = offset
    for line in clean.split("\n"):
        stripped = line.strip()
        if stripped:
            start = pos + len(line) - len(line.lstrip())
            units.append(stripped)
            starts.append(start)
            ends.append(start + len(stripped))
        pos += len(line) + 1
    return units, (starts, ends)


def _cut(clean: str, spans: Spans) -> list[str]:
    return [clean[a:b] for a, b in zip(*spans)]


def _split_lines_on(clean: str, lines: Spans, delimiter: str) -> tuple[list[str], Spans]:
    """Generic per-line split (any delimiter length), tracking offsets."""
    units: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    step = len(delimiter)
    for line_start, line_end in zip(*lines):
        cursor = line_start
        for piece in clean[line_start:line_end].split(delimiter):
            stripped = piece.strip()
            if stripped:
                start = cursor + len(piece) - len(piece.lstrip())
                units.append(stripped)
                starts.append(start)
                ends.append(start + len(stripped))
            cursor += len(piece) + step
    return units, (starts, ends)


def _regex_atoms(clean: str, lines: Spans, pattern: Any) -> tuple[list[str], Spans]:
    """Every ``finditer`` match of ``pattern`` on each stripped line, stripped, non-empty."""
    units: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for line_start, line_end in zip(*lines):
        for m in pattern.finditer(clean[line_start:line_end]):
            text = m.group()
            stripped = text.strip()
            if stripped:
                start = line_start + m.start() + len(text) - len(text.lstrip())
                units.append(stripped)
                starts.append(start)
                ends.append(start + len(stripped))
    return units, (starts, ends)


def _trim_brackets(units: list[str], spans: Spans) -> None:
    """In-place bracket trimming of the first and last atoms (docs/evaluation.md §3.4); empty spans are
    left alone."""
    if not units:
        return
    starts, ends = spans
    first = units[0]
    if first.startswith("[") and not first.endswith("]"):
        units[0] = first[1:]
        if starts:
            starts[0] += 1
    last = units[-1]
    if last.endswith("]") and not last.startswith("["):
        units[-1] = last[:-1]
        if ends:
            ends[-1] -= 1


def decompose_clean(
    clean: str, rule: UnitRule, granularity: str, with_spans: bool = True, offset: int = 0
) -> tuple[list[str], Spans]:
    """Units of an already clean text (no ``*``, stripped) and their spans in ``clean``, shifted by
    ``offset`` (the position of ``clean`` in a larger text).

    Line and atom units never contain a line break (``"\\r"`` splits lines like ``"\\n"``, offsets kept).
    With ``with_spans=False`` the spans may be left empty (a faster path for references).
    """
    if not clean:
        check_granularity(granularity)
        return [], ([], [])
    if granularity == "generation":
        return [clean], ([offset], [offset + len(clean)])
    if "\r" in clean:  # universal newlines, offset-preserving (module docstring)
        clean = clean.replace("\r", "\n")
    if granularity == "line":
        if "\n" not in clean:  # one line, already stripped
            return [clean], ([offset], [offset + len(clean)]) if with_spans else ([], [])
        return _lines(clean, with_spans, offset)
    if granularity != "atom":
        check_granularity(granularity)
    delimiter = rule.delimiter
    fast = _space_atoms(clean, with_spans, offset) if delimiter == " " else None
    if fast is not None:
        units, spans = fast
    elif delimiter == "\n":
        units, spans = _lines(clean, with_spans, offset)
    else:
        if delimiter and len(delimiter) == 1:
            spans = _runs(clean, delimiter)
            units = _cut(clean, spans)
        elif delimiter:
            units, spans = _split_lines_on(clean, _lines(clean)[1], delimiter)
        elif rule.atom_regex:
            units, spans = _regex_atoms(clean, _lines(clean)[1], _compile_atom_regex(rule.atom_regex))
        else:
            raise ValueError("task has neither a delimiter nor an atom_regex; cannot split atoms")
        if offset:
            spans = [p + offset for p in spans[0]], [q + offset for q in spans[1]]
    _trim_brackets(units, spans)
    return units, spans


def decompose(text: str, task: str | TaskLike | UnitRule, granularity: Granularity = "atom") -> list[str]:
    """Split ``text`` into units of one granularity (docs/evaluation.md §3), after removing ``*`` and
    stripping.

    Examples:
        >>> from types import SimpleNamespace
        >>> decompose("  TCT   CGA \\n\\n AAA  ", SimpleNamespace(delimiter=" ", atom_regex=None))
        ['TCT', 'CGA', 'AAA']
        >>> decompose("[0, 1]\\n[2, 3]", SimpleNamespace(delimiter=",", atom_regex=None))
        ['0', '1]', '[2', '3']
    """
    check_granularity(granularity)
    return decompose_clean(text.replace("*", "").strip(), resolve_task(task), granularity, with_spans=False)[
        0
    ]


def normalize_unit(unit: str, task: str | TaskLike | UnitRule) -> str:
    """Comparison form of a unit: remove ``*``, strip, write every line break (CRLF, lone CR) as
    ``"\\n"``, and remove every space unless the delimiter is ``" "``."""
    return resolve_task(task).key(unit.replace("*", "").strip())


def is_dk(unit: str | None) -> bool:
    """True for a don't-know marker: ``unit.strip().upper()`` in ``{DK, <DK, DK>, <DK>}`` (``dk`` counts)."""
    return unit is not None and unit.strip().upper() in DK_MARKERS
