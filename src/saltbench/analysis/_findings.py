"""The findings page: one short section per question of the study, each sentence generated from a table.

Every number on the page is copied from a table of ``results/tables/`` and printed with :func:`fmt` (three
decimals), so a reader — and a test — can find it there (the counts of responses without log-probabilities
come from the import records, ``data/generations/{model}/import.json``). Where a table says an estimate is
missing (a ``status`` other than ``ok``, no rows, NaN), the page says "not enough data" and why, instead of
a number.

The page opens with what this run estimated — one line per question, the headline numbers of the
sections below (:func:`summary_lines`), led by the models whose estimates rest on too few answered
responses — and what it could not estimate. Sections (docs/architecture.md §4):

0. What the responses hold — ``generation_health``: every model (and style) with fewer than
   ``analysis.min_answered_share`` answered responses, with its shares of cut-off, unfenced and error ones;
   ``eligibility``: every model (and style) and cell that enters no pooled or compared estimate below, with
   the reason (docs/metrics.md §10: the only place the page names an excluded model); and every imported
   model with responses that carried no log-probabilities, saying how many of how many
   (those are scored for accuracy only, their units' confidences NaN; docs/backends.md §9.4), from the
   import records.
1. Which confidence estimator wins per aspect (calibration: ECE, ranking: pooled AUROC, rejection: AURC) and
   granularity — ``dominance`` (win share over model × style × task cells, every family compared), then the
   best of each family with its extra cost per response beside it — ``frontier`` (its family's mean extra
   tokens over the cells the estimator is defined in; docs/confidence.md §Families).
2. Does ranking break down at atom resolution — ``granularity`` (mean over models of the pooled AUROC at
   atom vs line level, per task and style, with the correct and incorrect units it rests on; fewer than
   ``analysis.min_units`` of either: unreliable, no finding), worded by the paired interval of the
   difference atom − line (:func:`interval_verdict`; docs/metrics.md §3.4).
3. What corrupted prefixes and answer-context length do to the next atom — ``interventions`` (slopes of
   the corrupted fraction and of the position, per model and task, with their intervals and statuses) and
   ``interventions_by_placement`` (each placement's paired next-atom accuracy difference from ``distant``
   and from the clean prefix, worded by its interval).
4. The reasoning trade-off — ``reasoning_tradeoff`` (Δ precision and relative Δ AUROC per comparison).
5. How much label noise moves the metrics — ``label_noise`` (atom-level pooled AUROC and ECE at ε = 0 and
   the largest ε, uniform noise).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import polars as pl

from saltbench.core.contracts import FINDINGS_SUMMARY_TITLE

Costs = Mapping[tuple[str, str], tuple[float, float]]
"""(granularity, estimator) -> its mean extra (generated, scored) tokens per response (table ``frontier``)."""

FINDINGS_TABLES: tuple[str, ...] = (
    "generation_health",
    "eligibility",
    "dominance",
    "frontier",
    "granularity",
    "interventions",
    "interventions_by_placement",
    "reasoning_tradeoff",
    "label_noise",
    "recovery",
)
"""Tables the page reads (``results/tables/{name}.parquet``); a missing one gives "not enough data"."""

NOT_ENOUGH = "not enough data"

BY_WINS = ["win_share", "mean_rank"]
"""How a dominance table's functions are ordered wherever the findings name a winner: the larger win share
first, a tie broken by the smaller mean rank (the headline and each family's best agree)."""

EXPLORER_LINK = "explorer/index.html"
"""The explorer (rule explorer, ``results/explorer``) relative to the page (``results/findings.md``)."""


def fmt(value: float) -> str:
    """How every number is printed on the page: three decimals, ``n/a`` when undefined."""
    return f"{value:.3f}" if value is not None and math.isfinite(value) else "n/a"


def _interval(
    row: Mapping[str, object], key: str = "estimate", low: str = "ci_low", high: str = "ci_high"
) -> str:
    return f"{fmt(row[key])} [{fmt(row[low])}, {fmt(row[high])}]"  # type: ignore[arg-type]


def _costs(frontier: pl.DataFrame | None) -> Costs:
    """The extra tokens of each (granularity, estimator) of the ``frontier`` table (``{}`` without one)."""
    if frontier is None:
        return {}
    return {
        (r["granularity"], r["confidence"]): (r["extra_generated_tokens"], r["extra_scored_tokens"])
        for r in frontier.iter_rows(named=True)
    }


def _cost_text(family: str, key: tuple[str, str], costs: Costs) -> str:
    """``"no extra tokens"`` for a single pass, else the estimator's extra tokens per response at its
    granularity from the ``frontier`` table (or that the run measured none)."""
    if family == "single_pass":
        return "no extra tokens"
    generated, scored = costs.get(key, (math.nan, math.nan))
    if not (math.isfinite(generated) and math.isfinite(scored)):
        return f"extra cost: {NOT_ENOUGH}"
    return f"+{generated:,.0f} generated, +{scored:,.0f} scored tokens per response"


def _family_bests(part: pl.DataFrame, costs: Costs) -> str:
    """The best estimator of each family of ``part`` (one aspect × granularity), by win share then mean
    rank, with its extra cost."""
    if "family" not in part.columns:
        return ""
    pieces = []
    for (family,), rows in part.group_by(["family"], maintain_order=True):
        top = rows.sort(BY_WINS, descending=[True, False]).row(0, named=True)
        cost = _cost_text(str(family), (top["granularity"], top["confidence"]), costs)
        pieces.append(
            f"{family}: {top['confidence']} (win share {fmt(top['win_share'])}, mean rank "
            f"{fmt(top['mean_rank'])}; {cost})"
        )
    return " By family — " + "; ".join(pieces) + "." if len(pieces) > 1 else ""


def _winners(dominance: pl.DataFrame | None, frontier: pl.DataFrame | None = None) -> list[str]:
    if dominance is None or dominance.is_empty():
        return [f"- {NOT_ENOUGH}: no dominance table (no metrics)."]
    flavours = dominance["flavour"].unique(maintain_order=True).to_list()
    flavour = "topk" if "topk" in flavours else flavours[0]  # the paper's flavour when present
    costs = _costs(frontier)
    lines = [
        f"(confidence flavour {flavour}; the draws', second pass's and trace's estimators compete in it)"
    ]
    dominance = dominance.filter(pl.col("flavour") == flavour)
    for (aspect, granularity), part in dominance.group_by(["aspect", "granularity"], maintain_order=True):
        best = part.filter(pl.col("win_share").is_finite()).sort(BY_WINS, descending=[True, False])
        if best.is_empty() or best["n_cells"][0] == 0:
            lines.append(f"- {aspect}, {granularity}: {NOT_ENOUGH} (no cell where the metric is defined).")
            continue
        top = best.row(0, named=True)
        runner = best.row(1, named=True) if best.height > 1 else None
        key = (top["granularity"], top["confidence"])
        family = f" ({top['family']}, {_cost_text(top['family'], key, costs)})" if "family" in top else ""
        text = (
            f"- {aspect} ({top['metric']}), {granularity}: **{top['confidence']}**{family} wins a share of "
            f"{fmt(top['win_share'])} of {top['n_cells']} cells "
            f"(mean {top['metric']} {fmt(top['mean_value'])})"
        )
        if runner is not None:
            text += f"; next {runner['confidence']} with {fmt(runner['win_share'])}"
        lines.append(text + "." + _family_bests(best, costs))
    return lines


def _units_text(row: Mapping[str, object], min_units: int) -> tuple[str, bool]:
    """``"(C correct, I incorrect units)"`` of a granularity row and whether it rests on too few of either
    (``analysis.min_units``); empty and False where the table has no counts."""
    n_correct, n_incorrect = row.get("n_correct"), row.get("n_incorrect")
    if not isinstance(n_correct, int) or not isinstance(n_incorrect, int):
        return "", False
    weak = min(n_correct, n_incorrect) < min_units
    note = f": unreliable, fewer than {min_units} of either" if weak else ""
    return f" ({n_correct} correct, {n_incorrect} incorrect units{note})", weak


def interval_verdict(low: object, high: object) -> str | None:
    """How the page words a difference by its interval: ``"lower"`` when the whole interval lies below 0,
    ``"higher"`` when above, ``"no difference"`` when it covers 0; ``None`` without a finite interval.

    >>> interval_verdict(-0.03, -0.01), interval_verdict(-0.01, 0.02), interval_verdict(0.01, 0.02)
    ('lower', 'no difference', 'higher')
    """
    if not all(isinstance(b, (int, float)) and math.isfinite(b) for b in (low, high)):
        return None
    return "lower" if high < 0 else "higher" if low > 0 else "no difference"  # type: ignore[operator]


def _atom_line(atom: Mapping[str, object], line: Mapping[str, object], min_units: int) -> tuple[str, str]:
    """The verdict of a task × style (a key of :data:`ATOM_LINE_VERDICTS`) and its sentence's tail: the
    paired difference atom − line with its interval (the atom row's ``delta_vs_line``)."""
    (_, atom_weak), (_, line_weak) = (_units_text(r, min_units) for r in (atom, line))
    if atom_weak or line_weak:
        return "unreliable", "no finding: an estimate rests on too few units"
    verdict = interval_verdict(atom.get("delta_ci_low"), atom.get("delta_ci_high"))
    if verdict is None:
        return "no interval", "no finding: the paired difference has no interval"
    n = atom.get("n_models_delta", atom["n_models"])
    difference = _interval(atom, "delta_vs_line", "delta_ci_low", "delta_ci_high")
    word = "no difference" if verdict == "no difference" else f"{verdict} at atom resolution"
    models = f"model{'s' if n != 1 else ''}"
    levels = (atom["n_models"], line["n_models"])
    # the level means average every model defined at that level; the difference only those with both
    means = "" if levels == (n, n) else f"; the level means above over {levels[0]} and {levels[1]} models"
    return verdict, (
        f"Δ atom − line {difference}, the mean of each model's difference over the {n} {models} with both "
        f"levels, paired over prompts: {word}{means}"
    )


ATOM_LINE_VERDICTS: tuple[str, ...] = ("lower", "higher", "no difference", "no interval", "unreliable")
"""The verdicts of an atom-vs-line comparison on the page (:func:`_atom_line`); only the first three are
findings."""


def _atom_line_rows(granularity: pl.DataFrame) -> list[tuple[str, str, dict | None, dict | None]]:
    """(task, style, atom row, line row) of the pooled AUROC per task × style; a row is ``None`` where
    its AUROC is undefined."""
    pooled = granularity.filter(pl.col("metric") == "auroc_pooled")
    out = []
    for (task, style), part in pooled.group_by(["task", "style"], maintain_order=True):
        rows = {g: part.filter(pl.col("granularity") == g) for g in ("atom", "line")}
        atom, line = (
            rows[g].row(0, named=True) if rows[g].height and math.isfinite(rows[g]["mean"][0]) else None
            for g in ("atom", "line")
        )
        out.append((str(task), str(style), atom, line))
    return out


def _granularity(granularity: pl.DataFrame | None, min_units: int = 20) -> list[str]:
    if granularity is None or granularity.is_empty():
        return [f"- {NOT_ENOUGH}: no granularity table."]
    lines = []
    for task, style, atom, line in _atom_line_rows(granularity):
        if atom is None or line is None:
            lines.append(f"- {task}, {style}: {NOT_ENOUGH} (AUROC undefined at atom or line level).")
            continue
        atom_units, line_units = (_units_text(r, min_units)[0] for r in (atom, line))
        lines.append(
            f"- {task}, {style}: pooled AUROC at atom level {fmt(atom['mean'])}{atom_units} vs line "
            f"level {fmt(line['mean'])}{line_units} ({_atom_line(atom, line, min_units)[1]})."
        )
    return lines


SLOPE_SCALES = {
    "logistic": "log-odds of a correct next atom per unit of the fraction",
    "linear": "probability of a correct next atom per unit of the fraction",
}
"""The scale of an intervention slope, by the regression fitted (the effects table's ``method``)."""


def _slope_scale(part: pl.DataFrame) -> str:
    """``slopes in …`` for a model × task's fit, from its ``method`` (:data:`SLOPE_SCALES`); empty when the
    rows name no single known method."""
    methods = part["method"].unique().to_list() if "method" in part.columns else []
    known = len(methods) == 1 and methods[0] in SLOPE_SCALES
    return f"slopes in {SLOPE_SCALES[methods[0]]}" if known else ""


def _interventions(effects: pl.DataFrame | None) -> list[str]:
    if effects is None or effects.is_empty():
        return [f"- {NOT_ENOUGH}: no intervention results (interventions disabled or no samples)."]
    lines = []
    names = {"corrupted_fraction": "corrupted fraction c/(k-1)", "position_fraction": "position k/n"}
    for (model, task), part in effects.group_by(["model", "task"], maintain_order=True):
        pieces = []
        for term, name in names.items():
            rows = part.filter(pl.col("term") == term)
            if rows.is_empty():
                continue
            row = rows.row(0, named=True)
            if row.get("status", "ok") != "ok" or not math.isfinite(row["estimate"]):
                pieces.append(
                    f"{name}: {NOT_ENOUGH} ({str(row.get('status', 'undefined')).replace('_', ' ')})"
                )
                continue
            excludes_zero = row["ci_low"] > 0 or row["ci_high"] < 0
            verdict = "interval excludes 0" if excludes_zero else "interval includes 0"
            pieces.append(f"{name}: slope {_interval(row)} ({verdict})")
        about = "; ".join(filter(None, [f"{part['n_samples'][0]} samples", _slope_scale(part)]))
        lines.append(f"- {model}, {task} ({about}): " + "; ".join(pieces) + ".")
    return lines


PLACEMENT_COMPARISONS: tuple[tuple[str, str], ...] = (
    ("distant", "at equal position and corrupted count"),
    ("clean", "against the clean prefix at equal position"),
)
"""(reference placement, how its interventions are matched) of the placement comparisons the page states
(:func:`saltbench.analysis.placement_contrasts`)."""


def _placement_pieces(part: pl.DataFrame, reference: str) -> list[tuple[str, str | None, str]]:
    """(placement, verdict, text) of each comparison of a model × task's placements with ``reference``:
    ``"local − distant Δ [low, high] (lower)"``; verdict ``None`` and "not enough data" without an
    interval (the difference is not stated)."""
    delta, low, high = (f"{name}_vs_{reference}" for name in ("delta", "delta_ci_low", "delta_ci_high"))
    pieces: list[tuple[str, str | None, str]] = []
    for row in part.filter(pl.col(f"n_samples_vs_{reference}") > 0).iter_rows(named=True):
        name = f"{row['placement']} − {reference}"
        verdict = interval_verdict(row[low], row[high])
        if verdict is None:
            reason = f"no interval, {row[f'n_samples_vs_{reference}']} samples"
            pieces.append((row["placement"], None, f"{name}: {NOT_ENOUGH} ({reason})"))
        else:
            pieces.append(
                (row["placement"], verdict, f"{name} {_interval(row, delta, low, high)} ({verdict})")
            )
    return pieces


def _placements(table: pl.DataFrame | None) -> list[str]:
    """One line per model × task: each placement's paired next-atom accuracy difference from ``distant``
    and from the clean prefix, worded by its interval (:func:`interval_verdict`)."""
    if table is None or table.is_empty() or "delta_vs_distant" not in table.columns:
        return []
    lines = []
    for (model, task), part in table.group_by(["model", "task"], maintain_order=True):
        groups = [
            f"{how}: " + "; ".join(text for *_, text in pieces)
            for reference, how in PLACEMENT_COMPARISONS
            if (pieces := _placement_pieces(part, reference))
        ]
        if groups:
            lines.append(
                f"- {model}, {task}, next-atom accuracy by placement (Δ paired over samples), "
                + "; ".join(groups)
                + "."
            )
    return lines


_TRADEOFF_QUANTITIES = (
    ("precision", "delta_precision", "Δ precision"),
    ("auroc", "rel_delta_auroc", "relative Δ AUROC"),
)
"""(status suffix, column, label) of the two quantities of a reasoning comparison."""


def _tradeoff(table: pl.DataFrame | None) -> list[str]:
    if table is None or table.is_empty():
        return [f"- {NOT_ENOUGH}: no paired comparison (needs both prompt styles or a reasoning pair)."]
    lines = []
    for row in table.iter_rows(named=True):
        parts = []
        for name, key, label in _TRADEOFF_QUANTITIES:
            status = row.get(f"status_{name}", "ok")
            if (
                status == "no_variation"
            ):  # an exact result, not a missing one: both conditions agree everywhere
                parts.append(f"{label}: no difference in any of the {row['n_pairs']} pairs")
            elif status != "ok" or not math.isfinite(row[key]):
                parts.append(f"{label}: {NOT_ENOUGH} ({str(status).replace('_', ' ')})")
            else:
                parts.append(f"{label} {_interval(row, key, f'{key}_ci_low', f'{key}_ci_high')}")
        lines.append(
            f"- {row['label']} ({row['kind']}, {row['n_pairs']} {row['level']} pairs): "
            + "; ".join(parts)
            + "."
        )
    return lines


def _label_noise(table: pl.DataFrame | None) -> list[str]:
    if table is None or table.is_empty():
        return [f"- {NOT_ENOUGH}: no label-noise table."]
    part = table.filter((pl.col("mode") == "uniform") & (pl.col("granularity") == "atom"))
    if part.is_empty() or part["epsilon"].max() == 0:
        return [f"- {NOT_ENOUGH}: no atom-level units with noise levels above 0."]
    high = float(part["epsilon"].max())  # type: ignore[arg-type]
    lines = []
    for metric, name in (("auroc_pooled", "pooled AUROC"), ("ece", "ECE")):
        rows = {e: part.filter((pl.col("metric") == metric) & (pl.col("epsilon") == e)) for e in (0.0, high)}
        if any(r.is_empty() or not math.isfinite(r["value"][0]) for r in rows.values()):
            lines.append(f"- atom-level {name}: {NOT_ENOUGH} (undefined without or with noise).")
            continue
        clean, noisy = rows[0.0].row(0, named=True), rows[high].row(0, named=True)
        noisy_text = _interval(noisy, "value")
        lines.append(
            f"- atom-level {name}: {fmt(clean['value'])} without noise, {noisy_text} with "
            f"{fmt(high)} of the labels flipped uniformly"
        )
        if math.isfinite(noisy["expected"]):
            lines[-1] += f" (analytic expectation {fmt(noisy['expected'])})"
        lines[-1] += "."
    return lines


def _summary_winners(dominance: pl.DataFrame | None) -> str | None:
    if dominance is None or dominance.is_empty():
        return None
    flavours = dominance["flavour"].unique(maintain_order=True).to_list()
    flavour = "topk" if "topk" in flavours else flavours[0]
    atom = dominance.filter((pl.col("flavour") == flavour) & (pl.col("granularity") == "atom"))
    parts = []
    for (aspect,), part in atom.group_by(["aspect"], maintain_order=True):
        best = part.filter(pl.col("win_share").is_finite() & (pl.col("n_cells") > 0))
        if best.is_empty():
            continue
        top = best.sort(BY_WINS, descending=[True, False]).row(0, named=True)
        family = f"{top['family']}, " if "family" in top else ""
        parts.append(
            f"{aspect} ({top['metric']}) **{top['confidence']}** ({family}win share {fmt(top['win_share'])} "
            f"of {top['n_cells']} cells)"
        )
    return f"Best confidence function at atom level ({flavour}): " + "; ".join(parts) + "." if parts else None


def _summary_granularity(granularity: pl.DataFrame | None, min_units: int = 20) -> str | None:
    """One line: the task × style cells where the paired interval of Δ pooled AUROC (atom − line) lies
    below 0, above 0, or covers 0 (:func:`interval_verdict`), each named; then those without a finding."""
    if granularity is None or granularity.is_empty():
        return None
    cells: dict[str, list[str]] = {verdict: [] for verdict in ATOM_LINE_VERDICTS}
    missing: list[str] = []
    for task, style, atom, line in _atom_line_rows(granularity):
        if atom is None or line is None:
            missing.append(f"{task} {style}")
        else:
            cells[_atom_line(atom, line, min_units)[0]].append(f"{task} {style}")
    found = [v for v in ATOM_LINE_VERDICTS[:3] if cells[v]]
    if not found and not cells["unreliable"] and not cells["no interval"]:
        return None
    counted = sum(len(cells[v]) for v in ATOM_LINE_VERDICTS[:3])
    text = (
        f"Atom vs line resolution: pooled AUROC is lower at atom level in {len(cells['lower'])} of {counted} "
        f"task × style cells where both rest on at least {min_units} correct and {min_units} incorrect "
        "units (lower, higher or no difference: by the paired bootstrap interval of Δ atom − line"
    )
    named = [f"{verdict}: {', '.join(cells[verdict])}" for verdict in found]
    text += f"; {'; '.join(named)})" if named else ")"
    if cells["unreliable"]:
        text += f"; no finding where an AUROC rests on fewer units: {', '.join(cells['unreliable'])}"
    if cells["no interval"]:
        text += f"; no finding where the difference has no interval: {', '.join(cells['no interval'])}"
    return text + (f"; not estimable: {', '.join(missing)}." if missing else ".")


def _summary_interventions(effects: pl.DataFrame | None) -> list[str]:
    if effects is None or effects.is_empty():
        return []
    names = {"corrupted_fraction": "corrupted-fraction slope", "position_fraction": "position slope"}
    lines = []
    for (model, task), part in effects.group_by(["model", "task"], maintain_order=True):
        pieces = [
            f"{name} {_interval(row)}"
            for term, name in names.items()
            for row in part.filter(pl.col("term") == term).iter_rows(named=True)
            if row.get("status", "ok") == "ok" and math.isfinite(row["estimate"])
        ]
        if pieces:
            scale = _slope_scale(part)
            scale = f" ({scale})" if scale else ""
            lines.append(
                f"Next-atom correctness after a prefix, {model}, {task}{scale}: " + "; ".join(pieces) + "."
            )
    return lines


def _summary_placements(table: pl.DataFrame | None) -> str | None:
    """One line: the model × task × placement cells whose next-atom accuracy is lower than, higher than or
    not different from ``distant`` at equal position and corrupted count, by the paired interval, each
    named; those without an interval named too."""
    if table is None or table.is_empty() or "delta_vs_distant" not in table.columns:
        return None
    cells: dict[str | None, list[str]] = {"lower": [], "higher": [], "no difference": [], None: []}
    for (model, task), part in table.group_by(["model", "task"], maintain_order=True):
        for placement, verdict, _ in _placement_pieces(part, "distant"):
            cells[verdict].append(f"{model} {task} {placement}")
    counted = [v for v in ("lower", "higher", "no difference") if cells[v]]
    if not counted and not cells[None]:
        return None
    total = sum(len(cells[v]) for v in counted)
    text = (
        f"Placement of the corruption: next-atom accuracy against distant corruption at equal position and "
        f"corrupted count, in {total} model × task × placement cells (by the paired interval over samples"
    )
    text += "; " + "; ".join(f"{v}: {', '.join(cells[v])}" for v in counted) + ")" if counted else ")"
    return text + (f"; no interval: {', '.join(cells[None])}." if cells[None] else ".")


def _summary_tradeoff(table: pl.DataFrame | None) -> list[str]:
    if table is None or table.is_empty():
        return []
    lines = []
    for row in table.iter_rows(named=True):
        parts = []
        for name, key, label in _TRADEOFF_QUANTITIES:
            status = row.get(f"status_{name}", "ok")
            if status == "no_variation":
                parts.append(f"{label}: no difference in any pair")
            elif status == "ok" and math.isfinite(row[key]):
                parts.append(f"{label} {_interval(row, key, f'{key}_ci_low', f'{key}_ci_high')}")
        if parts:
            what = "cot vs direct prompting" if row["kind"] == "style" else "reasoning model vs its sibling"
            lines.append(f"{what}, {row['label']}: " + "; ".join(parts) + ".")
    return lines


def _health(table: pl.DataFrame | None, min_answered: float) -> list[str]:
    """The models whose estimates rest on fewer than ``min_answered`` answered responses, one line each."""
    from saltbench.analysis._health import thin_models

    if table is None or table.is_empty():
        return [f"- {NOT_ENOUGH}: no generation-health table."]
    thin = thin_models(table, min_answered)
    if thin.is_empty():
        return [f"Every model answered at least {min_answered:.0%} of its prompts in every style."]
    lines = [f"The estimates of these models rest on fewer than {min_answered:.0%} answered responses:"]
    for row in thin.iter_rows(named=True):
        lines.append(
            f"- **{row['model']}** ({row['style']}): {fmt(row['answered'])} answered, "
            f"{fmt(row['truncated'])} cut off by the budget, {fmt(row['no_fence'])} without a fenced answer, "
            f"{fmt(row['error'])} error rows ({row['responses']} responses)."
        )
    return lines


def _eligibility(table: pl.DataFrame | None) -> list[str]:
    """What the eligibility rule kept out of every estimate below (docs/metrics.md §10), one line each."""
    from saltbench.analysis._eligibility import exclusion_lines

    if table is None:
        return [f"- {NOT_ENOUGH}: no eligibility table; the estimates below pool every model."]
    lines = exclusion_lines(table)
    if not lines:
        return ["Every model, style and cell enters the estimates below (docs/metrics.md §10)."]
    head = (
        "These enter no pooled or compared estimate below (docs/metrics.md §10; "
        "`results/tables/eligibility.csv`):"
    )
    return [head, *(f"- {line}." for line in lines)]


def _summary_health(
    table: pl.DataFrame | None, eligibility: pl.DataFrame | None, min_answered: float
) -> list[str]:
    """How many (model, style) pairs answered too rarely and how many enter no estimate; named in §0 only."""
    from saltbench.analysis._eligibility import excluded_models
    from saltbench.analysis._health import thin_models

    if table is None or table.is_empty():
        return []
    thin = thin_models(table, min_answered).height
    excluded = excluded_models(eligibility).height if eligibility is not None else 0
    lines = [f"{_pairs(thin)} answered fewer than {min_answered:.0%} of their prompts (named in §0)."]
    lines.append(f"In no estimate below: {_pairs(excluded)} with too few answered responses (named in §0).")
    return [line for line, n in zip(lines, (thin, excluded), strict=True) if n]


def _pairs(n: int) -> str:
    """``n`` model × style pairs, in words."""
    return f"{n} model × style pair" + ("" if n == 1 else "s")


def _without_logprobs(counts: Mapping[str, tuple[int, int]]) -> list[str]:
    """One line per imported model some of whose responses carry no log-probabilities (docs/backends.md
    §9.4); ``counts``: model -> (responses without log-probabilities, responses imported), from the import
    records. "All" is said only when every response lacks them; otherwise the line says how many, and that
    the confidence metrics rest on the units of the others (a unit holding a token without a log-probability
    has no confidence, and the metrics use the units with one)."""
    lines = []
    for model, (without, imported) in counts.items():
        if without <= 0:
            continue
        if without >= imported:
            lines.append(
                f"Scored without log-probabilities: **{model}** — none of its {imported} imported responses "
                "carries log-probabilities (accuracy only, every confidence absent, no confidence metric)."
            )
        else:
            lines.append(
                f"Partly without log-probabilities: **{model}** — {without} of its {imported} imported "
                f"responses carry none (accuracy only for them, their units' confidences absent); its "
                f"confidence metrics rest on the units of the other {imported - without}."
            )
    return lines


def _recovery(table: pl.DataFrame | None) -> list[str]:
    """Runs with simulated models: how many planted values lie inside their intervals, per quantity."""
    if table is None or table.is_empty():
        return []
    scored = table.filter(pl.col("inside").is_not_null())
    planted = table.filter(pl.col("planted").is_not_nan()).height
    # an interval the table does not compare: its cell ranks too few correct or wrong units
    held = table.filter(
        pl.col("planted").is_not_nan(), pl.col("inside").is_null(), pl.col("ci_low").is_not_nan()
    ).height
    lines = [
        f"Of {planted} values the simulated models planted, {scored['inside'].sum()} lie inside the "
        f"95 % interval of their estimate ({scored.height} compared"
        + (f", {held} not: their cells rank too few correct or wrong units" if held else "")
        + f"; {table.height - planted} rows not derivable from the parameters are marked not planted; "
        "`results/tables/recovery.csv`, docs/simulation.md §4):"
    ]
    per = (
        scored.group_by("quantity")
        .agg(pl.len(), pl.col("inside").sum(), pl.col("error").mean())
        .sort("quantity")
    )
    for row in per.iter_rows(named=True):
        lines.append(
            f"- {row['quantity']}: {row['inside']} of {row['len']} inside, mean error {fmt(row['error'])}."
        )
    return lines


def summary_lines(
    tables: Mapping[str, pl.DataFrame | None],
    min_answered: float = 0.9,
    min_units: int = 20,
    without_logprobs: Mapping[str, tuple[int, int]] | None = None,
) -> list[str]:
    """The headline estimates of the page, one bullet each (only numbers the sections below print too), then
    one bullet naming the questions this run has no estimate for; led by the models with too few answered
    responses and the imported models with responses ``without_logprobs`` (model -> (responses without
    log-probabilities, responses imported), from the import records). AUROCs resting on fewer than
    ``min_units`` correct or incorrect units (``analysis.min_units``) are counted as no finding."""
    found: dict[str, list[str]] = {
        "which confidence function wins": [s for s in [_summary_winners(tables.get("dominance"))] if s],
        "ranking at atom resolution": [
            s for s in [_summary_granularity(tables.get("granularity"), min_units)] if s
        ],
        "corrupted prefixes and context length": [
            *_summary_interventions(tables.get("interventions")),
            *[s for s in [_summary_placements(tables.get("interventions_by_placement"))] if s],
        ],
        "the reasoning trade-off": _summary_tradeoff(tables.get("reasoning_tradeoff")),
        "label noise": [
            "Label noise: " + s.removeprefix("- ")
            for s in _label_noise(tables.get("label_noise"))[:1]
            if NOT_ENOUGH not in s
        ],
    }
    lines = [f"- {line}" for group in found.values() for line in group]
    lines = [
        f"- {line}"
        for line in [
            *_summary_health(tables.get("generation_health"), tables.get("eligibility"), min_answered),
            *_without_logprobs(without_logprobs or {}),
        ]
    ] + lines
    recovery = _recovery(tables.get("recovery"))
    if recovery:
        lines.append(f"- Planted truth: {recovery[0].split(' (')[0]}.")
    missing = [question for question, group in found.items() if not group]
    if missing:
        lines.append(f"- {NOT_ENOUGH} for: {'; '.join(missing)} (see the sections below for why).")
    return lines


def findings_markdown(
    tables: Mapping[str, pl.DataFrame | None],
    min_answered: float = 0.9,
    min_units: int = 20,
    without_logprobs: Mapping[str, tuple[int, int]] | None = None,
) -> str:
    """The findings page (Markdown) from the analysis tables named in :data:`FINDINGS_TABLES`; models below
    ``min_answered`` answered responses (``analysis.min_answered_share``) are named first, then the imported
    models with responses ``without_logprobs`` (model -> (without, imported); those responses are scored for
    accuracy only, and the line says how many); an AUROC resting on fewer than ``min_units``
    correct or incorrect units (``analysis.min_units``) is printed with its counts and called unreliable, not
    a finding. The page links the explorer (``explorer/index.html``)."""
    health = [
        *_health(tables.get("generation_health"), min_answered),
        "",
        *_eligibility(tables.get("eligibility")),
        *_without_logprobs(without_logprobs or {}),
    ]
    sections = [
        ("0. What the responses hold", health),
        (
            "1. Which confidence function wins?",
            _winners(tables.get("dominance"), tables.get("frontier")),
        ),
        (
            "2. Does ranking break down at atom resolution?",
            _granularity(tables.get("granularity"), min_units),
        ),
        (
            "3. Corrupted prefixes and answer-context length",
            [
                *_interventions(tables.get("interventions")),
                *_placements(tables.get("interventions_by_placement")),
            ],
        ),
        ("4. The reasoning trade-off", _tradeoff(tables.get("reasoning_tradeoff"))),
        ("5. Sensitivity to label noise", _label_noise(tables.get("label_noise"))),
    ]
    out = [
        "# Findings of this run",
        "",
        "Every number below is copied from `results/tables/` (three decimals); intervals in brackets. "
        "'not enough data' marks an estimate the tables do not have, with the reason.",
        "",
        f"Every response behind them, unit by unit: [the explorer]({EXPLORER_LINK}).",
        "",
    ]
    summary = summary_lines(tables, min_answered, min_units, without_logprobs)
    out += [f"## {FINDINGS_SUMMARY_TITLE}", "", *summary, ""]
    recovery = _recovery(tables.get("recovery"))
    if recovery:  # only a run with simulated models has the section
        sections.append(("6. Planted truth", recovery))
    for title, lines in sections:
        out += [f"## {title}", "", *lines, ""]
    return "\n".join(out)
