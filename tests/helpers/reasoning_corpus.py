"""Model outputs shaped like the reasoning and chain-of-thought families of config/paper.yaml, for the DNA
prompt whose reference is ``TCT CGA`` (docs/reasoning.md §1 gives the shapes family by family).

Each :class:`Case` is a whole decoded generation as a backend records it, its finish reason, the registry's
reasoning format for that model, and what scoring must find: the response status and the atom precision.
:func:`cut_traces` cuts every case at every few characters, with ``finish_reason="length"``, as a token
budget would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from saltbench.tasks import FENCE, FENCE_INSTRUCTION

REFERENCE = "TCT CGA"
ANSWER = f"{FENCE}\n{REFERENCE}\n{FENCE}"
QUOTE = f"print '{FENCE}' on a line of its own"


@dataclass(frozen=True)
class Case:
    """One output: ``family`` (what it imitates), ``text``, ``finish_reason``, the model's ``reasoning``
    format, and the expected ``status`` and atom ``precision``."""

    family: str
    text: str
    reasoning: str | None
    status: str
    precision: float
    finish_reason: str = "eos"


QWEN3_THINKING = (
    "<think>\nOkay, the user wants the complement of AGA GCT. A pairs with T, G with C. So AGA becomes TCT "
    f"and GCT becomes CGA. The instructions say I must {QUOTE} before the answer and again after it, so I "
    f"will write '{FENCE}', then TCT CGA, then '{FENCE}'.\n</think>\n\n{ANSWER}"
)
R1_DISTILL = (  # the template opens <think> in the prompt: the output starts inside the thinking
    "Alright, I need to complement each base: A->T, G->C, C->G, T->A. AGA -> TCT, GCT -> CGA. I should wrap "
    f"it in {FENCE}.\n</think>\n\n{ANSWER}"
)
RESTATED = (  # the thinking restates the fence instruction, quoting the fence three times
    f"<think>\nThe instruction: {FENCE_INSTRUCTION}\nSo the fences are '{FENCE}' lines. AGA GCT -> TCT CGA. "
    "Any other layout is wrong.\n</think>\n\n" + ANSWER
)
HARMONY = (  # gpt-oss, decoded with its channel markers
    "<|channel|>analysis<|message|>We need complement: AGA->TCT, GCT->CGA. Must print "
    f"'{FENCE}' lines around.<|end|><|start|>assistant<|channel|>final<|message|>{ANSWER}<|return|>"
)
HARMONY_STRIPPED = (  # the same decoded without its special tokens, as most harness logs hold it
    HARMONY.replace("<|channel|>", "")
    .replace("<|message|>", "")
    .replace("<|end|>", "")
    .replace("<|start|>", "")
    .replace("<|return|>", "")
)
PHI4_REASONING = (
    f"<think>Complement of AGA GCT. Instructions: print '{FENCE}' before and after. A-T, G-C. Result TCT CGA."
    f"</think>\n{ANSWER}"
)
PLAIN_COT = (  # a chain-of-thought model without a reasoning format, quoting the fence once in prose
    f"Let me think step by step. I must {QUOTE} before and after the answer. A->T, G->C, so "
    f"AGA -> TCT and GCT -> CGA.\n{ANSWER}"
)

CASES: tuple[Case, ...] = (
    Case("qwen3 thinking", QWEN3_THINKING, "think", "answered", 1.0),
    Case(
        "qwen3 thinking, empty thinking block", f"<think>\n\n</think>\n\n{ANSWER}", "think", "answered", 1.0
    ),
    Case("qwen3 non-thinking", ANSWER, None, "answered", 1.0),
    Case("r1 distill (template opens <think>)", R1_DISTILL, "think", "answered", 1.0),
    Case("thinking restates the instruction", RESTATED, "think", "answered", 1.0),
    Case("gpt-oss harmony", HARMONY, "harmony", "answered", 1.0),
    Case("gpt-oss harmony without special tokens", HARMONY_STRIPPED, "harmony", "answered", 1.0),
    Case("gpt-oss final channel only, without special tokens", f"final{ANSWER}", "harmony", "answered", 1.0),
    Case("phi-4-reasoning", PHI4_REASONING, "think", "answered", 1.0),
    Case("plain cot restating the instruction", PLAIN_COT, None, "answered", 1.0),
    Case("thinking that never ends, stopped", "<think>\nA pairs with T. Then", "think", "no_fence", 0.0),
    Case(
        "thinking, then an unfenced answer", "<think>\nEasy.\n</think>\n\nTCT CGA", "think", "no_fence", 1.0
    ),
    Case("harmony without a final channel", HARMONY.split("<|start|>")[0], "harmony", "no_fence", 0.0),
    Case(
        "harmony without special tokens nor a final channel",
        HARMONY_STRIPPED.split("assistant")[0],
        "harmony",
        "no_fence",
        0.0,
    ),
    Case("an error row", "", "think", "error", 0.0, finish_reason="error"),
)
"""Whole outputs. A closed reasoning block followed by an unfenced answer is scored like any unfenced
response (the authors' rule: the whole final content); thinking text is never scored."""


def cut_traces(step: int = 7) -> Iterator[tuple[Case, int]]:
    """Every reasoning case of :data:`CASES` cut after every ``step``-th character (``finish_reason
    "length"``), with the expected status: ``truncated`` unless the cut leaves the closing fence a fence
    (four of its eight ``*``), and the offset where the whole answer ends."""
    for case in CASES:
        if case.status != "answered" or case.reasoning is None:
            continue
        answer_end = case.text.rindex(ANSWER) + len(ANSWER)
        for cut in range(0, len(case.text), step):
            status = "answered" if cut >= answer_end - len(FENCE) + 4 else "truncated"
            yield replace(case, text=case.text[:cut], finish_reason="length", status=status), answer_end


__all__ = ["ANSWER", "CASES", "REFERENCE", "Case", "cut_traces"]
