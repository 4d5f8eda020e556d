"""The ``interventions:`` config block (resolved by the configuration model), shard selection, merging."""

from __future__ import annotations

import dataclasses

import jsonschema
import polars as pl
import pytest

from saltbench.config import ConfigError, InterventionsConfig, resolve_config, validate_config
from saltbench.interventions import CONFIG_SCHEMA, InterventionOptions
from saltbench.stages.interventions import (
    INTERVENTION_FILE_COLUMNS,
    empty_interventions,
    merge_intervention_shards,
    select_shard,
)

ANALYSIS_COLUMNS = (
    "model",
    "task",
    "sample_id",
    "n_atoms",
    "position",
    "position_fraction",
    "n_corrupted",
    "corrupted_fraction",
    "placement",
    "next_correct",
    "next_m_accuracy",
    "next_confidence",
    "tf_logprob_correct",
)


def test_options_take_the_model_defaults():
    """InterventionOptions states no default of its own: its fields are the configuration model's block,
    whose defaults are the schema's (only the resolved seed has a value for options made in code)."""
    jsonschema.Draft202012Validator.check_schema(CONFIG_SCHEMA)
    defaults = {k: v["default"] for k, v in CONFIG_SCHEMA["properties"].items()}
    jsonschema.validate(defaults, CONFIG_SCHEMA)
    assert issubclass(InterventionOptions, InterventionsConfig)
    assert [f.name for f in dataclasses.fields(InterventionOptions)] == list(defaults)
    built = InterventionOptions().as_dict()
    for name, default in defaults.items():
        expected = tuple(default) if isinstance(default, list) else default
        assert built[name] == (0 if name == "seed" else expected), name


def _config(**top):
    return {"seed": 42, "tasks": ["dna", "logic"], "datasets": {"source": "generated", "n_samples": 2}, **top}


def test_from_config_resolves_top_level_keys():
    config = _config(
        models=["smollm2-135m"],
        interventions={"enabled": True, "corruption_counts": [0, 3], "placements": ["local"]},
    )
    options = InterventionOptions.from_config(config)
    assert options.enabled and options.models == ("smollm2-135m",) and options.tasks == ("dna", "logic")
    assert options.seed == 42 and options.corruption_counts == (0, 3) and options.placements == ("local",)
    block = {"models": ["m"], "tasks": ["words"], "seed": 5}
    own = InterventionOptions.from_config({**config, "interventions": block})
    assert (own.models, own.tasks, own.seed) == (("m",), ("words",), 5)
    settings = resolve_config(config, check_models=False)
    assert InterventionOptions.from_config(settings) == options  # typed or plain: the same grid
    with pytest.raises(ConfigError, match=r"interventions\.style: 'chat' is not one of"):
        InterventionOptions.from_config({**config, "interventions": {"style": "chat"}})


def test_as_dict_round_trip():
    options = InterventionOptions.from_config(_config(interventions={"positions": [2, 3], "seed": 9}))
    assert InterventionOptions.from_dict(options.as_dict()) == options
    assert InterventionOptions.from_dict({}) == InterventionOptions()


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"placement": ["local"]}, r"interventions: unknown key\(s\) 'placement'"),
        ({"placements": ["nearby"]}, r"interventions\.placements\.0: 'nearby' is not one of"),
        ({"placements": []}, r"interventions\.placements: \[\] should be non-empty"),
        ({"positions": [1]}, r"interventions\.positions\.0: 1 is less than the minimum of 2"),
        ({"position_fractions": [0.0]}, r"interventions\.position_fractions\.0: 0\.0 is less than or equal"),
        ({"position_fractions": [], "positions": []}, "positions and position_fractions are both empty"),
        ({"corruption_counts": [], "corruption_fractions": []}, "corruption_fractions are both empty"),
        ({"corruption_counts": [-1]}, r"interventions\.corruption_counts\.0: -1 is less than"),
        ({"next_atoms": 0}, r"interventions\.next_atoms: 0 is less than"),
        ({"max_new_tokens": 0}, r"interventions\.max_new_tokens: 0 is less than"),
        ({"boundary": "line"}, r"interventions\.boundary: 'line' is not one of"),
        ({"style": "chat"}, r"interventions\.style: 'chat' is not one of"),
        ({"seed": 1.0}, r"interventions\.seed: 1\.0 is not of type 'integer', 'null' \(a float; write 1\)"),
    ],
)
def test_bad_values_name_the_key(block, message):
    """The block is validated by the configuration model, in a whole config and alone (from_dict)."""
    with pytest.raises(ConfigError, match=message):
        validate_config(_config(interventions=block), check_models=False)
    with pytest.raises(ConfigError, match=message):
        InterventionOptions.from_dict(block)


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
    row = {c: None for c in INTERVENTION_FILE_COLUMNS}
    records = [{**row, "sample_id": s, "position": 2} for s in sample_ids]
    return pl.DataFrame(records, schema=INTERVENTION_FILE_COLUMNS)


def test_merge_shards():
    merged = merge_intervention_shards([_rows(["a", "a"]), empty_interventions(), _rows(["b"])])
    assert merged["sample_id"].to_list() == ["a", "a", "b"]
    assert merged.schema == pl.Schema(INTERVENTION_FILE_COLUMNS)
    assert merge_intervention_shards([]).schema == pl.Schema(INTERVENTION_FILE_COLUMNS)
    with pytest.raises(ValueError, match="'a' appears in shards 0 and 1"):
        merge_intervention_shards([_rows(["a"]), _rows(["a"])])


def test_schema_has_the_analysis_columns():
    from saltbench.analysis import INTERVENTIONS_SCHEMA

    for column, dtype in INTERVENTIONS_SCHEMA.items():
        assert INTERVENTION_FILE_COLUMNS[column] == dtype, column
    assert set(ANALYSIS_COLUMNS) <= set(INTERVENTION_FILE_COLUMNS)
    wanted = {f"topk.{n}" for n in ("mean_probability", "perplexity", "max_entropy")}
    assert wanted <= set(INTERVENTION_FILE_COLUMNS)
