"""Rule findings: results/findings.md from the analysis tables (saltbench.analysis.findings_markdown)."""

import json

from saltbench.analysis import FINDINGS_TABLES, findings_markdown
from saltbench.core.contracts import TABLES
from saltbench.io import read_table
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    tables = {}
    for name in FINDINGS_TABLES:
        paths = snakemake.input.get(name, [])
        for path in [paths] if isinstance(paths, str) else paths:  # interventions: empty when disabled
            tables[name] = read_table(path, TABLES[name])
    without = {}  # imported model -> (responses without log-probabilities, responses imported)
    for path in snakemake.input.get("imports", []):
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        without[record["model"]] = (record["without_logprobs"], record["imported"])
    text = findings_markdown(tables, snakemake.params.min_answered, snakemake.params.min_units, without)
    with open(snakemake.output[0], "w", encoding="utf-8") as handle:
        handle.write(text)
    log.info("wrote %s from %s", snakemake.output[0], ", ".join(sorted(tables)))


main(snakemake)  # noqa: F821
