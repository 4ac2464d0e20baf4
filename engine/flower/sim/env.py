"""Run the real Claude Code CLI against flower.sim, isolated from the host.

Every CLI process gets its own config, temp and home folders, a dummy key and the sim's URL,
so a test or the offline demo never touches ``~/.claude`` or ``/tmp/claude-*``, never runs the
host's shell profile and never leaves 127.0.0.1.
"""

from __future__ import annotations

import os
from pathlib import Path

# A dummy credential: the CLI refuses to start without one; flower.sim never checks it.
DUMMY_KEY = "sk-flower-sim-dummy"

# Variables from the host that would change which model, key or endpoint the CLI uses.
HOST_MODEL_VARS = (
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "https_proxy",
    "http_proxy",
)


def isolated_env(
    base_url: str, root: str | Path, *, max_retries: int | None = 2, timeout_ms: int | None = None
) -> dict[str, str]:
    """Environment for one CLI process that talks only to `base_url`.

    `max_retries` bounds the CLI's own retries of 429/5xx/dropped connections (so a fault
    test does not wait through ten back-offs); None keeps the CLI's default.
    """
    root = Path(root)
    config, tmp, home = root / "claude-config", root / "claude-tmp", root / "home"
    for folder in (config, tmp, home):
        folder.mkdir(parents=True, exist_ok=True)
    env = {
        # Bash starts from the user's shell profile: the host's (a pyenv rehash waiting 60 s
        # on a lock, aliases, PATH edits) must not decide what a test's commands do or take
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CONFIG_DIR": str(config),
        "CLAUDE_CODE_TMPDIR": str(tmp),
        "DISABLE_AUTOUPDATER": "1",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    if max_retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(max_retries)
    if timeout_ms is not None:
        env["API_TIMEOUT_MS"] = str(timeout_ms)
    return env


def scrub_host_model_vars(environ: os._Environ[str] | dict[str, str] = os.environ) -> dict[str, str]:
    """Remove host variables that would redirect the CLI; returns what was removed.

    The SDK passes the whole parent environment to the CLI, so isolation means removing
    these from the parent too (the caller restores them if it cares).
    """
    removed = {}
    for name in HOST_MODEL_VARS:
        if name in environ:
            removed[name] = environ.pop(name)
    return removed
