"""What a workspace `.env` may hand the Claude Code CLI: credentials and model settings, nothing else.

A `.env` lies in the folder the agents work on, so it is input, not configuration: whoever wrote
the repository wrote it. Every variable flower puts into its own environment reaches the CLI and
every command the CLI runs, so a `BASH_ENV`, `PYTHONSTARTUP`, `NODE_OPTIONS` or `LD_PRELOAD`
there would run its author's code. Only the keys of `WORKSPACE_ENV_KEYS` are taken; the rest is
ignored and said once, in one line. The process environment always wins over the file.

A Runtime keeps what its workspace's file adds as its own (``read_workspace_env``) and hands it to
the CLI processes it starts, never to ``os.environ``: a process that runs several workspaces at once
(a fleet worker) must not give one repository's model settings to another's run.

Three files may give these keys, read key by key in the order of ``config_sources``: the
workspace's `.env`, then the person's own (``user_env_file``: `$XDG_CONFIG_HOME/flower/.env`,
`~/.config/flower/.env` without it), then the `env` block of Claude Code's `settings.json` (in
`$CLAUDE_CONFIG_DIR`, else `~/.claude`). The first that has a key gives it; the process
environment wins over all three. An empty value gives nothing (the next source may).

An endpoint (`ANTHROPIC_BASE_URL`, `ANTHROPIC_CUSTOM_HEADERS`) is taken only together with the
credential it is for: only the source whose credential is in use gives it, so a file in the
repository never sends the person's own key (from the environment or the user's file) to
another address.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..base.i18n import _
from ..base.secrets import HEADER_ENV, is_secret_name, remember

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
    """What the config sources contribute: `values` (the keys of `applied`) go to the CLI, the rest
    not. `path` is the workspace's `.env` (else the first source found); `origins` says which file
    gave each applied key."""

    path: Path
    values: dict[str, str] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # not a credential or model setting
    held: list[str] = field(default_factory=list)  # an endpoint whose credential comes from elsewhere
    origins: dict[str, Path] = field(default_factory=dict)
    credential_from: Path | None = None  # None: the environment (or nowhere)

    def notice(self) -> str | None:
        """The one line that says what was left out, or None when nothing was."""
        parts = []
        if self.ignored:
            names = ", ".join(self.ignored)
            parts.append(_("忽略了 {names}(工作区的 .env 只提供凭据和模型设置)").format(names=names))
        if self.held:
            names = ", ".join(self.held)
            if self.credential_from is None:
                parts.append(_("没有采用 {names}(正在用的凭据来自环境变量,不是这个文件)").format(names=names))
            else:
                parts.append(
                    _("没有采用 {names}(正在用的凭据来自 {where},不是这个文件)").format(
                        names=names, where=self.credential_from
                    )
                )
        return f"flower: {self.path}: {'; '.join(parts)}" if parts else None


def find_env_file(workspace: str | Path) -> Path | None:
    """The workspace's `.env`, else the nearest one above the current directory."""
    own = Path(workspace) / ".env"
    if own.is_file():
        return own
    from dotenv import find_dotenv

    found = find_dotenv(usecwd=True)
    return Path(found) if found else None


def user_env_file(environ: Mapping[str, str] | None = None) -> Path:
    """The person's own `.env`, by the XDG rule (a relative XDG_CONFIG_HOME is ignored, as the
    rule says)."""
    environ = os.environ if environ is None else environ
    xdg = environ.get("XDG_CONFIG_HOME") or ""
    base = Path(xdg) if os.path.isabs(xdg) else Path(environ.get("HOME") or Path.home()) / ".config"
    return base / "flower" / ".env"


def claude_settings_file(environ: Mapping[str, str] | None = None) -> Path:
    """Claude Code's user settings: its config folder is CLAUDE_CONFIG_DIR when set."""
    environ = os.environ if environ is None else environ
    folder = environ.get("CLAUDE_CONFIG_DIR") or ""
    base = Path(folder) if folder else Path(environ.get("HOME") or Path.home()) / ".claude"
    return base / "settings.json"


def config_sources(workspace: str | Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    """The files that may give credentials and model settings, strongest first: the one place
    that decides the order (the process environment beats every one of them)."""
    found: list[Path] = []
    for path in (find_env_file(workspace), user_env_file(environ), claude_settings_file(environ)):
        if path is not None and path.is_file() and path.resolve() not in {p.resolve() for p in found}:
            found.append(path)
    return found


def _values_of(path: Path, *, settings: bool) -> dict[str, str]:
    if settings:
        # Claude Code's own file: a broken one is its business, never a reason to stop a run
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        env = data.get("env") if isinstance(data, dict) else None
        if not isinstance(env, dict):
            return {}
        # only what flower may pass on; the rest of that block is for Claude Code alone
        return {k: v for k, v in env.items() if k in WORKSPACE_ENV_KEYS and isinstance(v, str)}
    from dotenv import dotenv_values

    # no interpolation: "${HOME}" in a value must not pull other variables into it
    return {k: v for k, v in dotenv_values(path, interpolate=False).items() if v is not None}


def load_workspace_env(workspace: str | Path) -> EnvFile | None:
    """Put what the config sources contribute into os.environ (a command that serves one
    workspace for its whole life); see ``read_workspace_env``."""
    result = read_workspace_env(workspace)
    if result is not None:
        os.environ.update(result.values)
    return result


def read_workspace_env(workspace: str | Path, environ: Mapping[str, str] | None = None) -> EnvFile | None:
    """What the allowed keys of the config sources (``config_sources``) add to ``environ``
    (os.environ unless told), never over a set variable, without changing any environment; says
    once, on the `flower` logger, what the workspace's file had that was left out. None when
    there is no file."""
    environ = os.environ if environ is None else environ
    paths = config_sources(workspace, environ)
    if not paths:
        return None
    settings = claude_settings_file(environ)
    own = find_env_file(workspace)
    sources = [(path, _values_of(path, settings=path == settings)) for path in paths]
    first = own if own is not None and own in paths else paths[0]
    result = EnvFile(path=first.resolve())
    for _path, values in sources:
        for key, value in values.items():
            if key in CREDENTIAL_KEYS or is_secret_name(key):
                remember(value)  # masked even where it never reaches the environment
        for line in (values.get(HEADER_ENV) or "").splitlines():
            remember(line.partition(":")[2].strip())
    in_environ = any(environ.get(k) for k in CREDENTIAL_KEYS)
    credential_from = (
        None
        if in_environ
        else next((p for p, values in sources if any(values.get(k) for k in CREDENTIAL_KEYS)), None)
    )
    result.credential_from = credential_from.resolve() if credential_from is not None else None
    for path, values in sources:
        mine = path == first
        for key, value in values.items():
            if key not in WORKSPACE_ENV_KEYS:
                if mine:
                    result.ignored.append(key)
            elif key in environ or key in result.values or not value:
                continue
            elif key in ENDPOINT_KEYS and path != credential_from:
                if mine:
                    result.held.append(key)
            else:
                result.values[key] = value
                result.applied.append(key)
                result.origins[key] = path.resolve()
    notice = result.notice()
    if notice is not None:
        said = (str(result.path), tuple(result.ignored), tuple(result.held))
        with _said_lock:
            fresh = said not in _said
            _said.add(said)
        if fresh:
            log.warning(notice)
    return result
