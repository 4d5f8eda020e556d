"""What a failed conformance check reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


class ConformanceError(ValueError):
    """A task or confidence function fails a conformance check; the message names the check."""


@dataclass(frozen=True)
class Failure:
    """One failed check: its ``check`` name and what was seen (``detail``)."""

    check: str
    detail: str


def run_checks(checks: Sequence[tuple[str, Callable[[], str | None]]]) -> list[Failure]:
    """Run each ``(name, check)``; a check returns ``None`` when it passes, else what is wrong. A check that
    raises fails with the exception as its detail; checks after a failed one still run."""
    failures: list[Failure] = []
    for name, check in checks:
        try:
            problem = check()
        except Exception as exc:  # a broken plugin may raise anything
            problem = f"raised {type(exc).__name__}: {exc}"
        if problem:
            failures.append(Failure(name, problem))
    return failures


def raise_first(what: str, failures: Sequence[Failure]) -> None:
    """:class:`ConformanceError` for the first failure (and the count of the others)."""
    if failures:
        first = failures[0]
        more = (
            f" (and {len(failures) - 1} more: {', '.join(f.check for f in failures[1:])})"
            if failures[1:]
            else ""
        )
        raise ConformanceError(f"{what} fails the conformance check {first.check!r}: {first.detail}{more}")
