"""Cross-check of the second-pass estimators, P(True) and verbalized confidence, against lm-polygraph 0.7.0,
uqlm 0.6.7 and TruthTorchLM 0.1.19 on shared inputs (docs/confidence.md §8.4).

None of the three is a dependency. Install each *without* dependencies in a throwaway venv and give its
site-packages with ``--site`` (repeatable; an anchor not found is skipped)::

    python -m venv /tmp/lmp && /tmp/lmp/bin/pip install lm-polygraph==0.7.0 --no-deps
    python -m venv /tmp/uqlm && /tmp/uqlm/bin/pip install uqlm==0.6.7 --no-deps
    python -m venv /tmp/ttlm && /tmp/ttlm/bin/pip install TruthTorchLM==0.1.19 --no-deps
    .venv/bin/python bench/crosscheck_second_pass_anchors.py --site /tmp/lmp/lib/python3.11/site-packages \\
        --site /tmp/uqlm/lib/python3.11/site-packages --site /tmp/ttlm/lib/python3.11/site-packages

Their files are loaded by path, each module they import for another purpose (a model wrapper, an API
client, a progress bar base class, prompt templates) replaced by a minimal stand-in; the functions compared
run unchanged:

* **P(True)**: lm-polygraph's ``PromptCalculator`` (the stat calculator: the log-probability of the token of
  ``"True"`` in the full next-token distribution after its prompt) and ``PTrue`` (the estimator: minus that),
  run on a stand-in model whose one generated step has the case's log-probabilities; uqlm's
  ``PTrueScorer._extract_ptrue_from_logprobs_result`` (the first reply token's probability if it spells
  *true*, one minus it if it spells *false*, NaN otherwise). Ours, :func:`saltbench.evaluation.p_true`, reads
  ``m_T / (m_T + m_F)`` over the stored top-k. Shared inputs: random next-token log-probabilities over
  the shared vocabulary; where all mass is on ``True`` and ``False`` the three must coincide, elsewhere
  ours is lm-polygraph's P(True) renormalised by P(False) (checked against their calculator asked for
  ``"False"``), and the rankings are compared (Spearman, share of pairs ordered alike).
* **Verbalized**: lm-polygraph's ``Verbalized1S`` (``re.search`` of a regex the user gives, its first group's
  number; here the first number of the reply, on our 0–100 scale), uqlm's ``LLMJudge`` with its 0–100
  ``continuous`` template (every digit of the reply joined, kept in [0, 100]) and TruthTorchLM's
  ``VerbalizedConfidence.extract_confidence`` (digits and points kept; anything else reads 0), against
  :func:`saltbench.evaluation.parse_verbalized`, on the corpus of replies of ``tests/helpers``.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _anchors import Stand, find_anchor, load, stub
from helpers import second_pass_cases as cases  # noqa: E402

from saltbench.evaluation import p_true, parse_verbalized, true_false_ids  # noqa: E402

log = logging.getLogger("crosscheck_second_pass")


def load_lmpolygraph(root: Path) -> dict[str, Any]:
    """lm-polygraph's P(True) calculator and estimator and ``Verbalized1S``."""
    import torch  # noqa: F401  (their calculator runs on torch tensors)

    stub("lm_polygraph.utils.common", polygraph_module_init=lambda init: init)
    stub("lm_polygraph.utils.model", Model=Stand, WhiteboxModel=Stand)
    load("lm_polygraph.estimators.estimator", root / "estimators" / "estimator.py")
    load("lm_polygraph.stat_calculators.stat_calculator", root / "stat_calculators" / "stat_calculator.py")
    prompt = load("lm_polygraph.stat_calculators.prompt", root / "stat_calculators" / "prompt.py")
    estimator = load("lm_polygraph.estimators.p_true", root / "estimators" / "p_true.py")
    verbalized = load("lm_polygraph.estimators.verbalized_1s", root / "estimators" / "verbalized_1s.py")
    return {
        "calculator": prompt.PromptCalculator,
        "base_calculator": prompt.BasePromptCalculator,
        "estimator": estimator.PTrue,
        "verbalized": verbalized.Verbalized1S,
    }


def load_uqlm(root: Path) -> dict[str, Any]:
    """uqlm's first-token P(True) reader and its judge's score parser."""
    import rich.progress  # noqa: F401  (their annotations name it)

    stub("langchain_core.language_models.chat_models", BaseChatModel=Stand)
    stub("uqlm.utils.response_generator", ResponseGenerator=Stand)
    stub("uqlm.utils.prompts", TEMPLATE_TO_INSTRUCTION={}, TEMPLATE_TO_INSTRUCTION_WITH_EXPLANATIONS={})
    scorer = load("uqlm.white_box.p_true", root / "white_box" / "p_true.py")
    judge = load("uqlm.judges.judge", root / "judges" / "judge.py")
    return {"p_true": scorer.PTrueScorer, "judge": judge.LLMJudge}


def load_truthtorchlm(root: Path) -> Any:
    """TruthTorchLM's ``VerbalizedConfidence`` (its reply parser only is called)."""
    stub("TruthTorchLM.truth_methods.truth_method", TruthMethod=Stand)
    stub("TruthTorchLM.utils", fix_tokenizer_chat=Stand)
    stub("TruthTorchLM.utils.common_utils", generate=Stand)
    stub("TruthTorchLM.generation", sample_generations_api=Stand)
    stub("TruthTorchLM.templates", VC_SYSTEM_PROMPT="", VC_USER_PROMPT="", VC_USER_PROMPT_WITH_CONTEXT="")
    if "transformers" not in sys.modules:  # type names for their annotations; the real import takes seconds
        stub("transformers", PreTrainedModel=Stand, PreTrainedTokenizer=Stand, PreTrainedTokenizerFast=Stand)
    path = root / "truth_methods" / "verbalized_confidence.py"
    return load("TruthTorchLM.truth_methods.verbalized_confidence", path).VerbalizedConfidence


class _Tokenizer:
    """A stand-in tokenizer: a word of the shared vocabulary is its index, one token."""

    eos_token_id = bos_token_id = -1

    def __call__(self, texts: list[str]) -> dict[str, list[list[int]]]:
        return {"input_ids": [[cases.VOCABULARY.index(text)] for text in texts]}


class _OneStepModel:
    """A stand-in whitebox model whose one generated step has the log-probabilities ``rows`` (one per prompt
    of the batch, in order), as lm-polygraph's ``WhiteboxModel.generate`` returns them (log-softmax)."""

    model_type = "CausalLM"

    def __init__(self, rows: np.ndarray) -> None:
        self.rows, self.tokenizer = rows, _Tokenizer()

    def device(self) -> str:
        return "cpu"

    def tokenize(self, texts: list[str]) -> dict[str, Any]:
        import torch

        return {"input_ids": torch.arange(len(texts))[:, None]}

    def generate(self, **kwargs: Any) -> types.SimpleNamespace:
        import torch

        return types.SimpleNamespace(scores=[torch.tensor(self.rows)])


def lmpolygraph_p_true(anchor: dict[str, Any], rows: np.ndarray, word: str = "True") -> np.ndarray:
    """lm-polygraph's P(True) of each row (``exp(−PTrue)``: their estimator returns minus the calculator's
    log-probability), or of ``word`` through their base calculator with their prompt."""
    model = _OneStepModel(rows)
    texts = {
        "input_texts": [f"case {i}" for i in range(len(rows))],
        "greedy_texts": ["an answer"] * len(rows),
    }
    if word == "True":
        stats = anchor["calculator"]()(texts, [], model)
    else:  # their base calculator, as their PromptCalculator subclasses it, asked for another word
        calculator = type(
            "WordCalculator",
            (anchor["base_calculator"],),
            {"meta_info": staticmethod(lambda: (["p_true"], []))},
        )
        stats = calculator("Question: {q}\n Possible answer:{a}\n", word, "p_true")(texts, [], model)
    return np.exp(-anchor["estimator"]()(stats))


def uqlm_p_true(anchor: dict[str, Any], rows: np.ndarray) -> np.ndarray:
    """uqlm's P(True) of each row's greedy token (its text and log-probability, as an API returns them)."""
    read = anchor["p_true"]._extract_ptrue_from_logprobs_result
    chosen = rows.argmax(axis=1)
    return np.array(
        [read([{"token": cases.VOCABULARY[c], "logprob": row[c]}]) for c, row in zip(chosen, rows)]
    )


def ours_p_true(rows: np.ndarray, top_k: np.ndarray, every_spelling: bool) -> np.ndarray:
    """Ours from each row's stored top-k: every spelling of the words (as the stage reads them) or only the
    ``True``/``False`` tokens (lm-polygraph's one expected token)."""
    true_ids, false_ids = (
        true_false_ids(enumerate(cases.VOCABULARY))
        if every_spelling
        else (frozenset({cases.TRUE_ID}), frozenset({cases.FALSE_ID}))
    )
    values = []
    for row, k in zip(rows, top_k):
        chosen, chosen_logprob, ids, logprobs = cases.top_candidates(row, int(k))
        values.append(p_true(chosen, chosen_logprob, ids, logprobs, true_ids, false_ids)[0])
    return np.array(values)


def random_rows(rng: np.random.Generator, n: int, lift: float) -> np.ndarray:
    """Random next-token log-probabilities over the shared vocabulary: Gaussian logits of a random scale, each
    spelling of *true* and *false* raised by a random amount (so that they lead often, not always), and all
    six by ``lift`` (a model that mostly answers the question: little mass on other tokens)."""
    logits = rng.normal(0, rng.uniform(0.5, 3, (n, 1)), (n, len(cases.VOCABULARY)))
    logits[:, :6] += lift + rng.uniform(0, 6, (n, 6)) * (rng.random((n, 6)) < 0.6)
    return logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)


def pairs_alike(a: np.ndarray, b: np.ndarray) -> float:
    """Share of the pairs ordered alike by ``a`` and ``b`` among the pairs neither ties."""
    i, j = np.triu_indices(len(a), 1)
    sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    untied = (sa != 0) & (sb != 0)
    return float(np.mean(sa[untied] == sb[untied]))


def compare_p_true_coinciding(lmp: dict[str, Any] | None, uqlm: dict[str, Any] | None, p: np.ndarray) -> None:
    """Log the largest difference between each P(True) and ``p`` on inputs with all mass on ``True``
    (``p``) and ``False``, where every one of them must equal ``p``."""
    two = np.stack([cases.two_token_logprobs(float(v)) for v in p])
    values = {
        "ours (every spelling)": ours_p_true(two, np.full(len(two), 2), every_spelling=True),
        "ours (one spelling)": ours_p_true(two, np.full(len(two), 2), every_spelling=False),
    }
    if lmp is not None:
        values["lm-polygraph PTrue"] = lmpolygraph_p_true(lmp, two)
    if uqlm is not None:
        values["uqlm PTrueScorer"] = uqlm_p_true(uqlm, two)
    log.info("P(True), %d inputs with all mass on True and False (top-k 2): max |value - P(True)|", len(p))
    for name, value in values.items():
        log.info("  %-22s %.3g", name, np.abs(value - p).max())


def compare_p_true_rankings(
    lmp: dict[str, Any] | None, uqlm: dict[str, Any] | None, rng: np.random.Generator, n: int, lift: float
) -> None:
    """Log, on random inputs, that ours is lm-polygraph's P(True) renormalised by their P(False), and how
    each anchor's ranking agrees with ours (Spearman, share of pairs ordered alike)."""
    rows = random_rows(rng, n, lift)
    top_k = rng.integers(2, len(cases.VOCABULARY) + 1, n)
    ours = {"every spelling": ours_p_true(rows, top_k, True), "one spelling": ours_p_true(rows, top_k, False)}
    other = 1 - np.exp(np.logaddexp.reduce(rows[:, :6], axis=1))
    log.info(
        "P(True), %d random inputs, lift %g (mass outside the six spellings: median %.3f), top-k 2..%d: "
        "ours NaN (no_true_false) on %d (one spelling: %d)",
        *(n, lift, np.median(other), len(cases.VOCABULARY)),
        *(np.isnan(v).sum() for v in ours.values()),
    )
    anchors = {}
    if lmp is not None:
        theirs_true, theirs_false = lmpolygraph_p_true(lmp, rows), lmpolygraph_p_true(lmp, rows, "False")
        listed = [set(cases.top_candidates(row, int(k))[2].tolist()) for row, k in zip(rows, top_k)]
        both = np.array([{cases.TRUE_ID, cases.FALSE_ID} <= ids for ids in listed])
        renormalised = theirs_true / (theirs_true + theirs_false)
        log.info(
            "  ours (one spelling) = lm-polygraph's P(True) / (their P(True) + their P(False)) on the %d "
            "inputs with both among the top-k: max difference %.3g",
            *(both.sum(), np.abs(ours["one spelling"][both] - renormalised[both]).max()),
        )
        anchors["lm-polygraph PTrue"] = theirs_true
    if uqlm is not None:
        anchors["uqlm PTrueScorer"] = uqlm_p_true(uqlm, rows)
    for name, theirs in anchors.items():
        for label, values in ours.items():
            kept = ~np.isnan(values) & ~np.isnan(theirs)
            log.info(
                "  ours (%s) vs %s on the %d inputs both define (theirs NaN on %d): Spearman %.3f, pairs "
                "ordered alike %.3f",
                *(label, name, kept.sum(), np.isnan(theirs).sum()),
                scipy_stats.spearmanr(values[kept], theirs[kept]).statistic,
                pairs_alike(values[kept], theirs[kept]),
            )


FIRST_NUMBER = r"(\d+(?:\.\d+)?)"
"""The regex given to lm-polygraph's ``Verbalized1S`` (it takes one from its user; its stock configurations
ask for ``Probability: 0.x`` on a 0–1 scale): the first number of the reply, read on our 0–100 scale."""


def verbalized_readers(
    lmp: dict[str, Any] | None, uqlm: dict[str, Any] | None, sites: list[Path]
) -> dict[str, Any]:
    """Each installed anchor's verbalized parser as a function of one reply to a confidence in [0, 1]."""
    readers: dict[str, Any] = {}
    if lmp is not None:
        estimator = lmp["verbalized"](confidence_regex=FIRST_NUMBER)
        readers["lm-polygraph Verbalized1S"] = lambda reply: (
            (1 - estimator({"greedy_texts": [reply]})[0]) / 100
        )
    if uqlm is not None:
        judge = types.SimpleNamespace(scoring_template="continuous")
        read = uqlm["judge"]._extract_score_from_text
        readers["uqlm LLMJudge continuous"] = lambda reply: read(judge, reply)
    if (root := find_anchor(sites, "TruthTorchLM")) is not None:
        extract = load_truthtorchlm(root).extract_confidence
        readers["TruthTorchLM VerbalizedConfidence"] = lambda reply: extract(None, reply) / 100
    return readers


def read_safely(reader: Any, reply: str) -> float | str:
    """A reader's value, or the exception it raised, by name."""
    try:
        return float(reader(reply))
    except Exception as error:  # noqa: BLE001  (an anchor's failure is a finding, not a crash of the bench)
        return f"raises {type(error).__name__}"


def same(a: float | str, b: float | str) -> bool:
    """Equal confidences to 1e-6 (values), or equal statuses."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6
    return a == b


def compare_verbalized(readers: dict[str, Any]) -> None:
    """Log, per reply of the shared corpus, ours and each anchor's reading, and which replies all accept
    with equal values; a mismatch with the split recorded in ``tests/helpers/second_pass_cases.py`` is a
    warning."""
    corpus = [*cases.VERBALIZED_AGREED, *cases.VERBALIZED_DIFFERENT]
    agreed = []
    log.info("Verbalized, %d replies: ours | %s", len(corpus), " | ".join(readers))
    for reply in corpus:
        value, status = parse_verbalized(reply)
        ours: float | str = value if status == "ok" else status
        theirs = [read_safely(reader, reply) for reader in readers.values()]
        if theirs and isinstance(ours, float) and all(same(ours, t) for t in theirs):
            agreed.append(reply)
        shown = [
            "NaN" if isinstance(t, float) and math.isnan(t) else f"{t:.6g}" if isinstance(t, float) else t
            for t in theirs
        ]
        ours_shown = f"{ours:.6g}" if isinstance(ours, float) else ours
        log.info("  %-30r %-12s | %s", reply, ours_shown, " | ".join(shown))
    log.info(
        "Accepted by ours and every anchor with equal values: %d of %d replies: %s",
        len(agreed),
        len(corpus),
        ", ".join(map(repr, agreed)),
    )
    if readers and set(agreed) != set(cases.VERBALIZED_AGREED):
        log.warning(
            "The recorded agreement (VERBALIZED_AGREED) differs from the measured one: recorded %s",
            sorted(cases.VERBALIZED_AGREED),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--site", type=Path, action="append", default=[], help="a site-packages holding anchors"
    )
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("saltbench").setLevel(logging.WARNING)
    lmp_root, uqlm_root = find_anchor(args.site, "lm_polygraph"), find_anchor(args.site, "uqlm")
    for name, root in (
        ("lm-polygraph", lmp_root),
        ("uqlm", uqlm_root),
        ("TruthTorchLM", find_anchor(args.site, "TruthTorchLM")),
    ):
        log.info("%s: %s", name, root or "not found (skipped)")
    lmp = load_lmpolygraph(lmp_root) if lmp_root is not None else None
    uqlm = load_uqlm(uqlm_root) if uqlm_root is not None else None
    rng = np.random.default_rng(args.seed)
    compare_p_true_coinciding(
        lmp, uqlm, np.concatenate([[1e-6, 0.5, 1 - 1e-6], rng.uniform(0, 1, args.cases)])
    )
    for lift in (0.0, 4.0):
        compare_p_true_rankings(lmp, uqlm, rng, args.cases, lift)
    compare_verbalized(verbalized_readers(lmp, uqlm, args.site))


if __name__ == "__main__":
    main()
