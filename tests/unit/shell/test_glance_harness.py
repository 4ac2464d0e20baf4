"""The sandbox itself: it sees a change or a leak when there is one, and only then."""

from __future__ import annotations

import pytest
from glance_sandbox import Sandbox


def test_a_quiescent_repository_stays_unchanged_under_git_status(spoilable_box: Sandbox) -> None:
    for _ in range(3):
        outcome = spoilable_box.run("git status && git diff --stat && git describe --always --dirty")
        assert outcome.returncode == 0, outcome.output
        assert outcome.clean, (outcome.changed, outcome.leaked)


@pytest.mark.parametrize(
    ("command", "changed"),
    [
        ("touch new.txt", "workspace/new.txt"),
        ("rm notes.txt", "workspace/notes.txt"),
        ("echo x >> README.md", "workspace/README.md"),
        ("chmod +x README.md", "workspace/README.md"),
        ("touch -d '2 hours ago' README.md", "workspace/README.md"),
        ("mkdir -p ~/.config/x", "home/.config"),
        ("git tag v9", "workspace/.git/refs/tags/v9"),
    ],
)
def test_every_kind_of_change_is_seen(spoilable_box: Sandbox, command: str, changed: str) -> None:
    outcome = spoilable_box.run(command)
    assert changed in outcome.changed


@pytest.mark.parametrize(
    ("command", "marker"),
    [
        ("cat .env", "dotenv"),
        ("cat traps/key-link", "ssh"),
        ("cat traps/hard.txt", "netrc"),
        ("cat ~/.aws/credentials", "aws"),
        ("echo $ANTHROPIC_API_KEY", "apikey"),
        ("env", "envsecret"),
        ("git remote -v", "remote"),
        ("cat ~/.kube/config", "kube"),
    ],
)
def test_every_planted_secret_is_seen_when_printed(glance_box: Sandbox, command: str, marker: str) -> None:
    outcome = glance_box.run(command)
    assert marker in outcome.leaked
    assert not outcome.changed
