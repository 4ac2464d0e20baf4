"""Suite-wide fixtures: flower.sim and an isolated Claude Code CLI for every test."""

import os
import tempfile

import pytest

pytest_plugins = ["flower.sim.fixtures"]

# Every process the suite starts speaks the seeds' Chinese unless a test chooses a language
# (FLOWER_LANG, a locale, a client's InitializeParams.locale): the developer's own locale must
# not decide what the assertions read (docs/i18n.md).
for _var in ("FLOWER_LANG", "LC_ALL", "LC_MESSAGES"):
    os.environ.pop(_var, None)
os.environ["LANG"] = "C.UTF-8"

# Nor does a terminal's width decide how lines are laid out, unless a test gives one (COLUMNS):
# the runner's own terminal leaves COLUMNS and LINES in the environment its processes inherit
# (GNU readline exports them), so pytest-xdist's workers start with COLUMNS=80 when a plain run
# has none, and text the CLI fits to that width wraps where the assertions expect one line.
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)

# flower's own user state (the windows it learned from overflows, core/window.py) belongs to the
# suite, not to the user running it: a window one test teaches must not reach the next run of
# the developer's flower. This one covers what runs outside a test (collection, session
# fixtures); each test gets its own below.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="flower-test-state-")
# Nor does the developer's own configuration (core/envfile.py reads ~/.config/flower/.env): a
# key or gateway there must not reach a test that expects none (each test gets its own below).
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="flower-test-config-")


@pytest.fixture(autouse=True)
def private_user_state(tmp_path_factory, monkeypatch):
    """Each test's flower keeps its user state and configuration to itself.

    The learned windows are keyed by model and gateway, and the gateway is flower.sim on
    127.0.0.1 at a port the system hands out: a later test on the same xdist worker can be given
    the port of an earlier one, and a window that test learned (a 6.7K one, from an overflow
    scenario) shrank the next run's window and handed it over mid-step. `flower setup --user`
    writes a key into the configuration the same way; no test may read another's.
    """
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
