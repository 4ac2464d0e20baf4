"""What a workspace `.env` may hand the Claude Code CLI: credentials and model settings, nothing else.

A `.env` lies in the folder the agents work on, so it is input, not configuration: whoever wrote
the repository wrote it. Every variable flower puts into its own environment reaches the CLI and
every command the CLI runs, so a `BASH_ENV`, `PYTHONSTARTUP`, `NODE_OPTIONS` or `LD_PRELOAD`
there would run its author's code. Only the keys of `WORKSPACE_ENV_KEYS` are taken; the rest is
ignored and said once, in one line. The process environment always wins over the file.

A Runtime keeps what its workspace's file adds as its own (``read_workspace_env``) and hands it to
the CLI processes it starts, never to ``os.environ``: a process that runs several workspaces at once
(a fleet worker) must not give one repository's model settings to another's run.

An endpoint (`ANTHROPIC_BASE_URL`, `ANTHROPIC_CUSTOM_HEADERS`) is taken only together with the
credential it is for: when the credential in use comes from the environment, a file in the
repository must not send it to another address.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .i18n import _
from .secrets import HEADER_ENV, is_secret_name, remember

log = logging.getLogger("flower")

CREDENTIAL_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
ENDPOINT_KEYS = ("ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS")
MODEL_KEYS = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)
WORKSPACE_ENV_KEYS = CREDENTIAL_KEYS + ENDPOINT_KEYS + MODEL_KEYS

_said: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = set()
_said_lock = threading.Lock()


@dataclass
class EnvFile:
    """What one `.env` contributes: `values` (the keys of `applied`) go to the CLI, the rest not."""

    path: Path
    values: dict[str, str] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # not a credential or model setting
    held: list[str] = field(default_factory=list)  # an endpoint whose credential comes from elsewhere

    def notice(self) -> str | None:
        """The one line that says what was left out, or None when nothing was."""
        parts = []
        if self.ignored:
            names = ", ".join(self.ignored)
            parts.append(_("忽略了 {names}(工作区的 .env 只提供凭据和模型设置)").format(names=names))
        if self.held:
            names = ", ".join(self.held)
            parts.append(_("没有采用 {names}(正在用的凭据来自环境变量,不是这个文件)").format(names=names))
        return f"flower: {self.path}: {'; '.join(parts)}" if parts else None


def find_env_file(workspace: str | Path) -> Path | None:
    """The workspace's `.env`, else the nearest one above the current directory."""
    own = Path(workspace) / ".env"
    if own.is_file():
        return own
    from dotenv import find_dotenv

    found = find_dotenv(usecwd=True)
    return Path(found) if found else None


def load_workspace_env(workspace: str | Path) -> EnvFile | None:
    """Put what the workspace's `.env` contributes into os.environ (a command that serves one
    workspace for its whole life); see ``read_workspace_env``."""
    result = read_workspace_env(workspace)
    if result is not None:
        os.environ.update(result.values)
    return result


def read_workspace_env(workspace: str | Path, environ: Mapping[str, str] | None = None) -> EnvFile | None:
    """What the allowed keys of the workspace's `.env` add to ``environ`` (os.environ unless told),
    never over a set variable, without changing any environment; says once, on the `flower`
    logger, what was left out. None when there is no file."""
    environ = os.environ if environ is None else environ
    path = find_env_file(workspace)
    if path is None:
        return None
    from dotenv import dotenv_values

    # no interpolation: "${HOME}" in a value must not pull other variables into it
    values = {k: v for k, v in dotenv_values(path, interpolate=False).items() if v is not None}
    result = EnvFile(path=path.resolve())
    for key, value in values.items():
        if key in CREDENTIAL_KEYS or is_secret_name(key):
            remember(value)  # masked even where it never reaches the environment
    for line in (values.get(HEADER_ENV) or "").splitlines():
        remember(line.partition(":")[2].strip())
    credential_here = any(values.get(k) for k in CREDENTIAL_KEYS) and not any(
        environ.get(k) for k in CREDENTIAL_KEYS
    )
    for key, value in values.items():
        if key not in WORKSPACE_ENV_KEYS:
            result.ignored.append(key)
        elif key in ENDPOINT_KEYS and not credential_here and key not in environ:
            result.held.append(key)
        elif key not in environ:
            result.values[key] = value
            result.applied.append(key)
    notice = result.notice()
    if notice is not None:
        said = (str(result.path), tuple(result.ignored), tuple(result.held))
        with _said_lock:
            fresh = said not in _said
            _said.add(said)
        if fresh:
            log.warning(notice)
    return result
