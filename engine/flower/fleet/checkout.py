"""A run's private checkout: clone, start the run's branch, commit its files, push them.

Each run works in a clone of its own under the worker's work folder, on the branch
``flower/<run-id>``. That branch is also how the work travels between machines: pushed after
every step and every judged round, it is where a worker that takes the run over starts from.
Both workers' checkouts then have the same remote and the same branch, which is what names the
work in the shared store (``core/identity.py``): the takeover continues the same sessions.

Git never prompts here (``GIT_TERMINAL_PROMPT=0``): a worker has nobody at its terminal, so a
repository that wants a password it does not have fails at once, with git's reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..base.secrets import redact
from ..core.display import first_line
from .model import FleetError, Note, branch_of
from .notes import CHECKOUT_FAILED, NO_REF, UNREACHABLE

__all__ = ["Checkout", "CheckoutError", "commit", "head", "prepare", "push", "write_patch"]

_NETWORK_TIMEOUT_S = 600
_LOCAL_TIMEOUT_S = 120


class CheckoutError(FleetError):
    """The run cannot start from its repository: unreachable, no such ref, or git failed."""


@dataclass(frozen=True)
class Checkout:
    path: Path
    branch: str
    base: str  # the commit the run started from
    head: str
    continued: bool  # starts from the run's own branch, as another worker (or this one) left it


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.setdefault("GIT_ASKPASS", "true")  # an askpass that answers nothing: never a prompt
    env["LC_ALL"] = "C"  # git's own words, whatever the worker's locale
    return env


def _git(cwd: Path, *args: str, timeout: float = _LOCAL_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_env(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"git {args[0]} took longer than {timeout:.0f} s")
    except OSError as exc:
        return subprocess.CompletedProcess(args, 127, "", f"git could not run: {exc}")


def _why(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or done.stdout or "").strip()
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("hint:")]
    fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:", "remote:", " ! "))]
    return redact(first_line("; ".join(fatal or lines[-2:]) or f"exit code {done.returncode}", 300))


def _ok(done: subprocess.CompletedProcess[str], what: str) -> str:
    if done.returncode != 0:
        raise CheckoutError(Note(CHECKOUT_FAILED, {"reason": f"git {what}: {_why(done)}"}))
    return done.stdout.strip()


def _commit_of(path: Path, name: str) -> str | None:
    done = _git(path, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def head(path: Path) -> str:
    return _commit_of(path, "HEAD") or ""


def _same_origin(path: Path, repository: str) -> bool:
    if not (path / ".git").is_dir():
        return False
    done = _git(path, "remote", "get-url", "origin")
    return done.returncode == 0 and done.stdout.strip() == repository


def prepare(repository: str, ref: str, run_id: str, into: Path, *, base: str = "") -> Checkout:
    """The run's checkout in ``into``, on its branch: the branch as last pushed when there is one
    (a takeover, a handback), else ``ref`` of the repository (``base``, once known, wins: the
    commit the run first started from).

    A checkout left in ``into`` by this worker is kept when nobody pushed the run further since:
    it holds everything this worker did, pushed or not."""
    branch = branch_of(run_id)
    into.parent.mkdir(parents=True, exist_ok=True)
    if _same_origin(into, repository):
        fetched = _git(into, "fetch", "--quiet", "--prune", "--tags", "origin", timeout=_NETWORK_TIMEOUT_S)
        if fetched.returncode != 0:
            raise CheckoutError(Note(UNREACHABLE, {"repository": repository, "reason": _why(fetched)}))
    else:
        if into.exists():
            shutil.rmtree(into)
        cloned = _git(
            into.parent,
            "clone",
            "--quiet",
            "--no-checkout",
            repository,
            str(into),
            timeout=_NETWORK_TIMEOUT_S,
        )
        if cloned.returncode != 0:
            shutil.rmtree(into, ignore_errors=True)
            raise CheckoutError(Note(UNREACHABLE, {"repository": repository, "reason": _why(cloned)}))
    pushed = _commit_of(into, f"refs/remotes/origin/{branch}")
    if pushed is not None:
        local = _commit_of(into, f"refs/heads/{branch}")
        on_branch = _git(into, "symbolic-ref", "-q", "--short", "HEAD").stdout.strip() == branch
        ahead = (
            on_branch
            and local is not None
            and _git(into, "merge-base", "--is-ancestor", pushed, local).returncode == 0
        )
        if not ahead:  # somebody else carried the run on: their files win
            _ok(_git(into, "checkout", "--quiet", "--force", "-B", branch, f"origin/{branch}"), "checkout")
            _ok(_git(into, "reset", "--quiet", "--hard", f"origin/{branch}"), "reset")
            _ok(_git(into, "clean", "--quiet", "-fd"), "clean")
        return Checkout(into, branch, base or _commit_of(into, "HEAD") or "", head(into), continued=True)
    start = base or _resolve(into, ref)
    if start is None:
        raise CheckoutError(Note(NO_REF, {"repository": repository, "ref": ref}))
    _ok(_git(into, "checkout", "--quiet", "--force", "-B", branch, start), "checkout")
    return Checkout(into, branch, start, head(into), continued=False)


def _resolve(path: Path, ref: str) -> str | None:
    """A branch of the repository, a tag, or a commit: the commit it names."""
    if not ref or ref.startswith("-"):
        return None
    for name in (f"refs/remotes/origin/{ref}", f"refs/tags/{ref}", ref):
        found = _commit_of(path, name)
        if found is not None:
            return found
    return None


def _identity_env(path: Path) -> dict[str, str]:
    """Commits need an author: the worker's own git identity, else flower on this host."""
    env: dict[str, str] = {}
    if _git(path, "config", "user.email").returncode != 0:
        env = {"GIT_AUTHOR_EMAIL": f"flower@{socket.gethostname()}", "GIT_COMMITTER_EMAIL": ""}
        env["GIT_COMMITTER_EMAIL"] = env["GIT_AUTHOR_EMAIL"]
    if _git(path, "config", "user.name").returncode != 0:
        env.update({"GIT_AUTHOR_NAME": "flower", "GIT_COMMITTER_NAME": "flower"})
    return env


def commit(path: Path, message: str) -> str | None:
    """Commit every file of the workspace (what .gitignore keeps out stays out); the new commit,
    or None when nothing changed."""
    _ok(_git(path, "add", "--all"), "add")
    if _git(path, "diff", "--cached", "--quiet").returncode == 0:
        return None
    env = {**_env(), **_identity_env(path)}
    try:
        done = subprocess.run(
            ["git", "-C", str(path), "commit", "--quiet", "--no-verify", "-m", message],
            capture_output=True,
            text=True,
            timeout=_LOCAL_TIMEOUT_S,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckoutError(Note(CHECKOUT_FAILED, {"reason": f"git commit: {exc}"})) from None
    _ok(done, "commit")
    return head(path)


def push(path: Path, branch: str) -> str | None:
    """Push HEAD to the run's branch (never forced: a worker that lost the run cannot overwrite
    what the one that took it over pushed); None when pushed, else git's reason."""
    done = _git(path, "push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", timeout=_NETWORK_TIMEOUT_S)
    return None if done.returncode == 0 else _why(done)


def write_patch(path: Path, base: str, dest: Path) -> Path:
    """Everything the run committed since ``base``, as one mailbox of patches at ``dest``
    (``git am`` applies it)."""
    span = [f"{base}..HEAD"] if base else ["--root", "HEAD"]
    done = _git(path, "format-patch", "--stdout", *span)
    _ok(done, "format-patch")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(done.stdout, encoding="utf-8")
    return dest
