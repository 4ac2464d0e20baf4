"""flower.sim: a scripted Anthropic Messages API on 127.0.0.1 that drives the real Claude Code CLI."""
