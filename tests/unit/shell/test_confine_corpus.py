"""The confinement by construction: a sample of every category of the adversarial corpus, run
through ``confine`` against the hostile workspace with every mechanism this machine has, changes
nothing, reads nothing outside, prints no environment or credential marker and leaves no process.

The whole corpus (about 2,000 cases per mechanism and shell) is ``scripts/confine_corpus.py``,
which prints the figures. The sample here is fixed (seeded), so a failure names its case.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confine_corpus import CATEGORIES, Hostile, build, corpus, describe, run, sample

from flower.base.secrets import redact
from flower.shell.confinement import support

BASH_51 = Path(__file__).resolve().parents[3] / ".cache" / "bash-5.1" / "bin" / "bash"
PER_CATEGORY = 12


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    h = build(tmp_path_factory.mktemp("hostile"))
    yield h
    h.cleanup()


def mechanisms() -> list[str]:
    found = support()
    offered = (("bwrap", found.bwrap), ("landlock", found.landlock), ("overlay", found.overlay))
    return [m for m, why in offered if why is None]


def test_this_machine_offers_every_mechanism_and_both_shells() -> None:
    # the suite needs them all (make system-deps): a missing one would leave its cases unrun
    assert mechanisms() == ["bwrap", "landlock", "overlay"], support()
    assert BASH_51.is_file(), "bash 5.1 is fetched by `make system-deps` into .cache/bash-5.1"


def test_the_corpus_covers_every_category_in_the_hundreds(hostile: Hostile) -> None:
    sizes = {name: len(cases) for name, cases in corpus(hostile, bash51=True).items()}
    assert list(sizes) == list(CATEGORIES)
    assert min(sizes.values()) >= 100, sizes


@pytest.mark.parametrize("category", CATEGORIES)
@pytest.mark.parametrize("mechanism", ["bwrap", "landlock", "overlay"])
def test_a_sample_of_each_category_is_harmless_confined(
    hostile: Hostile, category: str, mechanism: str
) -> None:
    cases = sample(corpus(hostile, bash51=True), PER_CATEGORY)[category]
    shells = {"5.2": "/bin/bash", "5.1": str(BASH_51)}
    outcomes = [run(hostile, case, mechanism, shells=shells) for case in cases]
    harmful = [describe(o) for o in outcomes if not o.harmless]
    assert harmful == []
    # the commands really ran (a confinement that ran nothing would pass too)
    # (the supervisor's own line, not the text anywhere: `ps auxeww` prints other processes'
    # command lines, and a busy suite's may hold it)
    refused = "flower:这里隔离不了这条命令"
    assert not [o.case.command for o in outcomes if any(x.startswith(refused) for x in o.output.splitlines())]


def test_the_harness_sees_harm_when_there_is_some(tmp_path: Path) -> None:
    """Control: the same harness, the commands run by a plain shell, sees each kind of harm."""
    h = build(tmp_path / "control")
    try:
        with h.environment():
            before = h.snapshot()
            done = subprocess.run(
                f"/usr/bin/touch pwned; /bin/cat {h.outside}/secret.txt; echo $FLOWER_CANARY_PLAIN; "
                f"(/bin/sh -c '/bin/sleep 600; :' {h.token} >/dev/null 2>&1 &)",
                shell=True,
                cwd=h.ws,
                env=h.env,
                capture_output=True,
                text=True,
            )
            shown = redact(done.stdout)
        after = h.snapshot()
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        assert str(h.ws / "pwned") in changed
        assert h.markers["outside"] in shown and h.markers["env-plain"] in shown
        assert h.lingering()
    finally:
        h.cleanup()
    assert not h.lingering()
