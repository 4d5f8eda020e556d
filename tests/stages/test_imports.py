"""Bring your own generations (docs/backends.md §9): the three formats imported, the JSONL export read back
identically, and every refusal with its message."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from helpers.authors_cache import authors_prompt, pair_positions, vllm_positions, write_cache
from helpers.inspect_logs import write_samples

from saltbench.analysis import findings_markdown
from saltbench.data import load_paper_datasets
from saltbench.inference.backends import load_backend
from saltbench.inference.imports import GenerationsFileError, write_jsonl
from saltbench.inference.registry import ModelSpec
from saltbench.inference.simulated import SimulationParams
from saltbench.inference.sources import SimulatedSource
from saltbench.io import provenance, write_table
from saltbench.stages.export import export_generations
from saltbench.stages.generation import build_prompts, generate_rows
from saltbench.stages.imports import import_generations
from saltbench.stages.metrics import response_accuracy
from saltbench.stages.scoring import score_generations
from saltbench.tasks import get_task

STYLES = ["direct", "cot"]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict[str, pl.DataFrame]:
    return {
        "dna": get_task("dna").generate(4, 7, min_codons=3, max_codons=8),
        "matmul": get_task("matmul").generate(3, 7, output_lengths=[4]),
    }


@pytest.fixture(scope="module")
def native(datasets, tmp_path_factory) -> dict[tuple[str, str], pl.DataFrame]:
    """A simulated model's generations of every style and task (what a backend writes)."""
    folder = tmp_path_factory.mktemp("datasets")
    for task, frame in datasets.items():
        frame.write_parquet(folder / f"{task}.parquet")
    spec = ModelSpec(
        name="sim",
        source=SimulatedSource(parameters=SimulationParams(seed=2)),
        backend="simulated",
        chat_template="none",
    )
    model = load_backend(folder, spec)
    return {
        (style, task): generate_rows(
            model, frame, model_name="sim", style=style, n_shots=None, max_new_tokens=4096, progress=False
        )
        for style in STYLES
        for task, frame in datasets.items()
    }


def run_import(path: Path, fmt: str, datasets, styles=("direct",), **kwargs):
    return import_generations(
        path, fmt, datasets, model_name="sim", styles=list(styles), n_shots=None, **kwargs
    )


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def answers(datasets, style="direct") -> list[dict]:
    """One minimal JSONL response per row of ``style``: the fenced reference, one token per line."""
    rows = []
    for frame in datasets.values():
        for sample_id, reference in frame.select("sample_id", "reference").iter_rows():
            tokens = ["********\n", reference.strip(), "\n********"]
            rows.append(
                {
                    "sample_id": sample_id,
                    "style": style,
                    "text": "".join(tokens),
                    "tokens": tokens,
                    "logprobs": [-0.1, -0.2, -0.05],
                    "top_logprobs": [[-0.1, -2.5], [-0.2, -1.8], [-0.05, -3.0]],
                    "top_tokens": [["********\n", "x"], [reference.strip(), "y"], ["\n********", "z"]],
                }
            )
    return rows


def test_export_then_import_gives_the_same_tables(native, datasets, tmp_path):
    folder = tmp_path / "generations" / "sim"
    for (style, task), frame in native.items():
        (folder / style).mkdir(parents=True, exist_ok=True)
        write_table(frame, folder / style / f"{task}.parquet", provenance(stage="generations"), "generations")
    lines = export_generations([folder], tmp_path / "sim.jsonl")
    assert lines == sum(f.height for f in native.values())
    result = run_import(tmp_path / "sim.jsonl", "jsonl", datasets, styles=STYLES)
    assert set(result.frames) == set(native)
    for key, frame in native.items():
        assert result.frames[key].equals(frame), key
    assert result.record["imported"] == lines and result.record["without_logprobs"] == 0
    assert len(result.record["sha256"]) == 64


def test_the_export_keeps_minus_infinity_and_nan_apart(native, tmp_path):
    frame = native[("direct", "dna")]
    chosen = frame["chosen_logprob"].to_list()
    chosen[0][0] = float("-inf")
    entropy = [[float("nan")] * len(row) for row in frame["entropy"].to_list()]
    frame = frame.with_columns(
        pl.Series("chosen_logprob", chosen, dtype=pl.List(pl.Float32)),
        pl.Series("entropy", entropy, dtype=pl.List(pl.Float32)),
    )
    write_jsonl(frame, tmp_path / "x.jsonl")
    first = json.loads((tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["logprobs"][0] == -math.inf and first["entropy"][0] is None


def test_the_authors_cache_is_imported_with_its_logprob_shapes(datasets, tmp_path):
    """A cache envelope (version 1) as the authors' vLLM wrapper fills it: the rendered prompt, the stripped
    text, per position {token: logprob} with the generated token first — or vLLM's serialised Logprob."""
    rows = datasets["dna"]
    prompts = build_prompts(rows, "direct", None)
    results = []
    for k, (sample_id, reference) in enumerate(rows.select("sample_id", "reference").iter_rows()):
        tokens = ["\n", "********\n", *(f"{c} " for c in reference.strip().split()), "\n", "********"]
        tokens[-3] = tokens[-3].rstrip()
        shape = (
            (lambda t: {t: math.log(0.5), "§": math.log(0.3)})
            if k % 2
            else (
                lambda t: {
                    "17": {"logprob": math.log(0.5), "decoded_token": t},
                    "3": {"logprob": math.log(0.3)},
                }
            )
        )
        results.append(
            {
                "input": {"sample_id": sample_id, "input": rows["input"][k]},
                "prompt": f"<|im_start|>user\n{prompts[k]}<|im_end|>\n<|im_start|>assistant\n",
                "text": "".join(tokens).strip(),
                "logprobs": [shape(t) for t in tokens] if k < 3 else None,
            }
        )
    cache = {"version": 1, "payload": {"model": "Qwen/Qwen3-4B-Instruct-2507", "results": results}}
    path = tmp_path / "cache.json"
    path.write_text(json.dumps(cache, indent=2, ensure_ascii=False), encoding="utf-8")
    result = run_import(path, "salt_cache", {"dna": rows})
    frame = result.frames[("direct", "dna")]
    assert frame["text"].to_list()[0].startswith("\n********")  # the whitespace the wrapper stripped is back
    assert result.record["without_logprobs"] == 1
    assert frame["prompt"][0] == results[0]["prompt"]
    units = score_generations(frame, rows, "dna")
    atoms = units.filter(pl.col("granularity") == "atom")
    scored = atoms.filter(pl.col("sample_id") != rows["sample_id"][3])
    # §5.5's worked example: [ln .5, ln .3] renormalised over the top-k gives p = .625 for every token
    assert np.allclose(scored["topk.mean_probability"].to_numpy(), 0.625)
    assert scored["is_correct"].all()
    unscored = atoms.filter(pl.col("sample_id") == rows["sample_id"][3])
    assert unscored.height and unscored["topk.mean_probability"].is_nan().all()
    assert unscored["full.mean_probability"].is_nan().all() and unscored["is_correct"].all()
    counts = {"sim": (result.record["without_logprobs"], result.record["imported"])}
    page = findings_markdown({}, without_logprobs=counts)
    assert "**sim** — 1 of its 4 imported responses carry none" in page
    assert "rest on the units of the other 3" in page and "every confidence" not in page


def test_the_findings_say_every_confidence_is_absent_only_when_every_response_lacks_them():
    page = findings_markdown({}, without_logprobs={"a": (18, 18), "b": (2, 18), "c": (0, 18)})
    summary = page.split("## 1.")[0]
    assert "**a** — none of its 18 imported responses carries log-probabilities" in summary
    assert "every confidence absent, no confidence metric" in summary
    assert "**b** — 2 of its 18 imported responses carry none" in summary
    assert "other 16" in summary and "**c**" not in page
    assert page.count("**a**") == 2  # in the summary and in section 0


def test_every_log_probability_shape_the_authors_normaliser_reads_is_imported(datasets, tmp_path, caplog):
    """The README's layout {"model", "responses"}, rows found by their task input, and per row one shape:
    vLLM's serialised Logprob with an end-of-sequence position decoded as "", {id: [logprob, token]}, a list
    of [logprob, token] pairs — and bare numbers, whose token texts are unknown: accuracy only."""
    rows = datasets["dna"]
    results = []
    for k, (text, reference) in enumerate(rows.select("input", "reference").iter_rows()):
        tokens = ["\n", "********\n", *(f"{c} " for c in reference.strip().split()), "\n", "********"]
        tokens[-3] = tokens[-3].rstrip()
        half, alternatives = math.log(0.5), [[("§", math.log(0.3))] for _ in tokens]
        logprobs = [
            vllm_positions(
                tokens, [half] * len(tokens), [[(3, math.log(0.3))]] * len(tokens), [17] * len(tokens)
            ),
            pair_positions(tokens, [half] * len(tokens), alternatives),
            [[[half, t], [math.log(0.3), "§"]] for t in tokens],
            [half] * len(tokens),
        ][k]
        results.append({"input": text, "prompt": None, "text": "".join(tokens).strip(), "logprobs": logprobs})
    path = write_cache(
        tmp_path / "cache.json", {"model": "Qwen/Qwen3-4B-Instruct-2507", "responses": results}
    )
    result = run_import(path, "salt_cache", {"dna": rows})
    frame = result.frames[("direct", "dna")]
    assert frame["sample_id"].to_list() == rows["sample_id"].to_list()
    assert all(t.startswith("\n********") for t in frame["text"].to_list()[:3])  # unstripped, as generated
    assert frame["token_texts"][0][-1] == "" and frame["chosen_logprob"][0][-1] == pytest.approx(-0.0001)
    assert frame["text"][3] == results[3]["text"] and result.record["without_logprobs"] == 1
    assert "1 of 4 results have log-probabilities whose token texts are unknown" in caplog.text
    atoms = score_generations(frame, rows, "dna").filter(pl.col("granularity") == "atom")
    assert atoms["is_correct"].all()
    scored = atoms.filter(pl.col("sample_id") != rows["sample_id"][3])["topk.mean_probability"]
    assert np.allclose(scored.to_numpy(), 0.625)  # [ln .5, ln .3] renormalised, every shape alike
    assert atoms.filter(pl.col("sample_id") == rows["sample_id"][3])["topk.mean_probability"].is_nan().all()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"prompts": ["p"], "answers": ["a"]}, "layout not accepted"),
        ({"model": "m", "responses": []}, "layout not accepted"),
        ([{"sample_id": "S", "text": "ab", "logprobs": [{"a": -0.1}]}], "the token texts join to 'a'"),
        ([{"sample_id": "S", "text": "a", "logprobs": ["a"]}], "logprobs position 0: unsupported shape str"),
        ([{"sample_id": "S", "text": "a", "logprobs": [{"a": "x"}]}], "the value for 'a' is neither"),
        ([{"sample_id": "S", "text": "a", "logprobs": [[-0.5, [1]]]}], "a list that is neither"),
        ([{"text": "a", "logprobs": None}], "neither a sample id, a prompt nor an input"),
    ],
)
def test_the_cache_shapes_it_cannot_read_are_refused_by_name(datasets, tmp_path, payload, message):
    path = write_cache(tmp_path / "cache.json", payload)
    with pytest.raises(GenerationsFileError, match=message) as caught:
        run_import(path, "salt_cache", datasets)
    assert str(path) in str(caught.value)


PAPER = Path(__file__).resolve().parents[2] / "reference" / "paper_data"


@pytest.fixture(scope="module")
def paper_rows() -> dict[str, pl.DataFrame]:
    """The first rows of three of the authors' reproduction datasets (Code's first two rows are identical)."""
    frames = load_paper_datasets(PAPER, tasks=("dna", "code", "words"))
    return {"dna": frames["dna"].head(3), "code": frames["code"].head(4), "words": frames["words"].head(2)}


def authors_results(rows: dict[str, pl.DataFrame], n_shots: int | None = None) -> list[dict]:
    """One authors'-style result per row, in a shuffled order: their prompt, the fenced reference, no sample
    id; every other one carries the dataset row as its input, as a caller passes it."""
    results = []
    for task, frame in rows.items():
        for row in frame.iter_rows(named=True):
            prompt = authors_prompt(task, row["variant"], row["input"], n_shots)
            source = {"task": row["source_task"], "input": row["input"], "reference": row["reference"]}
            text = f"********\n{row['reference'].strip()}\n********"
            results.append({"input": source if len(results) % 2 else None, "prompt": prompt, "text": text})
    return results[::-1]


def test_an_authors_cache_with_their_own_prompts_is_matched_without_sample_ids(paper_rows, tmp_path):
    results = authors_results(paper_rows)
    ours = {p for task, f in paper_rows.items() for p in build_prompts(f, "direct", None)}
    assert not any(r["prompt"] in ours for r in results)  # not saltbench's instructions
    path = write_cache(tmp_path / "cache.json", {"model": "m", "results": results, "logprobs": "none"})
    result = run_import(path, "salt_cache", paper_rows)
    assert result.record["imported"] == 9 and result.record["skipped"] == 0
    for task, frame in paper_rows.items():
        imported = result.frames[("direct", task)]
        assert imported["sample_id"].to_list() == frame["sample_id"].to_list()
        prompts = [authors_prompt(task, v, i) for v, i in frame.select("variant", "input").iter_rows()]
        assert imported["prompt"].to_list() == prompts
        assert score_generations(imported, frame, task)["is_correct"].all()
    with pytest.raises(
        GenerationsFileError, match=r"the run has prompt styles \['direct', 'cot'\]: give 'style'"
    ):
        run_import(path, "salt_cache", paper_rows, styles=STYLES)


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("other shots", r"payload\[0\]: the prompt matches no dataset row's prompt .*n_shots must"),
        (
            "third twin",
            r"payload\[9\]: a response too many for the identical rows \['paper-code-00000', "
            r"'paper-code-00001'\] \(direct\); they are answered at payload\[\d\], payload\[\d\]",
        ),
        ("other input", r"payload\[1\]: the prompt and the input name different dataset rows"),
        ("no such input", r"payload\[1\]: the input 'ACG' is no row's input in the run's datasets"),
        ("unknown task", r"payload\[1\]: the input's task 'RNAProblem' names no task"),
    ],
)
def test_an_authors_cache_that_fits_no_row_or_too_many_is_refused(paper_rows, tmp_path, how, message):
    results = authors_results(paper_rows, n_shots=1 if how == "other shots" else None)
    if how == "third twin":
        twin = authors_prompt("code", paper_rows["code"]["variant"][0], paper_rows["code"]["input"][0])
        results.append(next(r for r in results if r["prompt"] == twin))
    elif how == "other input":
        results[1]["input"] = {"task": "DNAProblem", "input": paper_rows["dna"]["input"][2]}
    elif how == "no such input":
        results[1] = {**results[1], "prompt": None, "input": "ACG"}
    elif how == "unknown task":
        results[1]["input"]["task"] = "RNAProblem"
    with pytest.raises(GenerationsFileError, match=message):
        run_import(write_cache(tmp_path / "cache.json", results), "salt_cache", paper_rows)


def test_a_chat_wrapped_instruction_without_sample_id_is_matched_with_its_style(datasets, tmp_path):
    rows = answers(datasets, "cot")
    prompts = [p for frame in datasets.values() for p in build_prompts(frame, "cot", None)]
    for row, prompt in zip(rows, prompts):
        del row["sample_id"], row["style"]
        row["prompt"] = f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
    lines = answers(datasets, "direct") + rows  # the cot responses' style: the instruction their prompt holds
    result = run_import(write_lines(tmp_path / "g.jsonl", lines), "jsonl", datasets, styles=STYLES)
    assert result.record["imported"] == len(lines) and result.record["skipped"] == 0
    assert result.frames[("cot", "dna")]["prompt"].to_list() == [r["prompt"] for r in rows[:4]]


def test_a_cache_of_another_version_is_refused(datasets, tmp_path):
    path = tmp_path / "cache.json"
    path.write_text(json.dumps({"version": 2, "payload": []}), encoding="utf-8")
    with pytest.raises(GenerationsFileError, match="cache version 2, only 1 is read"):
        run_import(path, "salt_cache", datasets)


def _break(rows: list[dict], datasets, how: str) -> list[dict]:
    if how == "unknown id":
        rows[1]["sample_id"] = "dna-nowhere"
    elif how == "duplicate":
        rows.append(dict(rows[0]))
    elif how == "missing":
        rows.pop(2)
    elif how == "prompt differs":
        rows[1]["prompt"] = build_prompts(datasets["dna"].slice(1, 1), "direct", None)[0].replace(
            "DNA", "RNA"
        )
    elif how == "unmatched prompt":
        rows[1] = {k: v for k, v in rows[1].items() if k != "sample_id"} | {"prompt": "What is 2 + 2?"}
    elif how == "unknown key":
        rows[1]["logprob"] = rows[1].pop("logprobs")
    elif how == "tokens":
        rows[1]["tokens"] = rows[1]["tokens"][:-1]
    elif how == "reasoning":
        rows[1]["reasoning"] = "Let me think."
    elif how == "style":
        rows[1]["style"] = "verbose"
    return rows


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("unknown id", r"line 2: sample id 'dna-nowhere' is not in the run's datasets"),
        ("duplicate", r"line 8: a second response to sample '[^']+' \(direct\); the first is at line 1"),
        ("missing", r": no response to 1 of the 4 dna rows the run answers in the direct style"),
        ("prompt differs", r"line 2: the prompt differs from the row's direct prompt \(first difference at"),
        ("unmatched prompt", r"line 2: the prompt matches no dataset row's prompt in any style"),
        ("unknown key", r"line 2: unknown key\(s\) \['logprob'\]"),
        ("tokens", r"line 2: the token texts join to"),
        (
            "reasoning",
            r"line 2: reasoning is given apart from the text, but the model declares no reasoning_format",
        ),
        ("style", r"line 2: style 'verbose' is not a prompt style"),
    ],
)
def test_each_problem_of_a_jsonl_file_is_refused_naming_file_line_and_reason(
    datasets, tmp_path, how, message
):
    path = write_lines(tmp_path / "gens.jsonl", _break(answers(datasets), datasets, how))
    with pytest.raises(GenerationsFileError, match=message) as caught:
        run_import(path, "jsonl", datasets)
    assert str(caught.value).startswith(str(path))


def test_a_line_that_is_not_json_is_refused_with_its_number(datasets, tmp_path):
    path = write_lines(tmp_path / "gens.jsonl", answers(datasets))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4][:-3]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(GenerationsFileError, match=r"gens.jsonl: line 5: not JSON \("):
        run_import(path, "jsonl", datasets)


def test_rows_are_matched_by_prompt_digest_and_other_styles_skipped(datasets, tmp_path):
    rows = answers(datasets)
    for row, prompt in zip(rows, [p for f in datasets.values() for p in build_prompts(f, "direct", None)]):
        del row["sample_id"], row["style"]
        row["prompt"] = prompt
    cot = answers(datasets, "cot")[:2]  # a style the run does not use: skipped
    result = run_import(write_lines(tmp_path / "g.jsonl", rows + cot), "jsonl", datasets)
    assert result.record["skipped"] == 2 and result.record["imported"] == len(rows)
    assert (
        result.frames[("direct", "matmul")]["sample_id"].to_list()
        == datasets["matmul"]["sample_id"].to_list()
    )


def test_reasoning_returned_apart_is_put_back_in_the_models_format(datasets, tmp_path):
    rows = answers(datasets)
    rows[0]["reasoning"] = "The answer is ******** quoted."
    result = run_import(write_lines(tmp_path / "g.jsonl", rows), "jsonl", datasets, reasoning="think")
    frame = result.frames[("direct", "dna")]
    assert frame["text"][0].startswith("<think>The answer is ******** quoted.</think>\n\n********\n")
    units = score_generations(frame, datasets["dna"], "dna", reasoning="think")
    first = units.filter((pl.col("sample_id") == frame["sample_id"][0]) & (pl.col("granularity") == "atom"))
    assert first["is_correct"].all() and first["topk.mean_probability"].is_finite().all()
    assert first["num_reasoning_tokens"][0] == 1 and first["answer_status"][0] == "answered"


@pytest.mark.parametrize("reasoning", ["think", "harmony"])
@pytest.mark.parametrize("returned", ["", None])
def test_empty_reasoning_returned_apart_leaves_the_text_as_the_final_content(
    datasets, tmp_path, reasoning, returned
):
    """``"reasoning": ""`` (or null) from a harness that returns reasoning apart: a perfect fenced answer of a
    reasoning model scores 1.0, answered (not "a reasoning that never ended")."""
    rows = [row | {"reasoning": returned} for row in answers(datasets)]
    result = run_import(write_lines(tmp_path / "g.jsonl", rows), "jsonl", datasets, reasoning=reasoning)
    for task in datasets:
        frame = result.frames[("direct", task)]
        units = score_generations(frame, datasets[task], task, reasoning=reasoning)
        assert set(units["answer_status"].to_list()) == {"answered"}
        atoms = response_accuracy(units).filter(pl.col("granularity") == "atom")
        assert atoms["precision"].to_list() == [1.0] * frame.height
        assert units.filter(pl.col("granularity") == "atom")["topk.mean_probability"].is_finite().all()


def test_reasoning_not_returned_apart_leaves_the_text_as_the_model_wrote_it(datasets, tmp_path):
    """No ``reasoning`` key: the text is the raw output (a think model's text without ``</think>`` never
    ended its reasoning, as natively); empty reasoning beside a text holding its own ``<think>`` adds none."""
    rows = answers(datasets)
    rows[0]["reasoning"] = ""
    rows[0]["tokens"] = ["<think>quote '********'</think>\n\n", *rows[0]["tokens"][:2], "\n********"]
    rows[0]["text"] = "".join(rows[0]["tokens"])
    rows[0]["logprobs"] = [-0.3, *rows[0]["logprobs"]]
    rows[0]["top_logprobs"] = [[-0.3], *rows[0]["top_logprobs"]]
    rows[0]["top_tokens"] = [[rows[0]["tokens"][0]], *rows[0]["top_tokens"]]
    result = run_import(write_lines(tmp_path / "g.jsonl", rows), "jsonl", datasets, reasoning="think")
    frame = result.frames[("direct", "dna")]
    assert frame["text"][0] == rows[0]["text"] and frame["text"][1] == rows[1]["text"]
    statuses = score_generations(frame, datasets["dna"], "dna", reasoning="think")
    first = statuses.group_by("sample_id", maintain_order=True).agg(pl.col("answer_status").first())
    assert first["answer_status"].to_list() == ["answered"] + ["no_fence"] * (frame.height - 1)


def write_inspect_log(path: Path, rows: pl.DataFrame, error: str | None = None) -> Path:
    """An inspect_ai log of one sample per row, in the cot style: the fenced reference with log-probabilities
    (the first cut by max_tokens); or, given ``error``, every sample's output failed with it."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        ChatMessageUser,
        Logprob,
        Logprobs,
        ModelOutput,
        TopLogprob,
    )

    samples = []
    for k, (sample_id, reference) in enumerate(rows.select("sample_id", "reference").iter_rows()):
        tokens = ["********\n", reference.strip(), "\n********"]
        entries = [
            Logprob(
                token=t,
                logprob=math.log(0.5),
                bytes=list(t.encode()),
                top_logprobs=[
                    TopLogprob(token=t, logprob=math.log(0.5)),
                    TopLogprob(token="?", logprob=math.log(0.3)),
                ],
            )
            for t in tokens
        ]
        choice = ChatCompletionChoice(
            message=ChatMessageAssistant(content="".join(tokens)),
            stop_reason="stop" if k else "max_tokens",
            logprobs=Logprobs(content=entries),
        )
        prompt = build_prompts(rows.slice(k, 1), "cot", None)[0]
        samples.append(
            EvalSample(
                id=sample_id,
                epoch=1,
                input=[ChatMessageUser(content=prompt)],
                target=reference,
                output=ModelOutput(model="m", choices=[choice] if error is None else [], error=error),
            )
        )
    return write_samples(path, samples)


def test_an_inspect_ai_log_is_read_through_its_own_api(datasets, tmp_path):
    pytest.importorskip("inspect_ai")
    rows = datasets["matmul"]
    path = write_inspect_log(tmp_path / "salt.eval", rows)
    result = run_import(path, "inspect", {"matmul": rows}, styles=["cot"])
    frame = result.frames[("cot", "matmul")]
    assert frame["finish_reason"].to_list() == ["length", "eos", "eos"]
    units = score_generations(frame, rows, "matmul")
    assert np.allclose(
        units.filter(pl.col("granularity") == "atom")["topk.mean_probability"].to_numpy(), 0.625
    )
    assert result.record["skipped"] == 0 and result.record["imported"] == 3
    # no reasoning block: for a reasoning model the text is the final content, and the answers score 1.0
    thinking = run_import(path, "inspect", {"matmul": rows}, styles=["cot"], reasoning="think")
    units = score_generations(thinking.frames[("cot", "matmul")], rows, "matmul", reasoning="think")
    assert set(units["answer_status"].to_list()) == {"answered"}
    assert response_accuracy(units)["precision"].to_list() == [1.0] * (3 * 3)


def test_a_file_that_is_not_an_inspect_ai_log_is_refused(datasets, tmp_path):
    pytest.importorskip("inspect_ai")
    path = tmp_path / "none.eval"
    path.write_bytes(b"not a log")
    with pytest.raises(GenerationsFileError, match="not an inspect_ai log"):
        run_import(path, "inspect", datasets)


def test_an_inspect_ai_log_of_only_errors_is_refused_naming_the_first(datasets, tmp_path):
    pytest.importorskip("inspect_ai")
    path = write_inspect_log(tmp_path / "failed.eval", datasets["matmul"], error="401 invalid API key")
    with pytest.raises(GenerationsFileError) as caught:
        run_import(path, "inspect", {"matmul": datasets["matmul"]}, styles=["cot"])
    first = datasets["matmul"]["sample_id"][0]
    assert str(caught.value) == (
        f"{path}: every one of the 3 responses the run answers is an error row (the first, at sample "
        f"{first!r} epoch 1: '401 invalid API key'): there is nothing to score; import the file of a run "
        "that succeeded, or leave the model out"
    )


def test_some_error_rows_are_imported_with_a_warning_and_counted(datasets, tmp_path, caplog):
    rows = answers(datasets)
    rows[1] = {"sample_id": rows[1]["sample_id"], "text": "", "finish_reason": "error", "error": "timeout"}
    result = run_import(write_lines(tmp_path / "g.jsonl", rows), "jsonl", datasets)
    assert result.record["errors"] == 1 and result.record["without_logprobs"] == 0
    assert f"1 of the {len(rows)} responses the run answers are error rows" in caplog.text
    assert "the first, at line 2: 'timeout'" in caplog.text


@pytest.mark.parametrize("end", ["", "\n"])
def test_a_truncated_line_is_refused_at_its_real_column(datasets, tmp_path, end):
    path = write_lines(tmp_path / "gens.jsonl", answers(datasets))
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[-1] = lines[-1][:50]  # the last line cut, with or without its newline
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    message = (
        rf"line {len(lines)}: not JSON \(.*, column 51: the line ends before its object does, truncated\?\)"
    )
    with pytest.raises(GenerationsFileError, match=message):
        run_import(path, "jsonl", datasets)


def test_a_chat_wrapped_prompt_is_reported_at_its_real_first_difference(datasets, tmp_path):
    rows = answers(datasets)
    instruction = build_prompts(datasets["dna"].slice(1, 1), "direct", None)[0]
    at = instruction.index("DNA")
    header = "<|im_start|>user\n"
    rows[1]["prompt"] = f"{header}{instruction.replace('DNA', 'RNA')}<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(GenerationsFileError) as caught:
        run_import(write_lines(tmp_path / "g.jsonl", rows), "jsonl", datasets)
    assert (
        f"first difference at character {len(header) + at} of the file's prompt (character {at} of the "
        f"instruction, which starts at {len(header)}): file 'RNA" in str(caught.value)
    )
