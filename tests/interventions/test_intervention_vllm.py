"""The intervention runner through vLLM gives the transformers runner's table (SmolLM2, CPU, float32)."""

from __future__ import annotations

import numpy as np
import pytest

from saltbench.confidence import PAPER_CONFIDENCE_NAMES as CONFIDENCE_NAMES
from saltbench.inference import get_model_spec, load_model_registry
from saltbench.inference.hf import HfModel
from saltbench.inference.vllm import VllmModel
from saltbench.interventions import InterventionOptions
from saltbench.stages.interventions import INTERVENTION_FILE_COLUMNS, run_interventions
from saltbench.tasks import get_task

pytestmark = [pytest.mark.model, pytest.mark.vllm]


@pytest.fixture(scope="module")
def tables(smollm2_model, smollm2_vllm, repo_root):
    spec = get_model_spec(load_model_registry(repo_root / "config" / "models.yaml"), "smollm2-135m")
    rows = get_task("kronecker").generate(
        2, seed=3, output_lengths=[16], prefer_2d_probability=1.0, value_min=1, value_max=9
    )
    options = InterventionOptions.from_dict(
        {
            "enabled": True,
            "models": ["smollm2-135m"],
            "tasks": ["kronecker"],
            "position_fractions": [0.25, 0.75],
            "corruption_counts": [0, 1, 2],
            "placements": ["random", "local"],
            "next_atoms": 2,
        }
    )
    model, tokenizer = smollm2_model
    hf = run_interventions(HfModel(spec, tokenizer, model, 16, 20), rows, options, model_name="smollm2-135m")
    engine = VllmModel(spec, smollm2_vllm.tokenizer, smollm2_vllm, 16, 20)
    vl = run_interventions(engine, rows, options, model_name="smollm2-135m")
    return hf, vl


def test_same_rows_and_outcomes(tables):
    hf, vl = tables
    assert hf.height == vl.height > 8
    assert vl.schema == hf.schema == INTERVENTION_FILE_COLUMNS
    for column in (
        "sample_id",
        "position",
        "n_corrupted",
        "placement",
        "prefix",
        "continuation",
        "next_atom",
        "next_status",
        "next_correct",
        "next_m_accuracy",
        "finish_reason",
        "tf_n_tokens",
        "next_n_tokens",
    ):
        assert vl[column].to_list() == hf[column].to_list(), column


def test_log_probabilities_and_confidences_agree(tables):
    hf, vl = tables
    columns = ["tf_logprob_correct", "tf_logprob_with_gap"]
    columns += [f"topk.{name}" for name in CONFIDENCE_NAMES]
    columns += [f"full.{name}" for name in CONFIDENCE_NAMES if "entropy" not in name]
    for column in columns:
        a, b = hf[column].to_numpy(), vl[column].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b)), column
        assert np.nanmax(np.abs(a - b) / np.maximum(1.0, np.abs(a)), initial=0.0) < 1e-3, column
    for name in ("mean_entropy", "max_entropy"):  # not returned by vLLM: missing, never made up
        assert vl[f"full.{name}"].is_nan().all()


def test_target_covered_by_the_prefix_cache_is_scored_again(smollm2_model, smollm2_vllm, caplog):
    """A target whose positions an earlier request left in vLLM's prefix cache (cached positions get no
    prompt log-probabilities) is re-run without the cache: the teacher-forced values still equal
    transformers' teacher forcing."""
    import logging

    from saltbench.inference import encode_prompt, render_prompts, teacher_force
    from saltbench.inference.vllm.forced import vllm_force_and_continue

    model, tokenizer = smollm2_model
    block = smollm2_vllm.llm.llm_engine.vllm_config.cache_config.block_size
    (prompt,) = render_prompts(tokenizer, [get_task("dna").prompt("AGA GCT AAG")])
    prompt_ids = encode_prompt(tokenizer, prompt)
    filler = tokenizer(" TCT CGA TTC" * 40, add_special_tokens=False)["input_ids"]
    n = (-len(prompt_ids) - 1) % block + block  # prompt + prefix ends one token before a block boundary
    prefix, target = filler[:n], filler[n : n + 3]
    vllm_force_and_continue(
        smollm2_vllm, prompt_ids, [(prefix + target + filler[:block], [])], max_new_tokens=1
    )
    with caplog.at_level(logging.DEBUG, logger="saltbench.inference.vllm.forced"):
        (row,) = vllm_force_and_continue(smollm2_vllm, prompt_ids, [(prefix, target)], max_new_tokens=0)
    assert "run again without it" in caplog.text
    forced = teacher_force(model, tokenizer, prompt_ids + prefix, target)
    assert np.abs(row.target_logprobs - forced.chosen_logprobs).max() < 1e-3
