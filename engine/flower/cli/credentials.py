"""Credentials: which keys count, whether a run can start, what is configured (masked)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..base.i18n import _

_AUTH_ERROR = re.compile(
    r"\b401\b|invalid api key|invalid x-api-key|authentication|unauthorized|无效.{0,6}(key|token|密钥)", re.I
)

CREDENTIAL_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
SECRET_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")


def mask(secret: str) -> str:
    """Never show a credential: the first 4 characters at most, and its length."""
    secret = secret or ""
    head = secret[:4] if len(secret) >= 12 else ""
    return _("{head}***(共 {n} 位)").format(head=head, n=len(secret))


def env_file_of(workspace: Path) -> Path | None:
    """The .env the Runtime reads: the workspace's, else the nearest one found (or None)."""
    from ..core.envfile import find_env_file

    return find_env_file(workspace)


def load_env(workspace: Path) -> None:
    """The same .env the Runtime reads, the same way: only credentials and model settings."""
    from ..core.envfile import load_workspace_env
    from .problems import quiet_dotenv

    quiet_dotenv()
    load_workspace_env(workspace)


def credential_problem(workspace: Path) -> str | None:
    """Why no run can start here (no credential at all), or None. Checked before asking
    anything, so nobody types a request only to be told the key is missing."""
    from ..core.runtime import check_credentials

    load_env(workspace)
    try:
        check_credentials()
    except RuntimeError as exc:
        from ..core.envfile import user_env_file

        return _(
            "缺少凭证:{exc}\n跑一次 `flower setup` 把 key 存进 {workspace};"
            "或者 `flower setup --user` 存进 {user},每个工作区都读它。"
        ).format(exc=exc, workspace=workspace / ".env", user=user_env_file())
    return None


def describe_credentials() -> list[str]:
    lines = []
    for key in (*SECRET_KEYS, "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL"):
        value = os.environ.get(key)
        if value:
            lines.append(f"{key} = {mask(value) if key in SECRET_KEYS else value}")
    return lines


def looks_like_auth(text: str | None) -> bool:
    return bool(text and _AUTH_ERROR.search(text))
