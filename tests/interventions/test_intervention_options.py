"""The ``interventions:`` config block, shard selection and merging."""

from __future__ import annotations

import dataclasses

import jsonschema
import polars as pl
import pytest

from saltbench.interventions import (
    CONFIG_SCHEMA,
    INTERVENTION_SCHEMA,
    InterventionOptions,
    empty_interventions,
    merge_intervention_shards,
    select_shard,
)

ANALYSIS_COLUMNS = (
    "model", "task", "sample_id", "n_atoms", "position", "position_fraction", "n_corrupted",
    "corrupted_fraction", "placement", "next_correct", "next_m_accuracy", "next_confidence",
    "tf_logprob_correct",
)  # fmt: skip


def test_schema_defaults_match_the_dataclass():
    jsonschema.Draft202012Validator.check_schema(CONFIG_SCHEMA)
    defaults = {k: v["default"] for k, v in CONFIG_SCHEMA["properties"].items()}
    jsonschema.validate(defaults, CONFIG_SCHEMA)
    built = InterventionOptions.from_config({"seed": 0}).as_dict()
    for field in dataclasses.fields(InterventionOptions):
        default = defaults[field.name]
        expected = tuple(default) if isinstance(default, list) else default
        if field.name == "seed":
            expected = 0
        assert built[field.name] == expected, field.name
        assert field.default == expected or field.name in ("seed",), field.name


def test_from_config_resolves_top_level_keys():
    config = {
        "seed": 42,
        "models": ["smollm2-135m"],
        "tasks": ["dna", "logic"],
        "interventions": {"enabled": True, "corruption_counts": [0, 3], "placements": ["local"]},
    }
    options = InterventionOptions.from_config(config)
    assert options.enabled and options.models == ("smollm2-135m",) and options.tasks == ("dna", "logic")
    assert options.seed == 42 and options.corruption_counts == (0, 3) and options.placements == ("local",)
    block = {"models": ["m"], "tasks": ["words"], "seed": 5}
    own = InterventionOptions.from_config({**config, "interventions": block})
    assert (own.models, own.tasks, own.seed) == (("m",), ("words",), 5)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"placement": ["local"]}, "unknown key"),
        ({"placements": ["nearby"]}, "placements"),
        ({"placements": []}, "placements"),
        ({"positions": [1]}, "positions"),
        ({"position_fractions": [0.0]}, "position_fractions"),
        ({"position_fractions": [], "positions": []}, "both empty"),
        ({"corruption_counts": [-1]}, "corruption_counts"),
        ({"next_atoms": 0}, "next_atoms"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"boundary": "line"}, "boundary"),
        ({"style": "chat"}, "style"),
    ],
)
def test_bad_values_name_the_key(block, message):
    with pytest.raises(ValueError, match=message):
        InterventionOptions.from_config({"seed": 0, "interventions": block})


def test_shards():
    options = InterventionOptions(samples_per_task=5, shard_size=2)
    assert options.n_shards(100) == 3 and options.n_shards(3) == 2 and options.n_shards(0) == 1
    data = pl.DataFrame({"sample_id": [f"s{i}" for i in range(8)]})
    picked = [select_shard(data, options, s)["sample_id"].to_list() for s in range(3)]
    assert picked == [["s0", "s1"], ["s2", "s3"], ["s4"]]
    assert select_shard(data, options, 3).height == 0
    with pytest.raises(ValueError, match="shard"):
        select_shard(data, options, -1)


def _rows(sample_ids: list[str]) -> pl.DataFrame:
    row = {c: None for c in INTERVENTION_SCHEMA}
    records = [{**row, "sample_id": s, "position": 2} for s in sample_ids]
    return pl.DataFrame(records, schema=INTERVENTION_SCHEMA)


def test_merge_shards():
    merged = merge_intervention_shards([_rows(["a", "a"]), empty_interventions(), _rows(["b"])])
    assert merged["sample_id"].to_list() == ["a", "a", "b"]
    assert merged.schema == pl.Schema(INTERVENTION_SCHEMA)
    assert merge_intervention_shards([]).schema == pl.Schema(INTERVENTION_SCHEMA)
    with pytest.raises(ValueError, match="'a' appears in shards 0 and 1"):
        merge_intervention_shards([_rows(["a"]), _rows(["a"])])


def test_schema_has_the_analysis_columns():
    from saltbench.analysis import INTERVENTIONS_SCHEMA

    for column, dtype in INTERVENTIONS_SCHEMA.items():
        assert INTERVENTION_SCHEMA[column] == dtype, column
    assert set(ANALYSIS_COLUMNS) <= set(INTERVENTION_SCHEMA)
    wanted = {f"topk.{n}" for n in ("mean_probability", "perplexity", "max_entropy")}
    assert wanted <= set(INTERVENTION_SCHEMA)
