"""Claim-conditioned probability of a unit, its alternatives judged by the task's own unit equivalence
(docs/confidence.md §4.6).

For a unit with tokens ``t = 1..T`` (the scoring stage's token → unit membership, docs/confidence.md §3.4)
and, at each token, the chosen token ``g`` and the stored alternatives ``a`` with their probabilities of the
renormalised top-k distribution (the ``topk`` flavour, docs/confidence.md §2.1):

* the *window* of the pair (t, unit) is the unit's span extended to the whole token,
  ``[min(start, o_t), max(end, o_{t+1}))``; substituting ``a`` for ``g`` rewrites the window to
  ``text[ws:o_t] + a + text[o_{t+1}:we]``;
* ``a`` is *equivalent* when the window's comparison key (docs/evaluation.md §4.1: ``*`` removed, stripped,
  line breaks as ``"\\n"``, spaces removed unless the delimiter is one space) is unchanged, *different*
  otherwise; ``g`` itself is always equivalent;
* ``CCP_t = Σ_{a equivalent} p(a) / Σ_{a} p(a)`` over ``g`` and the alternatives whose text is known, and
  the unit's ``ccp = Π_t CCP_t`` in [0, 1], higher = more confident.

Alternative texts: the generations store alternatives by id only, so an alternative's text is the text the
model gave that id where it chose it — in the same file or, given a :func:`token_vocabulary` of the model's
other files, there (its most frequent in-context text; negative string ids, docs/backends.md §8.1, only
within their own response). An alternative never chosen has no known text and is left out of both sums.

Undefined (NaN): a unit without tokens, with a token without a log-probability, or with a token whose stored
top-k holds no alternative besides the chosen token (an imported response without top-k, ``top_k = 1``).

Speed: no per-token loop. The key of a window depends on the text around the token only through three
facts per side — whether the rest of the window holds a character that survives the key (else ``strip``
reaches the token), and whether the nearest kept character is the ``"\\r"`` of a CRLF pair on the left or its
``"\\n"`` on the right — so each (token, unit) pair gets one of 18 context classes (with the space rule) from
numpy prefix arrays over the file's characters; the key of ``left + s + right`` is computed once per distinct
token text ``s`` and class with polars string expressions and numbered (:func:`key_codes`), so judging an
alternative is comparing two numbers, and the pairs' sums are array gathers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from saltbench.confidence import token_distributions
from saltbench.evaluation._consistency import _SPACES, key_expr
from saltbench.evaluation._units import _WS_TABLE, _WS_TOP, UnitRule

log = logging.getLogger(__name__)

SENTINEL = "\x00"
"""A character that survives the comparison key: it stands for the rest of the window on either side."""
_LEFT = ("", SENTINEL, SENTINEL + "\r")
"""Left context classes: nothing kept (strip reaches the token), a kept character, a kept ``"\\r"``."""
_RIGHT = ("", SENTINEL, "\n" + SENTINEL)
"""Right context classes: nothing kept, a kept character, a kept ``"\\n"``."""
N_CONTEXTS = 2 * len(_LEFT) * len(_RIGHT)
"""Context classes: (spaces kept | removed) × left × right."""
_BLOCK = 1 << 15  # (token, unit) pairs per block of the final sums


@dataclass(frozen=True)
class CcpTokens:
    """The flat per-token inputs of :func:`unit_ccp` for the responses of one file.

    Attributes:
        texts: each response's text.
        strip_spaces: (R,) whether the response's task rule removes spaces from keys
            (:attr:`saltbench.evaluation.UnitRule.strip_spaces`).
        rows: (T,) the response of each token (non-decreasing).
        offsets: (T,) each token's start offset in its response's text.
        texts_of_tokens: (T,) each token's in-context text.
        ids: (T,) token ids; ``chosen``: (T,) their log-probabilities (NaN: none recorded).
        topk: (T, K) stored alternatives' log-probabilities (NaN: absent); ``topk_ids``: (T, K) their ids.
    """

    texts: Sequence[str]
    strip_spaces: np.ndarray
    rows: np.ndarray
    offsets: np.ndarray
    texts_of_tokens: pl.Series
    ids: np.ndarray
    chosen: np.ndarray
    topk: np.ndarray
    topk_ids: np.ndarray

    def ends(self) -> np.ndarray:
        """(T,) each token's end offset ``o_{t+1}`` (the text's length for a response's last token)."""
        ends = np.append(self.offsets[1:], 0).astype(np.int64)
        last = np.append(self.rows[1:] != self.rows[:-1], True) if self.rows.size else np.zeros(0, bool)
        lengths = np.fromiter(map(len, self.texts), dtype=np.int64, count=len(self.texts))
        ends[last] = lengths[self.rows[last]]
        return ends


def strip_flags(rules: Sequence[UnitRule]) -> np.ndarray:
    """(R,) :attr:`UnitRule.strip_spaces` of each response's rule."""
    return np.fromiter((rule.strip_spaces for rule in rules), dtype=bool, count=len(rules))


VOCABULARY_SCHEMA: dict[str, pl.DataType] = {
    "token_id": pl.Int64(),
    "token_text": pl.String(),
    "n": pl.UInt32(),
}
"""A vocabulary table: how often each (token id, in-context text) pair was chosen (ids >= 0 only)."""


def token_vocabulary(generations: pl.DataFrame) -> pl.DataFrame:
    """:data:`VOCABULARY_SCHEMA` of a generations frame (``token_ids``, ``token_texts``): the texts the model
    gave each id it chose; negative string ids are left out (they name a text within one response only).
    Tables of several files add up with :func:`merge_vocabularies`."""
    pairs = generations.select(
        pl.col("token_ids").explode().cast(pl.Int64).alias("token_id"),
        pl.col("token_texts").explode().cast(pl.String).fill_null("").alias("token_text"),
    )
    counted = pairs.filter(pl.col("token_id") >= 0).group_by("token_id", "token_text").len("n")
    return merge_vocabularies([counted])


def merge_vocabularies(tables: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """The sum of vocabulary tables (:data:`VOCABULARY_SCHEMA`), sorted by id and text."""
    if not tables:
        return pl.DataFrame(schema=VOCABULARY_SCHEMA)
    merged = pl.concat([t.select(pl.col(c).cast(d) for c, d in VOCABULARY_SCHEMA.items()) for t in tables])
    return (
        merged.group_by("token_id", "token_text")
        .agg(pl.col("n").sum().cast(pl.UInt32))
        .sort("token_id", "token_text")
    )


def _known_texts(tokens: CcpTokens, vocabulary: pl.DataFrame | None) -> pl.DataFrame:
    """``(scope, token_id) -> token_text``: the most frequent text of each id (ties: the smallest text) in
    the file's chosen tokens plus ``vocabulary`` (ids >= 0 chosen in other files of the model); ``scope`` is
    -1 for ids >= 0 and the response for negative string ids (valid in their response only)."""
    ids = np.asarray(tokens.ids, dtype=np.int64)
    own = (
        pl.DataFrame(
            {
                "scope": np.where(ids >= 0, -1, tokens.rows).astype(np.int64),
                "token_id": ids,
                "token_text": tokens.texts_of_tokens.cast(pl.String).fill_null(""),
            }
        )
        .group_by("scope", "token_id", "token_text")
        .len("n")
    )
    if vocabulary is not None and vocabulary.height:
        other = vocabulary.select(pl.lit(-1, pl.Int64).alias("scope"), "token_id", "token_text", "n")
        own = pl.concat(
            [own.with_columns(pl.col("n").cast(pl.UInt32)), other.with_columns(pl.col("n").cast(pl.UInt32))]
        )
        own = own.group_by("scope", "token_id", "token_text").agg(pl.col("n").sum())
    return (
        own.sort(["scope", "token_id", "n", "token_text"], descending=[False, False, True, False])
        .unique(["scope", "token_id"], keep="first", maintain_order=True)
        .select("scope", "token_id", "token_text")
    )


def _alternative_codes(
    alt_ids: np.ndarray, present: np.ndarray, rows: np.ndarray, vocab: pl.DataFrame
) -> np.ndarray:
    """(T, J) text code of each present alternative; -1 where absent or never chosen in the file."""
    codes = np.full(alt_ids.shape, -1, dtype=np.int64)
    ids = alt_ids.astype(np.int64)
    dense = vocab.filter(pl.col("scope") == -1)
    if dense.height:
        lookup = np.full(int(dense["token_id"].max()) + 1, -1, dtype=np.int64)  # type: ignore[arg-type]
        lookup[dense["token_id"].to_numpy()] = dense["code"].to_numpy()
        inside = present & (ids >= 0) & (ids < lookup.size)
        codes[inside] = lookup[ids[inside]]
    negative = present & (ids < 0)
    if negative.any():
        where = np.nonzero(negative)
        asked = pl.DataFrame({"scope": rows[where[0]].astype(np.int64), "token_id": ids[negative]})
        found = asked.join(vocab, on=["scope", "token_id"], how="left", maintain_order="left")
        codes[negative] = found["code"].fill_null(-1).to_numpy()
    return codes


def _alternatives(tokens: CcpTokens, top_k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The renormalised top-k weights ``(T, top_k)`` (column 0 the chosen token, as the ``topk`` flavour
    orders them, docs/confidence.md §2.1), the alternatives' ids and presence ``(T, top_k - 1)`` in the same
    columns, and ``(T,)`` whether any alternative besides the chosen token was stored."""
    chosen = np.asarray(tokens.chosen, dtype=np.float64)
    topk = np.asarray(tokens.topk, dtype=np.float64)
    in_topk = tokens.topk_ids == tokens.ids[:, None]
    absent = np.isnan(topk) | in_topk
    dist = token_distributions(
        np.where(np.isnan(chosen), 0.0, chosen), topk, None, "topk", chosen_in_topk=in_topk, top_k=top_k
    )
    width = top_k - 1
    order = np.argsort(absent, axis=1, kind="stable")[:, :width]  # as the flavour picks them
    alt_ids = np.take_along_axis(tokens.topk_ids, order, axis=1)
    present = ~np.take_along_axis(absent, order, axis=1)
    if order.shape[1] < width:
        fill = width - order.shape[1]
        alt_ids = np.pad(alt_ids, ((0, 0), (0, fill)))
        present = np.pad(present, ((0, 0), (0, fill)), constant_values=False)
    return np.exp(dist.logprobs), alt_ids, present, (~absent).any(axis=1)


def context_classes(
    tokens: CcpTokens, pair_rows: np.ndarray, window: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
) -> np.ndarray:
    """(P,) context class in ``0..N_CONTEXTS-1`` of each (token, unit) pair (module docstring).

    ``window``: the pairs' ``(ws, o_t, o_{t+1}, we)`` in their response's text. Left: 0 when
    ``text[ws:o_t]`` holds no character other than whitespace and ``*``, else 2 when its last character that
    the key keeps (not ``*``, not a removed space) is ``"\\r"``, else 1; right likewise on
    ``text[o_{t+1}:we]`` with its first kept character and ``"\\n"``."""
    lengths = np.fromiter(map(len, tokens.texts), dtype=np.int64, count=len(tokens.texts))
    base = np.concatenate([[0], np.cumsum(lengths)])
    joined = "".join(tokens.texts)
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    n = codes.size
    star = codes == ord("*")
    strip = np.repeat(tokens.strip_spaces, lengths)
    content = ~(star | _WS_TABLE[np.minimum(codes, _WS_TOP)])
    kept = ~star & ~(strip & (codes == ord(" ")))
    count = np.concatenate([[0], np.cumsum(content)])
    idx = np.arange(n)
    last_kept = np.maximum.accumulate(np.where(kept, idx, -1)) if n else idx
    next_kept = np.append(np.minimum.accumulate(np.where(kept, idx, n)[::-1])[::-1], n)
    ws, ot, ot1, we = (np.asarray(a, dtype=np.int64) + base[pair_rows] for a in window)
    has_left = count[ot] > count[ws]
    left_char = codes[np.clip(last_kept[np.maximum(ot - 1, 0)], 0, max(n - 1, 0))] if n else idx
    left = np.where(has_left, 1 + (left_char == ord("\r")), 0)
    has_right = count[we] > count[ot1]
    right_char = codes[np.minimum(next_kept[ot1], max(n - 1, 0))] if n else idx
    right = np.where(has_right, 1 + (right_char == ord("\n")), 0)
    spaces = tokens.strip_spaces[pair_rows].astype(np.int64)
    return spaces * (len(_LEFT) * len(_RIGHT)) + left * len(_RIGHT) + right


def key_codes(strings: pl.Series) -> np.ndarray:
    """``(S, N_CONTEXTS)`` integer code of the window key ``key(left + s + right)`` of each string ``s``, per
    context class (its sides :data:`_LEFT`, :data:`_RIGHT` and space rule): under class ``c`` an alternative
    ``a`` is equivalent to the chosen ``g`` exactly when ``codes[a, c] == codes[g, c]``."""
    frame = pl.DataFrame({"s": strings})
    columns = []
    for strip in (False, True):
        rule = UnitRule(None if strip else " ", None)
        for left in _LEFT:
            for right in _RIGHT:
                window = frame.select(
                    pl.concat_str([pl.lit(left), pl.col("s"), pl.lit(right)])
                    .str.replace_all("*", "", literal=True)
                    .str.strip_chars(_SPACES)  # the key of an unstripped window (docs/evaluation.md §4.1)
                    .alias("s")
                )
                keys = window.select(key_expr("s", rule)).to_series()
                columns.append(keys.rank("dense").to_numpy().astype(np.int64))
    return np.column_stack(columns) if columns else np.zeros((0, N_CONTEXTS), np.int64)


def _pair_log_ccp(
    weights: np.ndarray,
    texts: tuple[np.ndarray, np.ndarray],
    token_index: np.ndarray,
    context: np.ndarray,
    codes: np.ndarray,
) -> np.ndarray:
    """(P,) ``ln CCP_t`` of each (token, unit) pair: ``ln(p_g + Σ_{a equivalent} p_a) − ln(p_g + Σ_a p_a)``
    over the alternatives with a known text. ``texts``: the chosen tokens' (T,) and the alternatives' (T, J)
    string numbers (-1: unknown), rows of ``codes`` (:func:`key_codes`)."""
    chosen_text, alternative_text = texts
    out = np.empty(token_index.size)
    for lo in range(0, token_index.size, _BLOCK):
        t = token_index[lo : lo + _BLOCK]
        c = context[lo : lo + _BLOCK]
        alt = alternative_text[t]
        known = alt >= 0
        weight = np.where(known, weights[t, 1:], 0.0)
        same = known & (codes[np.maximum(alt, 0), c[:, None]] == codes[chosen_text[t], c][:, None])
        chosen = weights[t, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[lo : lo + t.size] = np.log(chosen + np.where(same, weight, 0.0).sum(axis=1)) - np.log(
                chosen + weight.sum(axis=1)
            )
    return out


def _texts(
    tokens: CcpTokens, alt_ids: np.ndarray, present: np.ndarray, vocabulary: pl.DataFrame | None
) -> tuple[pl.Series, np.ndarray, np.ndarray]:
    """The distinct texts of the file's tokens and of the known alternatives, and the string number of each
    chosen token (T,) and of each alternative (T, J; -1: absent or of unknown text, :func:`_known_texts`)."""
    texts = tokens.texts_of_tokens.cast(pl.String).fill_null("")
    known = _known_texts(tokens, vocabulary)
    strings = pl.concat([texts, known["token_text"]]).unique(maintain_order=True)
    categories = pl.Enum(strings.to_list())
    chosen = texts.cast(categories).to_physical().to_numpy().astype(np.int64)
    vocab = known.select(
        "scope", "token_id", code=pl.col("token_text").cast(categories).to_physical().cast(pl.Int64)
    )
    return strings, chosen, _alternative_codes(alt_ids, present, tokens.rows, vocab)


def unit_ccp(
    tokens: CcpTokens,
    token_index: np.ndarray,
    unit_index: np.ndarray,
    spans: tuple[np.ndarray, np.ndarray],
    n_units: int,
    *,
    top_k: int,
    vocabulary: pl.DataFrame | None = None,
    where: str = "",
) -> np.ndarray:
    """(n_units,) claim-conditioned probability ``Π_t CCP_t`` of each unit (module docstring); NaN where
    undefined.

    Args:
        tokens: the file's flat token inputs.
        token_index, unit_index: the (token, unit) membership pairs (flat token numbering).
        spans: ``(start, end)`` of each unit in its response's text (any value for units without pairs).
        n_units: number of units.
        top_k: length of the renormalised top-k vector (the ``topk`` flavour's).
        vocabulary: texts of ids the model chose in its other files (:func:`token_vocabulary`), so that
            more alternatives have a known text; ``None``: the file's own tokens only.
        where: names the file in log lines.
    """
    ti = np.asarray(token_index, dtype=np.int64)
    ui = np.asarray(unit_index, dtype=np.int64)
    out = np.full(n_units, np.nan)
    if ti.size == 0 or top_k < 2:
        return out
    weights, alt_ids, present, stored = _alternatives(tokens, top_k)
    strings, chosen_text, alternative_text = _texts(tokens, alt_ids, present, vocabulary)
    ends = tokens.ends()
    start, end = (np.asarray(s, dtype=np.int64)[ui] for s in spans)
    offsets = np.asarray(tokens.offsets, dtype=np.int64)
    window = (np.minimum(start, offsets[ti]), offsets[ti], ends[ti], np.maximum(end, ends[ti]))
    context = context_classes(tokens, tokens.rows[ti], window)
    log_ccp = _pair_log_ccp(weights, (chosen_text, alternative_text), ti, context, key_codes(strings))
    undefined = ~stored | np.isnan(np.asarray(tokens.chosen, dtype=np.float64))
    bad = np.bincount(ui, weights=undefined[ti], minlength=n_units) > 0
    counts = np.bincount(ui, minlength=n_units)
    total = np.bincount(ui, weights=log_ccp, minlength=n_units)
    out = np.where((counts > 0) & ~bad, np.exp(total), np.nan)
    _log_coverage(weights, present, alternative_text, ~stored, bad, where)
    return out


def _log_coverage(
    weights: np.ndarray,
    present: np.ndarray,
    text: np.ndarray,
    bare: np.ndarray,
    bad: np.ndarray,
    where: str,
) -> None:
    """Log the share of stored alternatives' probability whose text is unknown, and the units left NaN
    because a token has no stored alternative."""
    stored_mass = float(np.where(present, weights[:, 1:], 0.0).sum())
    unknown = float(np.where(present & (text < 0), weights[:, 1:], 0.0).sum())
    if stored_mass > 0:
        log.info(
            "%s: topk.ccp: %.1f%% of the alternatives' probability has no known text (an id the model never "
            "chose in the files it was given) and is left out",
            where,
            100 * unknown / stored_mass,
        )
    if bad.any() and bare.any():
        log.warning(
            "%s: topk.ccp is NaN for %d units: %d tokens have no stored top-k alternative (imported without "
            "top-k, or top_k = 1)",
            where,
            int(bad.sum()),
            int(bare.sum()),
        )
