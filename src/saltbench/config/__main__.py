"""``python -m saltbench.config``: check config files, or regenerate the JSON schema."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from saltbench.config.loading import load_config, write_schema
from saltbench.config.schema import ConfigError
from saltbench.core.plugins import PluginError


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m saltbench.config FILE...``: load and validate each config file, print what is wrong.

    Also checks the model names against the registry (run it from the workflow root, like Snakemake).
    ``python -m saltbench.config --write-schema [PATH]`` regenerates the JSON schema from the configuration
    model into PATH; without PATH, every generated file: the package's ``schema/config.schema.json`` and
    ``schema/models.schema.json``, and docs/registry.md (run from the workflow root). Returns the exit
    status: 0 if every file is valid, 1 otherwise.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--write-schema"] and len(args) <= 2:
        for written in write_schema(args[1] if len(args) == 2 else None):
            print(f"wrote {written}")
        return 0
    if not args or any(a.startswith("-") for a in args):
        print("usage: python -m saltbench.config CONFIG.yaml [...] | --write-schema [PATH]", file=sys.stderr)
        return 2
    status = 0
    for path in args:
        try:
            load_config(path)
        except ConfigError as exc:
            print(f"{path}: {exc}" if not str(exc).startswith(str(path)) else str(exc), file=sys.stderr)
            status = 1
        except PluginError as exc:  # an installed plugin that cannot be loaded: the package is named
            print(f"{path}: {exc}", file=sys.stderr)
            status = 1
        else:
            print(f"{path}: valid")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
