"""The fenced reference answer, its atoms, and rendering an answer prefix as the model would write it.

The *answer text* of a reference is ``A = FENCE + "\\n" + clean + "\\n" + FENCE`` (``clean`` = the
reference without ``*``, stripped): the fence line, the answer in the reference layout, the closing
fence. Atom ``i`` (1-based) has the span ``[s_i, e_i)`` in ``A`` found by the evaluator itself
(:func:`saltbench.evaluation.evaluate` on ``A``), so rendering and scoring agree on what an atom is.

An intervention replaces some atoms (``a'_i``) and keeps the layout between them; the prefix for
position ``k`` is ``A'[:cut]`` with the cut somewhere in the gap ``[e_{k-1}, s_k]`` between atom ``k-1``
and atom ``k``:

* ``boundary="atom"`` — ``cut`` = ``e_{k-1}`` plus the gap up to and including its last line break
  (``5 4\\n5 7`` at ``k = 3`` gives ``********\\n5 4\\n``; ``TCT CGA`` at ``k = 2`` gives ``********\\nTCT``):
  the model writes the in-line separator itself.
* ``boundary="token"`` (default when a tokenizer is given) — the last boundary of the tokenizer's
  canonical tokenisation of ``A'`` inside ``[e_{k-1}, s_k]``, so that the prefix tokens are exactly what
  the tokenizer produces for the written answer. Byte-level BPE attaches a space to the following word
  (`` CGA``), splits digits (``5``, `` ``, ``4``) or merges a bracket with a comma (``],``); cutting at a
  string position could force a tokenisation the model never produces (a trailing-space prefix, or ``]``
  without its ``,``). When no token boundary falls inside the gap (one token spans atom ``k-1``, the gap
  and atom ``k``) the prefix ends at ``e_{k-1}`` and is tokenised on its own (``canonical_cut = False``).

The *target* of position ``k`` is ``A'[cut : e_k]`` (the rest of the gap, then the reference atom
``a_k``); with a tokenizer, the target tokens run from the cut to the first token ending at or after
``e_k``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from saltbench.core.vocabulary import Boundary
from saltbench.evaluation import TaskLike, UnitRule, evaluate
from saltbench.tasks.base import FENCE

FENCE_LINE = FENCE + "\n"
"""How every prefix starts: the fence on a line of its own."""


@dataclass(frozen=True)
class AnswerLayout:
    """A fenced answer text and the spans of its atoms (0-based list, positions are 1-based elsewhere).

    Attributes:
        text: the fenced answer ``FENCE\\n<answer>\\n FENCE``.
        atoms: the atoms, in order, as the evaluator splits them.
        starts, ends: the atom spans ``[start, end)`` in ``text``.
    """

    text: str
    atoms: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    @property
    def n_atoms(self) -> int:
        return len(self.atoms)

    @classmethod
    def from_reference(
        cls, reference: str, task: str | TaskLike | UnitRule, variant: str | None = None
    ) -> AnswerLayout:
        """The layout of a reference answer (atoms and spans from the evaluator)."""
        clean = reference.replace("*", "").strip()
        text = f"{FENCE_LINE}{clean}\n{FENCE}"
        ev = evaluate(text, clean, task, variant=variant, keyword_filter=False, require_fence=True)
        spans = ev.response_unit_spans
        return cls(text, ev.response_units, tuple(s for s, _ in spans), tuple(e for _, e in spans))

    def substitute(self, replacements: Mapping[int, str]) -> AnswerLayout:
        """The layout with atom ``i`` (1-based) replaced by ``replacements[i]``; gaps are kept verbatim.

        Raises:
            ValueError: a position outside ``1..n_atoms``.
        """
        bad = [i for i in replacements if not 1 <= i <= self.n_atoms]
        if bad:
            raise ValueError(f"replacement positions must lie in [1, {self.n_atoms}], got {sorted(bad)}")
        if not replacements:
            return self
        pieces: list[str] = []
        atoms = list(self.atoms)
        starts: list[int] = []
        ends: list[int] = []
        cursor = 0
        length = 0
        for i, (s, e) in enumerate(zip(self.starts, self.ends), start=1):
            gap = self.text[cursor:s]
            atom = replacements.get(i, self.atoms[i - 1])
            atoms[i - 1] = atom
            pieces += [gap, atom]
            length += len(gap)
            starts.append(length)
            length += len(atom)
            ends.append(length)
            cursor = e
        pieces.append(self.text[cursor:])
        return AnswerLayout("".join(pieces), tuple(atoms), tuple(starts), tuple(ends))

    def atom_cut(self, k: int) -> int:
        """``boundary="atom"`` cut for position ``k``: ``e_{k-1}`` plus the gap up to its last line break."""
        self._check_position(k)
        end = self.ends[k - 2]
        gap = self.text[end : self.starts[k - 1]]
        newline = gap.rfind("\n")
        return end + newline + 1 if newline >= 0 else end

    def _check_position(self, k: int) -> None:
        if not 2 <= k <= self.n_atoms:
            raise ValueError(f"position k must lie in [2, n_atoms={self.n_atoms}], got {k}")


@dataclass(frozen=True)
class RenderedPrefix:
    """One answer prefix ready for the model.

    Attributes:
        text: the prefix text ``A'[:cut]``.
        target_text: ``A'[cut : e_k]`` (rest of the gap, then the reference atom ``a_k``).
        atom_offset: where ``a_k`` starts inside ``target_text``.
        token_ids: the prefix tokens (empty without a tokenizer).
        target_ids: the target tokens (empty without a tokenizer).
        target_atom_mask: per target token, whether it overlaps ``a_k``.
        canonical_cut: the prefix tokens are a prefix of the canonical tokenisation of ``A'``.
        budget_tokens: tokens of ``A'`` from the cut to the end of atom ``k + m - 1`` (or of ``A'``).
    """

    text: str
    target_text: str
    atom_offset: int
    token_ids: tuple[int, ...] = ()
    target_ids: tuple[int, ...] = ()
    target_atom_mask: tuple[bool, ...] = ()
    canonical_cut: bool = True
    budget_tokens: int = 0


def _token_starts(tokenizer: Any, ids: Sequence[int], text: str) -> np.ndarray | None:
    """Start offset of every token in ``text``, or ``None`` when the token texts do not rebuild ``text``."""
    from saltbench.inference.detokenize import token_texts

    texts = token_texts(tokenizer, ids)
    if "".join(texts) != text:
        return None
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    return np.cumsum(lengths) - lengths


def _encode(tokenizer: Any, text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in tokenizer(text, add_special_tokens=False)["input_ids"])


def render_prefix(
    layout: AnswerLayout,
    k: int,
    *,
    tokenizer: Any | None = None,
    boundary: Boundary = "token",
    next_atoms: int = 1,
) -> RenderedPrefix:
    """Render the prefix for position ``k`` of an (already substituted) layout (rules: module docstring).

    Without a tokenizer only ``boundary="atom"`` text is produced (token fields empty). ``next_atoms``
    (``m``) only sets ``budget_tokens``.
    """
    layout._check_position(k)
    end_k = layout.ends[k - 1]
    m_end = layout.ends[min(k - 1 + next_atoms, layout.n_atoms) - 1]
    if tokenizer is None or boundary == "atom":
        cut = layout.atom_cut(k)
        result = RenderedPrefix(layout.text[:cut], layout.text[cut:end_k], layout.starts[k - 1] - cut)
        if tokenizer is None:
            return result
        return _tokenize_split(tokenizer, layout, k, cut, m_end)
    ids = _encode(tokenizer, layout.text)
    starts = _token_starts(tokenizer, ids, layout.text)
    if starts is None:
        return _tokenize_split(tokenizer, layout, k, layout.ends[k - 2], m_end)
    lo, hi = layout.ends[k - 2], layout.starts[k - 1]
    inside = np.flatnonzero((starts >= lo) & (starts <= hi))
    if inside.size == 0:
        return _tokenize_split(tokenizer, layout, k, lo, m_end)
    j = int(inside[-1])  # prefix = tokens [0, j)
    cut = int(starts[j])
    ends = np.append(starts[1:], len(layout.text))
    j_end = int(np.searchsorted(ends, end_k, side="left")) + 1  # through the first token ending at/after e_k
    j_m = int(np.searchsorted(ends, m_end, side="left")) + 1
    target = ids[j:j_end]
    mask = tuple(bool(ends[i] > layout.starts[k - 1] and starts[i] < end_k) for i in range(j, j_end))
    return RenderedPrefix(
        text=layout.text[:cut],
        target_text=layout.text[cut:end_k],
        atom_offset=layout.starts[k - 1] - cut,
        token_ids=tuple(ids[:j]),
        target_ids=tuple(target),
        target_atom_mask=mask,
        canonical_cut=True,
        budget_tokens=j_m - j,
    )


def _tokenize_split(tokenizer: Any, layout: AnswerLayout, k: int, cut: int, m_end: int) -> RenderedPrefix:
    """Prefix and target tokenised separately (``boundary="atom"``, or no canonical cut in the gap).

    ``canonical_cut`` reports whether the prefix tokens nevertheless equal the start of the canonical
    tokenisation of the whole answer text.
    """
    text = layout.text
    end_k = layout.ends[k - 1]
    prefix_ids = _encode(tokenizer, text[:cut])
    target_text = text[cut:end_k]
    target_ids = _encode(tokenizer, target_text)
    atom_offset = layout.starts[k - 1] - cut
    starts = _token_starts(tokenizer, target_ids, target_text)
    if starts is None:  # cannot locate the atom inside the tokens: count them all
        mask = tuple(True for _ in target_ids)
    else:
        ends = np.append(starts[1:], len(target_text))
        mask = tuple(bool(e > atom_offset) for e in ends)
    full = _encode(tokenizer, text)
    canonical = full[: len(prefix_ids)] == prefix_ids
    return RenderedPrefix(
        text=text[:cut],
        target_text=target_text,
        atom_offset=atom_offset,
        token_ids=prefix_ids,
        target_ids=target_ids,
        target_atom_mask=mask,
        canonical_cut=canonical,
        budget_tokens=len(_encode(tokenizer, text[cut:m_end])),
    )


__all__ = ["FENCE_LINE", "AnswerLayout", "RenderedPrefix", "render_prefix"]
