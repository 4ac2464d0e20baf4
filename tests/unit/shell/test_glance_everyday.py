"""Everyday read-only glances: few are refused, and the admitted ones, run as the coordinator
runs them, change nothing and print no secret.

Judged as the coordinator's glances are (confined: what only the confinement makes harmless is
admitted, ``env`` or ``cd src``), under 3% are refused; judged by the rules alone, as where no
confinement exists, under 10%. The first are run through ``flower.shell.confine``, the second by a
plain bash: each set must be harmless the way it runs.
"""

from __future__ import annotations

import pytest
from glance_everyday import EVERYDAY
from glance_sandbox import Sandbox

from flower.shell import is_ephemeral, judge

# (confined, the most of the everyday set that may be refused)
SHARES = [(True, 0.03), (False, 0.10)]


@pytest.mark.parametrize(("confined", "most"), SHARES, ids=["confined", "rules alone"])
def test_few_everyday_glances_are_refused(glance_box: Sandbox, confined: bool, most: float) -> None:
    verdicts = [(c, judge(c, workspace=glance_box.workspace, confined=confined).reason) for c in EVERYDAY]
    refused = [(c, why) for c, why in verdicts if why]
    share = len(refused) / len(EVERYDAY)
    how = "confined" if confined else "rules alone"
    print(f"\neveryday glances ({how}): {len(EVERYDAY)}, refused {len(refused)} ({share:.1%}):")
    for command, why in refused:
        print(f"  {command!r}: {why}")
    assert len(EVERYDAY) >= 300
    assert share < most, refused


@pytest.mark.parametrize("confined", [True, False], ids=["confined", "rules alone"])
def test_every_admitted_glance_changes_nothing_and_prints_no_secret(
    glance_box: Sandbox, confined: bool
) -> None:
    admitted = [c for c in EVERYDAY if is_ephemeral(c, workspace=glance_box.workspace, confined=confined)]
    outcomes = [glance_box.run(c, confined=confined) for c in admitted]
    harmful = [(o.command, o.changed, o.leaked) for o in outcomes if not o.clean]
    assert len(admitted) >= 0.9 * len(EVERYDAY)
    assert harmful == []
    # The glances really ran: most succeed here (no docker daemon, cluster, rg or tree to reach;
    # confined, no repository config of the sandbox's home either).
    succeeded = [o.command for o in outcomes if o.returncode == 0]
    assert len(succeeded) > 0.75 * len(outcomes), [o.command for o in outcomes if o.returncode != 0]
