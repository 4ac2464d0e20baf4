"""Suite-wide fixtures: flower.sim and an isolated Claude Code CLI for every test."""

import os

pytest_plugins = ["flower.sim.fixtures"]

# Every process the suite starts speaks the seeds' Chinese unless a test chooses a language
# (FLOWER_LANG, a locale, a client's InitializeParams.locale): the developer's own locale must
# not decide what the assertions read (docs/i18n.md).
for _var in ("FLOWER_LANG", "LC_ALL", "LC_MESSAGES"):
    os.environ.pop(_var, None)
os.environ["LANG"] = "C.UTF-8"
