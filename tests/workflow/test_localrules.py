"""Under a cluster executor only the compute-heavy rules are submitted as jobs; the rest run locally."""

from __future__ import annotations

from pathlib import Path

import pytest
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, ResourceSettings

pytestmark = pytest.mark.workflow

REPO = Path(__file__).resolve().parents[2]

COMPUTE_RULES = {
    "convert_gguf_model",
    "train_tiny_models",
    "intervention_shard",
    "serve_model",
    "second_pass",
    "score_units",
    "compute_metrics",
    "table_reliability",
    "table_rejection",
    "table_reasoning_tradeoff",
    "table_label_noise_part",
    "explorer_model",
    "import_generations",
}
"""Rules that load a model, train one, score or bootstrap a whole file, or scan every units file of the study
(at paper scale, gigabytes), or read one model's generations and units for the explorer, or serve a model,
or read and validate a whole imported generations file: the ones a compute node is for."""


@pytest.mark.parametrize(
    ("configfile", "inference"),
    [("config/config.yaml", "generate_model"), ("config/paper.yaml", "generate_shard")],
)  # the two inference layouts: one job per model (default) or per shard (paper scale)
def test_every_light_rule_is_local(monkeypatch, configfile, inference):
    monkeypatch.chdir(REPO)
    with SnakemakeApi() as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(),
            config_settings=ConfigSettings(configfiles=[REPO / configfile]),
            snakefile=REPO / "Snakefile",
        )._workflow
        rules = {rule.name for rule in workflow.rules}
        compute = COMPUTE_RULES | {inference, inference.replace("generate_", "generate_draws_")}
        assert compute <= rules
        assert set(workflow._localrules) == rules - compute
