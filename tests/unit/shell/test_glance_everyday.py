"""Everyday read-only glances: admitted ones change nothing and print no secret; few are refused."""

from __future__ import annotations

from glance_everyday import EVERYDAY
from glance_sandbox import Sandbox

from flower.shell import is_ephemeral, judge

MAX_REFUSED_SHARE = 0.10


def test_few_everyday_glances_are_refused(glance_box: Sandbox) -> None:
    refused = [(c, judge(c, workspace=glance_box.workspace).reason) for c in EVERYDAY]
    refused = [(c, why) for c, why in refused if why]
    share = len(refused) / len(EVERYDAY)
    print(f"\neveryday glances: {len(EVERYDAY)}, refused {len(refused)} ({share:.1%}):")
    for command, why in refused:
        print(f"  {command!r}: {why}")
    assert len(EVERYDAY) >= 300
    assert share < MAX_REFUSED_SHARE, refused


def test_every_admitted_glance_changes_nothing_and_prints_no_secret(glance_box: Sandbox) -> None:
    admitted = [c for c in EVERYDAY if is_ephemeral(c, workspace=glance_box.workspace)]
    outcomes = [glance_box.run(c) for c in admitted]
    harmful = [(o.command, o.changed, o.leaked) for o in outcomes if not o.clean]
    assert len(admitted) >= 0.9 * len(EVERYDAY)
    assert harmful == []
    # The glances really ran: most succeed here (no docker daemon, cluster, rg or tree to reach).
    succeeded = [o.command for o in outcomes if o.returncode == 0]
    assert len(succeeded) > 0.8 * len(outcomes)
