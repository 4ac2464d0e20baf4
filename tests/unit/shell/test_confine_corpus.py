"""The confinement by construction: a sample of every category of the adversarial corpus, run
through ``confine`` against the hostile workspace with every mechanism this machine has, changes
nothing, reads nothing outside, prints no environment or credential marker and leaves no process.

The whole corpus (about 2,000 cases per mechanism and shell) is ``scripts/confine_corpus.py``,
which prints the figures. The sample (``confine_corpus.check_sample``) is fixed (seeded), so a
failure names its case; it runs from one file per mechanism (``test_confine_corpus_<mechanism>.py``)
so that the suite's workers share it out. This file checks the machine, the corpus and the harness.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from confine_corpus import BASH_51, CATEGORIES, Hostile, build, corpus

from flower.base.secrets import redact
from flower.shell.confinement import support


def mechanisms() -> list[str]:
    found = support()
    offered = (("bwrap", found.bwrap), ("landlock", found.landlock), ("overlay", found.overlay))
    return [m for m, why in offered if why is None]


def test_this_machine_offers_every_mechanism_and_both_shells() -> None:
    # the suite needs them all (make system-deps): a missing one would leave its cases unrun
    assert mechanisms() == ["bwrap", "landlock", "overlay"], support()
    assert BASH_51.is_file(), "bash 5.1 is fetched by `make system-deps` into .cache/bash-5.1"


def test_every_mechanism_has_its_sample_file() -> None:
    here = Path(__file__).parent
    assert sorted(p.name for p in here.glob("test_confine_corpus_*.py")) == [
        f"test_confine_corpus_{m}.py" for m in sorted(mechanisms())
    ]


def test_the_corpus_covers_every_category_in_the_hundreds(hostile: Hostile) -> None:
    sizes = {name: len(cases) for name, cases in corpus(hostile, bash51=True).items()}
    assert list(sizes) == list(CATEGORIES)
    assert min(sizes.values()) >= 100, sizes


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
