"""Sampling consistency at unit level (docs/confidence.md §7): how often a response's sampled answers, its
*draws*, repeat each unit of its greedy answer, judged with the task's own units, alignment and equality
(no judge model).

For one response with greedy units ``u_1 .. u_G`` at a granularity and draws ``d = 1 .. n``:

1. each draw's answer is extracted, cleaned and decomposed exactly as the evaluator does for a response
   (docs/evaluation.md §2–3, the run's :class:`EvaluateOptions`); a draw with no answer (no qualifying
   fenced region, an error row) has no units;
2. the draw's units are aligned to the greedy units the way the evaluator aligns a response to its
   reference (§5 strict, §6 dynamic), the greedy answer playing the reference: ``v_d(g)`` is the draw unit
   paired with ``u_g``, or *missing* when the draw has none there;
3. ``agreement(g) = (1/n) #{d : v_d(g) is not missing and match(u_g, v_d(g))}`` in [0, 1], **higher is more
   confident**; with the exact matcher ``match`` is the evaluator's own test, equal comparison keys and
   ``v_d(g)`` not a DK marker (§4), i.e. ``v_d(g)`` would be ``correct`` against the greedy answer;
4. ``entropy(g) = -Σ_c (k_c/n) ln(k_c/n)`` (natural log) over the classes ``c`` of the values the n draws put
   at ``g``, *missing* being one class and the matcher's equivalence classes the others (exact: one class
   per comparison key, every DK marker one class), ``k_c`` the draws in class ``c``; in [0, ln n], **lower is
   more confident**;
5. ``distinct(g)`` the number of those classes, in [1, n], **lower is more confident**.

At generation granularity the one unit is the whole clean answer, so ``agreement`` is the exact-match
agreement (the share of draws whose extracted answer equals the greedy one under the task's key) and
``distinct`` the number of distinct answers among the draws (no answer counting as one).

A draw without an answer is *missing* at every position: it lowers every agreement and adds to the
*missing* class. ``n`` is the number of draws of the response (rows of the draws table for its
``sample_id``); every greedy response must have at least one.

Cost: extraction and decomposition run once per draw (the evaluator's per-response work); strict alignment
is a join on positions; dynamic alignment is the evaluator's batched :func:`dynamic_pairs_many`, one call per
granularity; keys, DK flags, matching and the per-unit sums are vectorised over all (draw, unit) pairs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import polars as pl

from saltbench.core.vocabulary import DRAW_SOURCE
from saltbench.evaluation._alignment import dynamic_pairs_many
from saltbench.evaluation._evaluate import _find_answer
from saltbench.evaluation._extraction import CleanText
from saltbench.evaluation._options import EvaluateOptions
from saltbench.evaluation._units import DK_CASE_VARIANTS, UnitRule, decompose_clean, resolve_task

log = logging.getLogger(__name__)

CONSISTENCY_FUNCTIONS: dict[str, bool] = {"agreement": True, "entropy": False, "distinct": False}
"""The consistency functions and their directions: ``True`` when higher means more confident."""

CONSISTENCY_COLUMNS: tuple[str, ...] = tuple(f"{DRAW_SOURCE}.{name}" for name in CONSISTENCY_FUNCTIONS)
"""The columns :func:`draw_consistency` adds to a units table: ``draws.agreement``, ``draws.entropy``,
``draws.distinct`` (``{source}.{function}``, the source being the draws as ``topk``/``full`` name the token
distribution a function reads, docs/confidence.md §1.2)."""

UNIT_VALUE_COLUMNS: dict[str, pl.DataType] = {"unit": pl.String(), "key": pl.String(), "dk": pl.Boolean()}
"""Columns of the unit values a matcher compares: the unit text (``*``-free, stripped), its comparison key
under the task's rule (docs/evaluation.md §4.1) and whether it is a DK marker (§4.2)."""

_SPACES = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())  # str.strip's characters
_DK_VARIANTS = sorted(DK_CASE_VARIANTS)


class UnitMatcher(Protocol):
    """Decides whether two unit values of a task are the same (docs/confidence.md §7.2).

    Values come as frames of :data:`UNIT_VALUE_COLUMNS` (``unit``, ``key``, ``dk``), compared row by row, so
    a matcher works on whole columns at once. The alignment that pairs them is the task's own
    (comparison keys), whatever the matcher; the matcher judges the aligned pairs. :class:`ExactMatcher`
    is the evaluator's equality; an NLI or judge matcher implements the same two methods.
    """

    def equal(self, greedy: pl.DataFrame, drawn: pl.DataFrame, task: str) -> np.ndarray:
        """Boolean array: does ``drawn[i]`` (a draw's unit) equal ``greedy[i]`` (the greedy unit)?"""
        ...

    def classes(self, drawn: pl.DataFrame, groups: np.ndarray, task: str) -> np.ndarray:
        """Integer class of each drawn value: two values of the same group (one greedy unit) share a class
        exactly when the matcher deems them the same value."""
        ...


class ExactMatcher:
    """The task's own unit equality (docs/evaluation.md §4): equal comparison keys, and the draw's unit is
    not a DK marker (a DK never matches). For the entropy every DK marker is one class, each key another.

    >>> import polars as pl
    >>> units = ["TCT", "DK", "TCT"]
    >>> values = pl.DataFrame({"unit": units, "key": units, "dk": [False, True, False]})
    >>> ExactMatcher().equal(values, values, "dna").tolist()
    [True, False, True]
    >>> ExactMatcher().classes(values, np.zeros(3, dtype=np.int64), "dna").tolist()
    [0, 1, 0]
    """

    def equal(self, greedy: pl.DataFrame, drawn: pl.DataFrame, task: str) -> np.ndarray:
        same = (greedy["key"] == drawn["key"]) & ~drawn["dk"]
        return same.to_numpy()

    def classes(self, drawn: pl.DataFrame, groups: np.ndarray, task: str) -> np.ndarray:
        frame = drawn.select(
            group=pl.Series(groups), dk="dk", key=pl.when(pl.col("dk")).then(pl.lit(None)).otherwise("key")
        )
        ids = frame.select(pl.struct("group", "dk", "key").rank("dense")).to_series()
        return ids.to_numpy().astype(np.int64) - 1


EXACT_MATCHER = ExactMatcher()
"""The default matcher of :func:`draw_consistency`."""


def key_expr(column: str, rule: UnitRule) -> pl.Expr:
    """``UnitRule.key`` as a polars expression on ``column`` (stripped, ``*``-free units): every space removed
    unless the delimiter is one space, then ``"\\r\\n"`` and a lone ``"\\r"`` written ``"\\n"``."""
    expr = pl.col(column)
    if rule.strip_spaces:
        expr = expr.str.replace_all(" ", "", literal=True)
    return expr.str.replace_all("\r\n", "\n", literal=True).str.replace_all("\r", "\n", literal=True)


def dk_expr(column: str) -> pl.Expr:
    """``is_dk`` as a polars expression: the unit stripped of ``str.isspace`` characters is a DK marker in
    any case (docs/evaluation.md §4.2)."""
    return pl.col(column).str.strip_chars(_SPACES).is_in(_DK_VARIANTS)


def _values(units: pl.Series, rule: UnitRule) -> pl.DataFrame:
    """The :data:`UNIT_VALUE_COLUMNS` of unit texts under ``rule``."""
    frame = pl.DataFrame({"unit": units.cast(pl.String)})
    return frame.with_columns(key=key_expr("unit", rule), dk=dk_expr("unit"))


# -- inputs ---------------------------------------------------------------------------------------------
_UNIT_INPUT = ("sample_id", "task", "variant", "granularity", "unit_index", "response_unit")
_DRAW_INPUT = ("sample_id", "draw", "text")


def _require(frame: pl.DataFrame, columns: Sequence[str], where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {missing} (columns: {frame.columns})")


def _check_inputs(units: pl.DataFrame, draws: pl.DataFrame) -> str:
    """Refuse inputs that cannot be scored, naming the value; return the task."""
    _require(units, _UNIT_INPUT, "draw_consistency units")
    _require(draws, _DRAW_INPUT, "draw_consistency draws")
    tasks = units["task"].unique().to_list()
    if len(tasks) > 1 or (len(tasks) == 0 and draws.height):
        found = sorted(map(str, tasks))
        raise ValueError(f"draw_consistency units: expected the rows of one task, got tasks {found}")
    for name in ("model", "style"):
        if name in units.columns and units[name].n_unique() > 1:
            raise ValueError(f"draw_consistency units: several {name}s {units[name].unique().to_list()}")
    if draws["draw"].null_count() or draws["sample_id"].null_count():
        raise ValueError("draw_consistency draws: null sample_id or draw")
    duplicated = draws.filter(pl.struct("sample_id", "draw").is_duplicated())
    if duplicated.height:
        first = duplicated.row(0, named=True)
        raise ValueError(
            f"draw_consistency draws: (sample_id, draw) ({first['sample_id']!r}, {first['draw']}) "
            "is not unique"
        )
    greedy_ids = set(units["sample_id"].unique().to_list())
    drawn_ids = set(draws["sample_id"].unique().to_list())
    stray = sorted(drawn_ids - greedy_ids)
    if stray:
        raise ValueError(f"draw_consistency draws: sample ids without greedy units: {stray[:5]}")
    answered = set(units.filter(pl.col("response_unit").is_not_null())["sample_id"].unique().to_list())
    undrawn = sorted(answered - drawn_ids)
    if undrawn:
        raise ValueError(f"draw_consistency: greedy responses without draws: {undrawn[:5]}")
    return str(tasks[0]) if tasks else ""


def _draw_answers(draws: pl.DataFrame, options: EvaluateOptions) -> list[CleanText | None]:
    """Each draw's clean answer (docs/evaluation.md §2–3), ``None`` without one (no qualifying region, an
    error row: ``finish_reason == "error"`` or a non-null ``error``)."""
    failed = np.zeros(draws.height, dtype=bool)
    if "finish_reason" in draws.columns:
        failed |= (draws["finish_reason"].cast(pl.String) == "error").fill_null(False).to_numpy()
    if "error" in draws.columns:
        failed |= draws["error"].is_not_null().to_numpy()
    texts = draws["text"].to_list()
    return [None if bad else _find_answer(text, options)[3] for text, bad in zip(texts, failed.tolist())]


# -- alignment: which draw unit each greedy unit is paired with ------------------------------------------
def _draw_units(
    answers: Sequence[CleanText | None], rule: UnitRule, granularity: str
) -> tuple[list[str], np.ndarray]:
    """Every draw's units at one granularity, concatenated, and the number of units of each draw."""
    flat: list[str] = []
    counts = np.zeros(len(answers), dtype=np.int64)
    for i, clean in enumerate(answers):
        if clean is not None and clean.clean:
            units = decompose_clean(clean.clean, rule, granularity, with_spans=False)[0]
            flat.extend(units)
            counts[i] = len(units)
    return flat, counts


def _candidates(
    greedy: pl.DataFrame,
    draw_samples: list[str],
    values: pl.DataFrame,
    counts: np.ndarray,
    options: EvaluateOptions,
) -> pl.DataFrame:
    """``sample_id, position, flat``: the greedy position each draw unit (``flat``, its index in
    ``values``) is aligned with; units aligned with no greedy unit are left out (strict: their position is
    beyond the greedy units and the join drops them; dynamic: they are redundant)."""
    offsets = np.cumsum(counts) - counts
    draw_of_unit = np.repeat(np.arange(counts.size), counts)
    flat_index = np.arange(int(counts.sum()), dtype=np.int64)
    samples = pl.Series(draw_samples, dtype=pl.String)
    if options.alignment == "strict":
        return pl.DataFrame(
            {
                "sample_id": samples.gather(draw_of_unit),
                "position": flat_index - offsets[draw_of_unit],
                "flat": flat_index,
            }
        )
    ordered = greedy.sort("sample_id", "position").group_by("sample_id", maintain_order=True).agg("key")
    greedy_keys = dict(zip(ordered["sample_id"].to_list(), ordered["key"].to_list()))
    keys, dk = values["key"].to_list(), values["dk"].to_list()
    todo = [i for i, s in enumerate(draw_samples) if counts[i] and s in greedy_keys]
    problems = (
        (
            keys[offsets[i] : offsets[i] + counts[i]],
            dk[offsets[i] : offsets[i] + counts[i]],
            greedy_keys[draw_samples[i]],
        )
        for i in todo
    )
    drawn: list[int] = []
    paired: list[int] = []
    lengths: list[int] = []
    for ridx, gidx in dynamic_pairs_many(problems, *options.scores):
        drawn.extend(ridx)
        paired.extend(gidx)
        lengths.append(len(ridx))
    draw = np.repeat(np.asarray(todo, dtype=np.int64), lengths)
    r, g = np.asarray(drawn, dtype=np.int64), np.asarray(paired, dtype=np.int64)
    keep = (r >= 0) & (g >= 0)
    return pl.DataFrame(
        {"sample_id": samples.gather(draw[keep]), "position": g[keep], "flat": offsets[draw[keep]] + r[keep]}
    )


# -- scores ---------------------------------------------------------------------------------------------
def _scores(
    n_draws: np.ndarray, local: np.ndarray, agree: np.ndarray, classes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``agreement``, ``entropy`` and ``distinct`` of ``m = n_draws.size`` greedy units from the aligned
    draw units: ``local`` (the greedy unit of each, 0..m-1), ``agree`` (the matcher's verdict) and
    ``classes`` (its class among the values at that unit). Draws with no unit there are *missing*: ``n -
    present`` of them, one more class (module docstring)."""
    m = n_draws.size
    n = n_draws.astype(np.float64)
    present = np.bincount(local, minlength=m)
    agreement = np.bincount(local, weights=agree.astype(np.float64), minlength=m) / n
    counted = pl.DataFrame({"local": local, "cls": classes}).group_by("local", "cls").len()
    at = counted["local"].to_numpy()
    share = counted["len"].to_numpy() / n[at]
    entropy = np.bincount(at, weights=-share * np.log(share), minlength=m).astype(np.float64)
    missing = (n_draws - present) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy -= np.where(missing > 0, missing * np.log(missing), 0.0)
    distinct = np.bincount(at, minlength=m) + (missing > 0)
    return agreement, entropy, distinct.astype(np.float64)


def _granularity_scores(
    greedy: pl.DataFrame,
    draws: pl.DataFrame,
    answers: list[CleanText | None],
    rule: UnitRule,
    options: EvaluateOptions,
    matcher: UnitMatcher,
    task: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three scores of the greedy units of one granularity (rows of ``greedy``: ``sample_id,
    position, unit, key, dk, n``) against the draws of their responses."""
    granularity = str(greedy["granularity"][0])
    flat, counts = _draw_units(answers, rule, granularity)
    values = _values(pl.Series(flat, dtype=pl.String), rule)
    candidates = _candidates(greedy, draws["sample_id"].to_list(), values, counts, options)
    local = greedy.select("sample_id", "position").with_row_index("local")
    aligned = candidates.join(local, on=["sample_id", "position"], how="inner")
    at = aligned["local"].cast(pl.Int64).to_numpy()
    drawn = values[aligned["flat"].to_numpy()]
    agree = np.asarray(matcher.equal(greedy.select(*UNIT_VALUE_COLUMNS)[at], drawn, task), dtype=bool)
    classes = np.asarray(matcher.classes(drawn, at, task), dtype=np.int64)
    if agree.shape != at.shape or classes.shape != at.shape:
        raise ValueError(
            f"matcher {type(matcher).__name__} returned {agree.shape} verdicts and {classes.shape} "
            f"classes for {at.size} aligned pairs"
        )
    return _scores(greedy["n"].to_numpy(), at, agree, classes)


def _greedy_units(units: pl.DataFrame, draws: pl.DataFrame) -> pl.DataFrame:
    """The greedy answer's units: ``_row`` (row in ``units``), ``sample_id, variant, granularity``,
    ``position`` (0.. in reading order among the response's units at that granularity), the unit text and
    ``n``, its response's number of draws."""
    n = draws.group_by("sample_id").agg(n=pl.len().cast(pl.Int64))
    greedy = (
        units.select(*_UNIT_INPUT)
        .with_row_index("_row")
        .filter(pl.col("response_unit").is_not_null())
        .with_columns(
            pl.col("granularity").cast(pl.String),
            position=(pl.col("unit_index").rank("ordinal").over("sample_id", "granularity") - 1).cast(
                pl.Int64
            ),
        )
    )
    return greedy.join(n, on="sample_id", how="left").rename({"response_unit": "unit"})


def draw_consistency(
    units: pl.DataFrame,
    draws: pl.DataFrame,
    *,
    options: EvaluateOptions | None = None,
    matcher: UnitMatcher = EXACT_MATCHER,
) -> pl.DataFrame:
    """``units`` with the sampling-consistency columns :data:`CONSISTENCY_COLUMNS` (docs/confidence.md §7).

    Args:
        units: the units table rows of one (model, style, task) (docs/confidence.md §6; needs ``sample_id,
            task, variant, granularity, unit_index, response_unit``), the greedy answers' units.
        draws: the sampled answers of the same responses, one row per (``sample_id``, ``draw``) with their
            ``text`` (and, when present, ``finish_reason`` and ``error``: an error row has no answer).
        options: the evaluation options the greedy answers were scored with
            (``EvaluateOptions.from_scoring(config["scoring"], reasoning=...)``): the same extraction and the
            same alignment (strict or dynamic) apply to the draws; default ``EvaluateOptions()``.
        matcher: decides whether an aligned draw unit equals the greedy unit (:class:`UnitMatcher`); default
            the task's own equality, :class:`ExactMatcher`.

    Returns:
        ``units`` unchanged, rows in order, plus three Float64 columns: ``draws.agreement`` (share of draws
        repeating the unit, in [0, 1], higher is more confident), ``draws.entropy`` (natural-log entropy of
        the draws' values there, *missing* one value, in [0, ln n], lower is more confident) and
        ``draws.distinct`` (how many different values, in [1, n], lower is more confident); NaN on
        ``missing`` rows (no greedy unit). A draw without an answer counts as *missing* at every unit.

    Raises:
        ValueError: a required column is absent, the units hold several tasks (models, styles) or none
            while there are draws, a
            (``sample_id``, ``draw``) repeats, a draw belongs to no greedy response, or a greedy response
            with units has no draw.

    Example:
        >>> import polars as pl
        >>> units = pl.DataFrame({"sample_id": ["s", "s"], "task": "dna", "variant": None,
        ...     "granularity": "atom", "unit_index": [0, 1], "response_unit": ["TCT", "CGA"]})
        >>> fenced = ["********\\nTCT CGA\\n********", "********\\nTCT AAA\\n********", "TCT CGA", ""]
        >>> draws = pl.DataFrame({"sample_id": "s", "draw": [0, 1, 2, 3], "text": fenced})
        >>> out = draw_consistency(units, draws)
        >>> out["draws.agreement"].to_list(), out["draws.distinct"].to_list()
        ([0.75, 0.5], [2.0, 3.0])
        >>> out["draws.entropy"].round(4).to_list()  # -(.75 ln .75 + .25 ln .25), -(.5 ln .5 + .5 ln .25)
        [0.5623, 1.0397]
    """
    task = _check_inputs(units, draws)
    options = options or EvaluateOptions()
    greedy = _greedy_units(units, draws)
    answers = _draw_answers(draws, options)
    draw_samples = draws["sample_id"].cast(pl.String)
    out = {name: np.full(units.height, np.nan) for name in CONSISTENCY_COLUMNS}
    for (variant, _), part in greedy.group_by("variant", "granularity", maintain_order=True):
        rule = resolve_task(task, variant)
        part = part.with_columns(**_values(part["unit"], rule).select("key", "dk").to_dict())
        mask = draw_samples.is_in(part["sample_id"].unique().implode()).to_numpy()
        chosen = [a for a, keep in zip(answers, mask.tolist()) if keep]
        scores = _granularity_scores(part, draws.filter(mask), chosen, rule, options, matcher, task)
        rows = part["_row"].to_numpy()
        for name, values in zip(CONSISTENCY_COLUMNS, scores):
            out[name][rows] = values
    log.debug("draw consistency of %d units from %d draws (%s)", greedy.height, draws.height, task)
    return units.with_columns(
        **{name: pl.Series(name, values, dtype=pl.Float64) for name, values in out.items()}
    )
