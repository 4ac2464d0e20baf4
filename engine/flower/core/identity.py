"""A workspace's identity: what makes two folders on two machines "the same work" for a shared
store, so that a run started in one can be continued in the other.

The rule (README, "Outgrowing one machine"):

- **A git checkout on a branch, with a remote**: the remote's URL and the branch, plus the
  workspace's place inside the repository when it is a subfolder. The URL is normalised so that
  the ways of writing one repository agree and carry no secret: credentials and user names are
  dropped, the host is lower-cased, the port and a trailing ``.git`` go
  (``https://tok@github.com/Org/repo.git`` and ``git@github.com:Org/repo`` are both
  ``github.com/Org/repo``). A local path remote is its resolved path.
- **Several remotes**: the one the branch tracks; else ``origin``; else the first by name.
- **No remote, a detached HEAD, not a git repository, or no git**: this machine and this
  folder (host name and resolved path). Such a run is continued only where it started: there
  is no way to tell that another folder holds the same work (a detached HEAD moves with every
  commit, so it cannot name the work either).

A machine with a different repository, branch or subfolder never shares an identity with this
one, so it never picks up this run.
"""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from ..base.i18n import _

__all__ = ["WorkspaceIdentity", "identify", "normalize_remote"]

_GIT_TIMEOUT_S = 10


@dataclass(frozen=True)
class WorkspaceIdentity:
    """``key`` names the work in a shared store; ``why`` says, for a person, how it was chosen."""

    key: str
    kind: Literal["git", "folder"]
    why: str

    @property
    def shared(self) -> bool:
        """Whether another machine's checkout can have this identity."""
        return self.kind == "git"


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def normalize_remote(url: str, *, base: Path | None = None) -> str:
    """One spelling per repository, without credentials (see the module's rule)."""
    text = url.strip()
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme == "file":
            return _local(Path(parts.path), base)
        host = (parts.hostname or "").lower()
        path = parts.path
    elif ":" in text and "/" not in text.split(":", 1)[0]:
        # scp-like syntax: [user@]host:path
        hostpart, path = text.split(":", 1)
        host = hostpart.rpartition("@")[2].lower()
    else:
        return _local(Path(text), base)
    path = "/" + path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    return f"{host}{path}"


def _local(path: Path, base: Path | None) -> str:
    if not path.is_absolute() and base is not None:
        path = base / path
    resolved = str(path.resolve())
    return "file:" + resolved.removesuffix(".git").rstrip("/")


def _remote_of(repo: Path, branch: str) -> str | None:
    tracked = _git(repo, "config", "--get", f"branch.{branch}.remote")
    names = (_git(repo, "remote") or "").split()
    if tracked and tracked in names:
        return tracked
    if "origin" in names:
        return "origin"
    return sorted(names)[0] if names else None


def _folder(workspace: Path, why: str) -> WorkspaceIdentity:
    return WorkspaceIdentity(f"folder:{socket.gethostname()}:{workspace}", "folder", why)


def identify(workspace: str | Path) -> WorkspaceIdentity:
    """The identity of ``workspace`` (a path on this machine), by the module's rule."""
    ws = Path(workspace).expanduser().resolve()
    top = _git(ws, "rev-parse", "--show-toplevel")
    if not top:
        return _folder(ws, _("不是 git 仓库:只在这台机器的这个目录接着"))
    branch = _git(ws, "symbolic-ref", "-q", "--short", "HEAD")
    if not branch:
        return _folder(ws, _("git 处于 detached HEAD:只在这台机器的这个目录接着;切到一个分支才能换机器接着"))
    remote = _remote_of(ws, branch)
    url = _git(ws, "remote", "get-url", remote) if remote else None
    if not remote or not url:
        return _folder(ws, _("git 仓库没有 remote:只在这台机器的这个目录接着"))
    repo = normalize_remote(url, base=Path(top))
    inside = (_git(ws, "rev-parse", "--show-prefix") or "").strip("/")
    key = f"git:{repo}#{branch}" + (f":{inside}" if inside else "")
    if inside:
        why = _("{repo} 的 {branch} 分支里的 {inside}(remote {remote})")
    else:
        why = _("{repo} 的 {branch} 分支(remote {remote})")
    return WorkspaceIdentity(key, "git", why.format(repo=repo, branch=branch, inside=inside, remote=remote))
