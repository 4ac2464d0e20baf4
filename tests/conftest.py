"""Suite-wide fixtures: flower.sim and an isolated Claude Code CLI for every test."""

pytest_plugins = ["flower.sim.fixtures"]
