"""Imported draws (docs/backends.md §9.7): a JSONL line's ``draws`` become the model's draws tables when the
run asks for draws, with the same contract as sampled ones, and feed the consistency columns; what cannot be
imported is refused naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from helpers.inspect_logs import write_samples

from saltbench.core.contracts import DRAWS
from saltbench.evaluation import CONSISTENCY_COLUMNS
from saltbench.inference.imports import GenerationsFileError
from saltbench.stages.consistency import with_draw_consistency
from saltbench.stages.generation import build_prompts
from saltbench.stages.imports import import_generations
from saltbench.stages.scoring import score_generations
from saltbench.tasks import get_task

FENCE = "********"


@pytest.fixture(scope="module")
def dataset() -> pl.DataFrame:
    return get_task("dna").generate(3, 11, min_codons=3, max_codons=6)


def fenced(body: str) -> str:
    return f"{FENCE}\n{body}\n{FENCE}"


def line(sample_id: str, text: str, draws: list[dict] | None = None) -> dict:
    tokens = [text[:9], text[9:]]
    out: dict = {
        "sample_id": sample_id,
        "style": "direct",
        "text": text,
        "tokens": tokens,
        "logprobs": [-0.1, -0.2],
    }
    if draws is not None:
        out["draws"] = draws
    return out


def draw(text: str) -> dict:
    return {"text": text, "tokens": [text], "logprobs": [-0.5], "finish_reason": "stop"}


def write_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def imported(path: Path, dataset: pl.DataFrame, n_draws: int):
    return import_generations(
        path, "jsonl", {"dna": dataset}, model_name="m", styles=["direct"], n_shots=None, n_draws=n_draws
    )


def with_draws(dataset: pl.DataFrame, count: int = 3) -> list[dict]:
    """Each row answered with its reference; its draws: the reference, a wrong first codon, no answer."""
    rows = []
    for sample_id, reference in dataset.select("sample_id", "reference").iter_rows():
        answer = reference.strip()
        wrong = "AAA" + answer[3:] if not answer.startswith("AAA") else "CCC" + answer[3:]
        drawn = [draw(fenced(answer)), draw(fenced(wrong)), {"text": "", "finish_reason": "length"}]
        rows.append(line(sample_id, fenced(answer), drawn[:count]))
    return rows


def test_jsonl_draws_become_draws_tables_and_consistency_columns(dataset, tmp_path):
    path = write_lines(tmp_path / "m.jsonl", with_draws(dataset))
    result = imported(path, dataset, n_draws=3)
    draws = result.draws[("direct", "dna")]
    DRAWS.validate(draws, "imported draws")
    assert draws.height == 9 and draws["draw"].to_list() == [0, 1, 2] * 3
    assert draws["sample_id"].to_list() == [s for s in dataset["sample_id"].to_list() for _ in range(3)]
    assert draws["finish_reason"].to_list()[:3] == ["eos", "eos", "length"]
    assert result.record["draws"] == 9
    units = score_generations(result.frames[("direct", "dna")], dataset, "dna")
    scored = with_draw_consistency(units.with_columns(task=pl.lit("dna")), draws, scoring={})
    atoms = scored.filter(pl.col("granularity") == "atom").sort("sample_id", "unit_index")
    first = atoms.filter(pl.col("unit_index") == 0)[CONSISTENCY_COLUMNS[0]].to_list()
    later = atoms.filter(pl.col("unit_index") > 0)[CONSISTENCY_COLUMNS[0]].to_list()
    assert first == [1 / 3] * 3 and set(later) == {2 / 3}  # the wrong draw differs at the first codon only


def test_a_run_without_draws_reads_none_and_records_none(dataset, tmp_path):
    path = write_lines(tmp_path / "m.jsonl", with_draws(dataset))
    result = imported(path, dataset, n_draws=0)
    assert result.draws == {} and "draws" not in result.record


def test_the_first_n_draws_are_kept_and_too_few_are_refused(dataset, tmp_path):
    path = write_lines(tmp_path / "m.jsonl", with_draws(dataset))
    assert imported(path, dataset, n_draws=2).draws[("direct", "dna")]["draw"].to_list() == [0, 1] * 3
    with pytest.raises(GenerationsFileError, match=r"line 1: 3 draws, the run asks for 4 per prompt"):
        imported(path, dataset, n_draws=4)


def test_a_file_without_draws_gives_empty_tables_with_a_warning(dataset, tmp_path, caplog):
    rows = [line(s, fenced(r.strip())) for s, r in dataset.select("sample_id", "reference").iter_rows()]
    result = imported(write_lines(tmp_path / "m.jsonl", rows), dataset, n_draws=3)
    draws = result.draws[("direct", "dna")]
    DRAWS.validate(draws, "imported draws")
    assert draws.height == 0 and result.record["draws"] == 0 and "carries none" in caplog.text


def test_an_error_row_without_draws_gets_n_error_draws(dataset, tmp_path):
    rows = with_draws(dataset)
    rows[0] = {
        "sample_id": rows[0]["sample_id"],
        "style": "direct",
        "text": "",
        "finish_reason": "error",
        "error": "HTTP 500",
    }
    draws = imported(write_lines(tmp_path / "m.jsonl", rows), dataset, n_draws=3).draws[("direct", "dna")]
    assert draws["finish_reason"].head(3).to_list() == ["error"] * 3
    assert draws["error"].head(3).to_list() == ["HTTP 500"] * 3


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"text": "x", "sample_id": "s"}, r"line 1 draw 0: unknown key\(s\) \['sample_id'\]"),
        ({"text": "x", "draws": []}, r"line 1 draw 0: unknown key\(s\) \['draws'\]"),
        ("x", "line 1 draw 0: expected a JSON object"),
    ],
)
def test_a_draw_with_its_own_identity_is_refused(dataset, tmp_path, entry, message):
    rows = with_draws(dataset)
    rows[0]["draws"][0] = entry
    with pytest.raises(GenerationsFileError, match=message):
        imported(write_lines(tmp_path / "m.jsonl", rows), dataset, n_draws=3)
    rows[0]["draws"] = {"text": "x"}
    with pytest.raises(GenerationsFileError, match="'draws' must be a list of objects"):
        imported(write_lines(tmp_path / "m.jsonl", rows), dataset, n_draws=3)


def write_epochs_log(path: Path, dataset: pl.DataFrame, texts: list[str]) -> Path:
    """An inspect_ai log answering every row once per text of ``texts`` (epochs 1, 2, ..., last first)."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput

    prompts = build_prompts(dataset, "direct", None)
    samples = []
    for epoch in reversed(range(1, len(texts) + 1)):
        for prompt, (sample_id, reference) in zip(
            prompts, dataset.select("sample_id", "reference").iter_rows()
        ):
            text = texts[epoch - 1].format(answer=reference.strip())
            choice = ChatCompletionChoice(message=ChatMessageAssistant(content=text), stop_reason="stop")
            output = ModelOutput(model="m", choices=[choice])
            samples.append(
                EvalSample(id=sample_id, epoch=epoch, input=prompt, target=reference, output=output)
            )
    return write_samples(path, samples)


def test_inspect_epochs_after_the_first_are_the_draws(dataset, tmp_path):
    pytest.importorskip("inspect_ai")
    texts = [fenced("{answer}"), fenced("AAA"), "no answer"]
    path = write_epochs_log(tmp_path / "m.eval", dataset, texts)
    result = import_generations(
        path, "inspect", {"dna": dataset}, model_name="m", styles=["direct"], n_shots=None, n_draws=2
    )
    greedy = result.frames[("direct", "dna")]
    assert greedy["text"].to_list() == [fenced(r.strip()) for r in dataset["reference"].to_list()]
    draws = result.draws[("direct", "dna")]
    DRAWS.validate(draws, "imported draws")
    assert draws["text"].to_list() == [fenced("AAA"), "no answer"] * 3
    # without draws asked, the later epochs are not read (formerly: refused as second responses)
    plain = import_generations(
        path, "inspect", {"dna": dataset}, model_name="m", styles=["direct"], n_shots=None
    )
    assert plain.frames[("direct", "dna")].equals(greedy) and plain.draws == {}
