"""Rule convert_gguf_model: a safetensors copy of a GGUF model shipped inside a Python package."""

from saltbench.inference import prepare_model
from saltbench.workflow.rule_support import setup_logging


def main(snakemake) -> None:
    log = setup_logging(snakemake)
    spec = snakemake.params.spec
    out = prepare_model(spec, str(snakemake.output[0]).rsplit("/", 1)[0])
    log.info("model %s ready at %s", spec.name, out)


main(snakemake)  # noqa: F821
