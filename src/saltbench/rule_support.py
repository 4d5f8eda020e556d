"""Support for the thin workflow scripts: logging into the rule's ``log:`` file.

Snakemake copies a ``script:`` into ``.snakemake/scripts/`` before running it, so shared helpers for
the scripts live here, in the package, rather than beside them.
"""

from __future__ import annotations

import logging
import sys
from types import TracebackType
from typing import Any


def setup_logging(snakemake: Any) -> logging.Logger:
    """Send log records (and any uncaught exception) to the rule's log file and stderr.

    Returns the logger ``saltbench.rule.<rule name>``.
    """
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        handlers.append(logging.FileHandler(str(snakemake.log[0]), mode="w", encoding="utf-8"))
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        handlers=handlers,
        force=True,
    )
    logger = logging.getLogger(f"saltbench.rule.{snakemake.rule}")

    def _log_uncaught(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        logger.error("rule %s failed", snakemake.rule, exc_info=(kind, exc, tb))

    sys.excepthook = _log_uncaught
    return logger
