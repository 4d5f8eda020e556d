"""The README reads in a few minutes: at most 120 lines, opening with the two commands, the second of them
the test command that CI (.ci/run) runs after the first one's setup script."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 120
    block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    commands = [line.split("   #", 1)[0].strip() for line in block]
    ci = (REPO / ".ci/run").read_text(encoding="utf-8").splitlines()
    assert len(commands) == 2 and commands[0].startswith("bash scripts/setup_env.sh && ")
    assert "bash scripts/setup_env.sh" in ci and commands[1] in ci
