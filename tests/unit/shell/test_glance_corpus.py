"""The adversarial corpus: thousands of commands that write, run code or print a secret; 0 admitted
by the predicate alone (``confined=False``: the rules as they hold where no confinement exists).

Any command the predicate admitted would be run in the sandbox, so that a regression shows as what
it does (a changed file, a printed marker) and not only as a verdict. What the confinement holds
whatever the predicate admits is tests/unit/shell/test_confine_corpus.py.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from glance_corpus import CORPUS, HOSTILE_REPOSITORY_GLANCES
from glance_sandbox import Outcome, Sandbox

from flower.shell import is_ephemeral

MIN_TOTAL = 3000


def admitted_outcomes(box: Sandbox, commands: list[str]) -> list[Outcome]:
    return [box.run(c) for c in commands if is_ephemeral(c, workspace=box.workspace, confined=False)]


def test_the_corpus_is_large_and_covers_every_category() -> None:
    sizes = {name: len(commands) for name, commands in CORPUS.items()}
    print("\nadversarial corpus by category:")
    for name, size in sizes.items():
        print(f"  {name:32s} {size:5d}")
    print(f"  {'total':32s} {sum(sizes.values()):5d}")
    assert sum(sizes.values()) >= MIN_TOTAL
    assert min(sizes.values()) >= 20


@pytest.mark.parametrize("category", list(CORPUS))
def test_no_command_of_the_category_is_admitted(glance_box: Sandbox, category: str) -> None:
    outcomes = admitted_outcomes(glance_box, CORPUS[category])
    harmful = [(o.command, o.changed, o.leaked) for o in outcomes if not o.clean]
    assert harmful == []
    assert [o.command for o in outcomes] == []


# --------------------------------------------------------------------- hostile repositories

PAYLOAD = "pwned"


def _config(box: Sandbox, text: str) -> None:
    with (box.workspace / ".git" / "config").open("a") as fh:
        fh.write(text)


def _attributes(box: Sandbox, line: str) -> None:
    (box.workspace / ".gitattributes").write_text(line + "\n")


def _hook(box: Sandbox, name: str) -> None:
    hook = box.workspace / ".git" / "hooks" / name
    hook.write_text(f"#!/bin/sh\ntouch {box.workspace / PAYLOAD}\n")
    hook.chmod(0o755)


def _git(box: Sandbox, *args: str, cwd: Path | None = None) -> None:
    env = {**box.env, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x.invalid"}
    env |= {"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x.invalid"}
    subprocess.run(["git", *args], cwd=cwd or box.workspace, env=env, check=True, capture_output=True)


def fsmonitor(box: Sandbox) -> None:
    _config(box, f'[core]\n\tfsmonitor = "touch {PAYLOAD}; false"\n')


def external_diff(box: Sandbox) -> None:
    _config(box, f'[diff]\n\texternal = "touch {PAYLOAD}; true"\n')


def textconv(box: Sandbox) -> None:
    _config(box, f'[diff "evil"]\n\ttextconv = "touch {PAYLOAD}; cat"\n')
    _attributes(box, "* diff=evil")


def clean_filter(box: Sandbox) -> None:
    _config(box, f'[filter "evil"]\n\tclean = "touch {PAYLOAD}; cat"\n')
    _attributes(box, "*.py filter=evil")
    (box.workspace / "src" / "app.py").write_text("changed\n")


def signature_program(box: Sandbox) -> None:
    script = box.workspace / "gpg.sh"
    script.write_text(f"#!/bin/sh\ntouch {box.workspace / PAYLOAD}\n")
    script.chmod(0o755)
    # A commit carrying a signature block: verifying it runs gpg.program.
    head = subprocess.run(
        ["git", "cat-file", "commit", "HEAD"], cwd=box.workspace, capture_output=True, text=True
    )
    header, _, message = head.stdout.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEz\n -----END PGP SIGNATURE-----"
    signed = f"{header}\n{signature}\n\n{message}"
    made = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=box.workspace,
        input=signed,
        capture_output=True,
        text=True,
        check=True,
    )
    _git(box, "update-ref", "HEAD", made.stdout.strip())
    _config(box, f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {script}\n")


def include(box: Sandbox) -> None:
    (box.workspace / "evil.cfg").write_text(f'[core]\n\tfsmonitor = "touch {PAYLOAD}; false"\n')
    _config(box, "[include]\n\tpath = ../evil.cfg\n")


def hooks_path(box: Sandbox) -> None:
    hooks = box.workspace / "myhooks"
    hooks.mkdir()
    hook = hooks / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {box.workspace / PAYLOAD}\n")
    hook.chmod(0o755)
    _config(box, f"[core]\n\thooksPath = {hooks}\n")
    os.utime(box.workspace / "README.md")  # same content, new stat: status rewrites the index


def post_index_change_hook(box: Sandbox) -> None:
    _hook(box, "post-index-change")
    os.utime(box.workspace / "README.md")  # same content, new stat: status rewrites the index


def worktree_config(box: Sandbox) -> None:
    _git(box, "config", "extensions.worktreeConfig", "true")
    (box.workspace / ".git" / "config.worktree").write_text(
        f'[core]\n\tfsmonitor = "touch {PAYLOAD}; false"\n'
    )


def embedded_repository(box: Sandbox) -> None:
    inner = box.workspace / "vendor"
    inner.mkdir()
    _git(box, "init", "-q", cwd=inner)
    (inner / "f").write_text("x\n")
    _git(box, "add", "f", cwd=inner)
    _git(box, "commit", "-qm", "inner", cwd=inner)
    _git(box, "add", "vendor")
    _git(box, "commit", "-qm", "embed")
    _git(box, "config", "core.fsmonitor", f"touch {box.workspace / PAYLOAD}; false", cwd=inner)
    (inner / "f").write_text("dirty\n")


def pager(box: Sandbox) -> None:
    _config(box, f"[core]\n\tpager = touch {PAYLOAD}\n[pager]\n\tlog = touch {PAYLOAD}\n")


HOSTILE: dict[str, tuple[Callable[[Sandbox], None], str]] = {
    # name: (how the repository is made hostile, a command that fires it when run unguarded)
    "core.fsmonitor": (fsmonitor, "git status"),
    "diff.external": (external_diff, "git diff"),
    "textconv driver": (textconv, "git log -p -1"),
    "clean filter": (clean_filter, "git diff"),
    "log.showSignature": (signature_program, "git log -1"),
    "config include": (include, "git status"),
    "core.hooksPath": (hooks_path, "git status"),
    "post-index-change hook": (post_index_change_hook, "git status"),
    "config.worktree": (worktree_config, "git status"),
    "embedded repository": (embedded_repository, "git status"),
    "pager": (pager, "script -qc 'git log -1' /dev/null"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_git_glances_are_refused_in_a_repository_that_would_run_a_program(
    spoilable_box: Sandbox, name: str
) -> None:
    make_hostile, trigger = HOSTILE[name]
    make_hostile(spoilable_box)

    outcomes = admitted_outcomes(spoilable_box, HOSTILE_REPOSITORY_GLANCES)
    assert [(o.command, o.changed) for o in outcomes] == []
    assert not (spoilable_box.workspace / PAYLOAD).exists()

    # Control: unguarded, the repository really runs its program (the pager through a terminal).
    spoilable_box.run(trigger)
    assert (spoilable_box.workspace / PAYLOAD).exists(), f"{name} did not fire: the case proves nothing"


def test_the_same_glances_are_admitted_in_an_inert_repository(glance_box: Sandbox) -> None:
    refused = [
        c
        for c in HOSTILE_REPOSITORY_GLANCES
        if not is_ephemeral(c, workspace=glance_box.workspace, confined=False)
    ]
    assert refused == []
