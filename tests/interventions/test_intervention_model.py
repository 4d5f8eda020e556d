"""Interventions on the real SmolLM2-135M-Instruct (CPU, float32): teacher forcing agrees with free decoding.

Construction: the model answers a short DNA prompt freely after a forced fence line; its own first atoms
become the "reference". A clean intervention at any position ``k`` then forces exactly the model's own
tokens, so the greedy continuation must reproduce the free generation token for token, the next atom
is "correct", and the teacher-forced log-probability of ``a_k`` is the log-probability the model gave
it while generating.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from saltbench.evaluation import decompose
from saltbench.interventions import (
    FENCE_LINE,
    AnswerLayout,
    InterventionOptions,
    InterventionSpec,
    corruptor_for,
    plan_sample,
    render_prefix,
)
from saltbench.stages.interventions import (
    INTERVENTION_FILE_COLUMNS,
    SampleRun,
    intervention_shard,
    run_interventions,
    run_sample,
)
from saltbench.tasks import get_task

pytestmark = pytest.mark.model

DNA_INPUT = "AGA GCT AAG GCC TTA"
FREE_TOKENS = 24
BUDGET = 8


@pytest.fixture(scope="module")
def free(smollm2_model):
    """Prompt ids, the free generation after a forced fence line, and the model's own answer line."""
    from saltbench.inference import encode_prompt, generate, render_prompts

    model, tok = smollm2_model
    (prompt,) = render_prompts(tok, [get_task("dna").prompt(DNA_INPUT, n_shots=1)])
    prompt_ids = encode_prompt(tok, prompt)
    fence_ids = tok(FENCE_LINE, add_special_tokens=False)["input_ids"]
    (record,) = generate(model, tok, [prompt_ids + fence_ids], max_new_tokens=FREE_TOKENS, progress=False)
    answer = record.text.split("\n")[0]
    atoms = decompose(answer, "dna")
    assert len(atoms) >= 4 and answer == " ".join(atoms), record.text  # precondition of the construction
    return prompt_ids, fence_ids, record, answer


def _own_index(record, fence_ids, prefix_ids) -> int:
    """j such that the prefix is the fence plus the model's first j generated tokens (asserted)."""
    j = len(prefix_ids) - len(fence_ids)
    assert list(prefix_ids) == list(fence_ids) + record.token_ids[:j].tolist()
    return j


def test_clean_prefix_reproduces_free_generation(smollm2_model, smollm2_loaded, free):
    from saltbench.inference import encode_prompt_cache, greedy_continue_many
    from saltbench.inference.hf.forced import force_and_continue

    model, tok = smollm2_model
    prompt_ids, fence_ids, record, answer = free
    layout = AnswerLayout.from_reference(answer, "dna")
    ks = list(range(2, layout.n_atoms + 1))
    rendered = [render_prefix(layout, k, tokenizer=tok) for k in ks]
    own = [_own_index(record, fence_ids, r.token_ids) for r in rendered]  # prefix = the model's own tokens
    for r, j in zip(rendered, own):
        assert list(r.target_ids) == record.token_ids[j : j + len(r.target_ids)].tolist()

    # token for token: greedy after the teacher-forced prefix = the free generation (both decoders), and the
    # forced log-probabilities of prefix and target = the ones the model gave its own tokens
    conts = greedy_continue_many(
        model, tok, prompt_ids, [r.token_ids for r in rendered], BUDGET, batch_size=len(ks)
    )
    forced = force_and_continue(
        model,
        tok,
        prompt_ids,
        [(r.token_ids, r.target_ids) for r in rendered],
        max_new_tokens=BUDGET,
        cache=encode_prompt_cache(model, prompt_ids),
    )
    for c, f, r, j in zip(conts, forced, rendered, own):
        expected = record.token_ids[j : j + BUDGET].tolist()
        assert c.generation.token_ids.tolist() == expected == f.generation.token_ids.tolist()
        own_lp = record.chosen_logprobs
        np.testing.assert_allclose(f.generation.chosen_logprobs, own_lp[j : j + BUDGET], atol=2e-4)
        np.testing.assert_allclose(f.target_logprobs, own_lp[j : j + len(r.target_ids)], atol=2e-4)
        assert f.finish_reason == "length"
    # the forced pass in small chunks (several forward calls) gives the same numbers
    chunked = force_and_continue(
        model,
        tok,
        prompt_ids,
        [(r.token_ids, r.target_ids) for r in rendered],
        max_new_tokens=2,
        chunk_tokens=3,
    )
    for f, c in zip(forced, chunked):
        np.testing.assert_allclose(c.target_logprobs, f.target_logprobs, atol=2e-4)
        assert c.generation.token_ids.tolist() == f.generation.token_ids[:2].tolist()

    # the measured rows agree: next atom correct, teacher-forced log-prob = free-decoding log-prob
    specs = [InterventionSpec(k, 0, "clean", (), ()) for k in ks]
    rows = run_sample(
        smollm2_loaded,
        prompt_ids,
        layout,
        specs,
        task="dna",
        variant=None,
        reference=answer,
        run=SampleRun(next_atoms=2, max_new_tokens=BUDGET, batch_size=2),
    )
    for row, r, j in zip(rows, rendered, own):
        expected = "".join(record.token_texts[j:])
        assert expected.startswith(row["continuation"])  # decoding stopped once atoms k, k+1 were complete
        k, m_eff = row["position"], min(2, layout.n_atoms - row["position"] + 1)
        assert row["finish_reason"] == "stop"
        written = decompose(r.text + row["continuation"], "dna")
        assert "********" in row["continuation"] or len(written) == k + m_eff
        assert row["prefix"] == r.text and row["prefix_intact"] and row["canonical_cut"]
        assert row["next_correct"] and row["next_m_accuracy"] == 1.0
        assert row["next_atom"] == row["reference_atom"]
        free_lp = float(record.chosen_logprobs[j : j + len(r.target_ids)].sum())
        assert row["tf_logprob_correct"] == pytest.approx(free_lp, abs=2e-4)
        assert row["full.log_probability_sum"] == pytest.approx(free_lp, abs=2e-4)  # same tokens
        assert 0 < row["next_confidence"] <= 1 and row["next_n_tokens"] == len(r.target_ids)


def test_corrupted_prefixes_cache_reuse_and_teacher_forcing(smollm2_model, smollm2_loaded, free):
    from saltbench.inference import teacher_force

    model, tok = smollm2_model
    prompt_ids, _, _, answer = free
    layout = AnswerLayout.from_reference(answer, "dna")
    specs = plan_sample(
        layout,
        corruptor_for("dna"),
        sample_id="t",
        seed=0,
        position_fractions=(0.5, 1.0),
        corruption_counts=(0, 2),
        placements=("local", "distant"),
    )
    run = SampleRun(next_atoms=2, max_new_tokens=6, batch_size=3)
    reused = run_sample(
        smollm2_loaded, prompt_ids, layout, specs, task="dna", variant=None, reference=answer, run=run
    )
    plain = run_sample(
        smollm2_loaded,
        prompt_ids,
        layout,
        specs,
        task="dna",
        variant=None,
        reference=answer,
        run=SampleRun(next_atoms=2, max_new_tokens=6, batch_size=3, reuse_cache=False),
    )
    assert len(reused) == len(specs) == len(plain)
    for spec, a, b in zip(specs, reused, plain):
        for col in ("continuation", "next_correct", "next_status", "finish_reason"):
            assert a[col] == b[col], col
        for col in ("next_confidence", "tf_logprob_correct", "tf_logprob_with_gap", "topk.mean_entropy"):
            assert a[col] == pytest.approx(b[col], abs=2e-4, nan_ok=True), col
        sub = layout.substitute(spec.replacements)
        assert decompose(a["prefix"], "dna") == list(sub.atoms[: spec.position - 1])
        assert a["corrupted_fraction"] == spec.n_corrupted / (spec.position - 1)
        r = render_prefix(sub, spec.position, tokenizer=tok)
        direct = teacher_force(model, tok, list(prompt_ids) + list(r.token_ids), r.target_ids)
        assert a["tf_logprob_with_gap"] == pytest.approx(float(direct.chosen_logprobs.sum()), abs=2e-4)
        assert a["tf_logprob_correct"] == pytest.approx(
            float(direct.chosen_logprobs[np.asarray(r.target_atom_mask)].sum()), abs=2e-4
        )
    # local and distant corrupt the same atoms when c = k - 1 (the wrong value of an atom is fixed per sample)
    full = {}
    for row in reused:
        if row["n_corrupted"] == row["position"] - 1:
            full.setdefault(row["position"], []).append(row)
    assert full and all(len(group) == 2 for group in full.values())
    for local, distant in full.values():
        assert (local["placement"], distant["placement"]) == ("local", "distant")
        assert (local["prefix"], local["continuation"]) == (distant["prefix"], distant["continuation"])


def test_run_interventions_table(smollm2_loaded):
    rows = pl.DataFrame(
        {
            "sample_id": ["one-codon", "three-codons"],
            "task": ["dna", "dna"],
            "variant": [None, None],
            "input": ["GAT", "GAT ATG GCC"],
            "reference": ["CTA", "CTA TAC CGG"],
        },
        schema={
            "sample_id": pl.String,
            "task": pl.String,
            "variant": pl.String,
            "input": pl.String,
            "reference": pl.String,
        },
    )
    options = InterventionOptions(
        position_fractions=(1.0,),
        corruption_counts=(0, 1),
        placements=("local",),
        max_new_tokens=4,
        seed=1,
        next_atoms=2,
    )
    table = run_interventions(smollm2_loaded, rows, options, model_name="smollm2-135m", n_shots=1)
    assert table.schema == pl.Schema(INTERVENTION_FILE_COLUMNS)
    assert table["sample_id"].to_list() == ["three-codons", "three-codons"]  # 1 atom: no intervention
    assert table["placement"].to_list() == ["clean", "local"] and table["position"].to_list() == [3, 3]
    assert table["next_m"].to_list() == [1, 1] and table["model"].unique().to_list() == ["smollm2-135m"]
    assert table["corrupted_positions"].to_list() == [[], [2]]
    assert table["prefix"][0] == "********\nCTA TAC"


def test_tiny_char_model_through_the_workflow_stage(tmp_path):
    """The salt-tiny kind (character tokenizer, own chat template, 512-token context), untrained weights,
    through :func:`intervention_shard` exactly as the workflow calls it."""
    import string

    from saltbench.inference import LocalSource
    from saltbench.inference import ModelSpec as RegistrySpec
    from saltbench.training.model import ArchitectureSpec, build_model
    from saltbench.training.tokenizer import build_char_tokenizer

    tok = build_char_tokenizer([string.printable + "·⊗∧∨¬→↔"])
    model = build_model(
        ArchitectureSpec(d_model=32, n_layers=1, n_heads=2, d_ff=64, max_positions=512), tok, seed=0
    )
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    frames = [
        get_task("matmul").generate(1, 3, output_lengths=[4], min_inner_dim=2, max_inner_dim=2),
        get_task("words").generate(2, 3, min_words=30, max_words=60, min_needles=3, subjects=["numbers"]),
    ]
    options = InterventionOptions(
        position_fractions=(0.5, 1.0), corruption_counts=(0, 1), seed=0, batch_size=4
    )
    spec = RegistrySpec(
        name="tiny", source=LocalSource(path=str(tmp_path)), system_prompt="unused", max_context=512
    )
    for rows in frames:
        table = intervention_shard(
            rows, options, model_name="tiny", model_path=tmp_path, spec=spec, n_shots=None
        )
        assert table.schema == pl.Schema(INTERVENTION_FILE_COLUMNS) and table.height > 0
        assert table["canonical_cut"].all() and table["prefix"].str.starts_with("********\n").all()
        assert table["tf_logprob_correct"].is_finite().all() and (table["tf_logprob_correct"] < 0).all()
        assert set(table["finish_reason"]) <= {"stop", "eos", "length"}
        for prefix, k, task, variant in table.select("prefix", "position", "task", "variant").iter_rows():
            assert len(decompose(prefix, get_task(task, variant))) == k - 1
