"""Before any large spend: does every served model answer with the log-probabilities the study needs
(docs/backends.md §8.8)?

For every model of ``models`` on ``backend: openai``, one short request (a few tokens; not cached), and
whether the answer carries log-probabilities with ``inference.top_k`` (20) alternatives per token, through
the same route, rendering and parsing as the inference jobs. A hosted reasoning model that answers without
log-probabilities, or refuses them with a 400, is named here instead of after a shard of paid requests.
Run::

    python -m saltbench.stages.preflight config/hosted.yaml

Exit status 0 when every served model passes (or none is configured), 1 otherwise.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from saltbench.config import WorkflowConfig

if TYPE_CHECKING:
    from saltbench.inference.openai.client import Probe

log = logging.getLogger(__name__)


def preflight(settings: WorkflowConfig) -> list[Probe]:
    """The :class:`saltbench.inference.openai.Probe` of every served model of a resolved configuration."""
    from saltbench.inference import load_model_registry
    from saltbench.inference.backends import LoadSettings, load_backend
    from saltbench.inference.openai.client import OpenAIModel

    registry = load_model_registry(settings.model_registry)
    probes: list[Probe] = []
    for name in settings.models:
        spec = registry[name]
        if not spec.served:
            continue
        model = load_backend(
            spec.resolve_path(""), spec, settings=LoadSettings(top_k=settings.inference.top_k)
        )
        assert isinstance(model, OpenAIModel)  # a served model loads on backend openai
        probes.append(model.probe())
    return probes


def main(argv: Sequence[str] | None = None) -> int:
    """Probe the served models of a configuration file; print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a configuration file (config/*.yaml)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from saltbench.config import ConfigError, load_config, resolve_config

    try:
        settings = resolve_config(load_config(args.config))
    except ConfigError as exc:
        print(f"{args.config}: {exc}", file=sys.stderr)
        return 1
    probes = preflight(settings)
    if not probes:
        print(f"{args.config}: no served model (backend: openai) in models")
        return 0
    for probe in probes:
        print(f"{probe.model}: {'ok' if probe.ok else 'FAILED'}: {probe.detail}")
    return 0 if all(p.ok for p in probes) else 1


if __name__ == "__main__":
    sys.exit(main())
