"""Whether the git repository a glance would use can run a program of its own.

Read-only git commands still run programs that a repository's own files name: ``core.fsmonitor``
on every index refresh (``git status``, ``git diff``, ``git describe --dirty``), clean filters,
textconv drivers, ``diff.external``, ``gpg.program`` when ``log.showSignature`` is set, hooks such
as ``post-index-change``, and all of these again in every populated submodule or embedded
repository (``git status`` enters them even without a ``.gitmodules``). A worker can write all of
those files, so git glances are admitted only when the repository git would find from the
workspace, found the way git finds it, is inert:

- its configuration (``config`` of the common dir and ``config.worktree``) sets only keys from
  the inert list below (no includes, no drivers, no programs);
- its hooks folder holds nothing but ``*.sample`` files;
- every populated gitlink of its index (submodules and embedded repositories) is itself an inert
  repository, up to a small depth (a submodule's ``core.worktree`` naming its own folder is fine);
- it reads no objects from elsewhere (``objects/info/alternates``), and a ``.git`` file in the
  workspace names a git directory outside it only when that directory links back (a linked
  worktree); otherwise it would point git at another repository;
- no variable points git elsewhere or adds configuration (``GIT_DIR``, ``GIT_WORK_TREE``,
  ``GIT_COMMON_DIR``, ``GIT_INDEX_FILE``, ``GIT_OBJECT_DIRECTORY``, ``GIT_CONFIG_PARAMETERS``,
  ``GIT_CONFIG_COUNT``, ``GIT_EXTERNAL_DIFF``, ...); in the command itself any assignment is
  refused anyway.

No repository at all is fine: git then fails without running anything. The user's own global and
system configuration are trusted, as for any git command they run themselves.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from .paths import real_root
from .refusal import Refused

# section -> keys that never make git run a program or look elsewhere ("*": any key).
_INERT: dict[str, frozenset[str]] = {
    "core": frozenset(
        {
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
            "autocrlf",
            "eol",
            "safecrlf",
            "quotepath",
            "checkstat",
            "trustctime",
            "abbrev",
            "commentchar",
            "whitespace",
            "preloadindex",
            "protecthfs",
            "protectntfs",
            "longpaths",
            "sharedrepository",
            "sparsecheckout",
            "sparsecheckoutcone",
        }
    ),
    "extensions": frozenset({"objectformat", "worktreeconfig", "refstorage", "noop"}),
    "user": frozenset({"*"}),
    "init": frozenset({"defaultbranch"}),
    "pull": frozenset({"rebase", "ff"}),
    "push": frozenset({"default", "autosetupremote", "followtags"}),
    "fetch": frozenset({"prune", "prunetags"}),
    "merge": frozenset({"ff", "conflictstyle"}),
    "rebase": frozenset({"autosquash", "autostash", "updaterefs"}),
    "status": frozenset({"showuntrackedfiles", "short", "branch", "relativepaths", "aheadbehind", "renames"}),
    "log": frozenset({"date", "decorate", "abbrevcommit", "follow"}),
    "diff": frozenset(
        {
            "renames",
            "algorithm",
            "mnemonicprefix",
            "noprefix",
            "colormoved",
            "indentheuristic",
            "context",
            "interhunkcontext",
            "statgraphwidth",
            "relative",
        }
    ),
    "color": frozenset({"*"}),
    "advice": frozenset({"*"}),
    # Aliases never run here: a glance only names git's built-in subcommands.
    "alias": frozenset({"*"}),
    "lfs": frozenset({"repositoryformatversion"}),
}
# section with a subsection ([remote "origin"]) -> inert keys
_INERT_NAMED: dict[str, frozenset[str]] = {
    "remote": frozenset({"url", "pushurl", "fetch", "push", "tagopt", "prune", "mirror"}),
    "branch": frozenset({"*"}),
    "color": frozenset({"*"}),
    # Read commands enter a submodule only as a repository of its own, inspected like this one.
    "submodule": frozenset({"url", "active", "branch"}),
}
# Variables that point git at other files, objects or configuration than the repository's own.
_REDIRECTING_ENVIRONMENT = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
)
_MAX_DEPTH = 3
_GITLINK = 0o160000


@dataclass(frozen=True)
class _Repository:
    gitdir: Path
    worktree: Path | None


def _config_keys(text: str, shown: str) -> list[tuple[str, str | None, str, str]]:
    """(section, subsection, key, value as first written) of every variable a git config file sets."""
    keys: list[tuple[str, str | None, str, str]] = []
    section: tuple[str, str | None] | None = None
    lines = text.split("\n")
    k = 0

    def bad() -> Refused:
        return Refused(f"a git config git might read differently ({shown})")

    while k < len(lines):
        line = lines[k].strip()
        k += 1
        while line.startswith("["):
            end = line.find("]")
            if end < 0:
                raise bad()
            header = line[1:end].strip()
            if '"' in header:
                name, _, rest = header.partition(" ")
                if not (rest.startswith('"') and rest.endswith('"')):
                    raise bad()
                section = (name.lower(), rest[1:-1])
            elif "." in header:
                name, _, sub = header.partition(".")
                section = (name.lower(), sub)
            else:
                section = (header.lower(), None)
            line = line[end + 1 :].strip()
        if not line or line[0] in "#;":
            continue
        if section is None:
            raise bad()
        name, _, value = line.partition("=")
        name = name.strip().lower()
        if not name or not name[0].isalpha() or not all(c.isalnum() or c == "-" for c in name):
            raise bad()
        keys.append((section[0], section[1], name, value.strip().strip('"')))
        # Follow the value to its end: a trailing backslash continues it on the next line.
        in_quotes = False
        while True:
            i = 0
            continued = False
            while i < len(value):
                ch = value[i]
                if ch == "\\":
                    if i + 1 == len(value):
                        continued = True
                    i += 2
                    continue
                if ch == '"':
                    in_quotes = not in_quotes
                elif ch in "#;" and not in_quotes:
                    break
                i += 1
            if not continued:
                break
            if k >= len(lines):
                raise bad()
            value = lines[k]
            k += 1
        if in_quotes:
            raise bad()
    return keys


def _check_config(path: Path, worktree: Path | None = None) -> str:
    """Raise Refused unless a config file is inert; returns its object format.

    ``core.worktree`` is allowed only when it names ``worktree``: a submodule's git directory
    points back at the submodule's folder that way.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "sha1"
    except (OSError, UnicodeDecodeError) as exc:
        raise Refused(f"an unreadable git config ({path.name})") from exc
    object_format = "sha1"
    for section, subsection, key, value in _config_keys(text, path.name):
        allowed = (_INERT_NAMED if subsection is not None else _INERT).get(section, frozenset())
        back_to_worktree = worktree is not None and (path.parent / value).resolve() == worktree.resolve()
        if (section, subsection, key) == ("core", None, "worktree") and back_to_worktree:
            continue
        if key not in allowed and "*" not in allowed:
            shown = f"{section}.{subsection}.{key}" if subsection is not None else f"{section}.{key}"
            raise Refused(f"the repository's git config sets {shown}")
        if (section, key) == ("extensions", "objectformat"):
            object_format = value.lower()
    return object_format


def _valid_gitdir(path: Path) -> bool:
    common = path
    commondir = path / "commondir"
    if commondir.is_file():
        common = path / commondir.read_text(encoding="utf-8", errors="replace").strip()
    return (path / "HEAD").is_file() and (common / "objects").is_dir() and (common / "refs").is_dir()


def _gitdir_of(dotgit: Path, workspace: Path) -> Path:
    """The git directory a ``.git`` entry names (a folder, or a ``gitdir:`` file).

    A ``.git`` file in the workspace may name a git directory outside it only when that
    directory links back to it, as a linked worktree's does (``gitdir`` inside it names this
    ``.git``): a worker can write the file, not the directory it would point at.
    """
    if dotgit.is_dir():
        gitdir = dotgit
    elif dotgit.is_file():
        text = dotgit.read_text(encoding="utf-8", errors="replace")
        if not text.startswith("gitdir:"):
            raise Refused("a .git file git cannot read")
        gitdir = (dotgit.parent / text[len("gitdir:") :].strip()).resolve()
        inside = dotgit.resolve().is_relative_to(workspace)
        if inside and not gitdir.is_relative_to(workspace):
            back = gitdir / "gitdir"
            linked = (
                back.is_file()
                and Path(back.read_text(encoding="utf-8").strip()).resolve() == dotgit.resolve()
            )
            if not linked:
                raise Refused("a .git file pointing at another repository")
    else:
        raise Refused("a .git entry that is neither a folder nor a file")
    if not _valid_gitdir(gitdir):
        raise Refused("a .git that is not a valid repository")
    return gitdir


def _discover(root: Path) -> _Repository | None:
    folder = root
    while True:
        dotgit = folder / ".git"
        if os.path.lexists(dotgit):
            return _Repository(_gitdir_of(dotgit, root), folder)
        if _valid_gitdir(folder):
            return _Repository(folder, None)  # a bare repository
        if folder.parent == folder:
            return None
        folder = folder.parent


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    c = data[pos]
    pos += 1
    value = c & 0x7F
    while c & 0x80:
        c = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (c & 0x7F)
    return value, pos


def gitlinks(index: Path, object_format: str = "sha1") -> list[str]:
    """Paths of the gitlink entries (submodules, embedded repositories) of an index file."""
    try:
        data = index.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise Refused("an unreadable git index") from exc
    hash_len = 32 if object_format == "sha256" else 20
    try:
        if data[:4] != b"DIRC":
            raise Refused("a git index in an unknown format")
        version, count = struct.unpack(">II", data[4:12])
        if version not in (2, 3, 4):
            raise Refused("a git index in an unknown format")
        pos = 12
        previous = b""
        links: list[str] = []
        for _ in range(count):
            start = pos
            (mode,) = struct.unpack(">I", data[pos + 24 : pos + 28])
            pos += 40 + hash_len
            (flags,) = struct.unpack(">H", data[pos : pos + 2])
            pos += 2
            if version >= 3 and flags & 0x4000:
                pos += 2
            if version == 4:
                strip, pos = _varint(data, pos)
                end = data.index(b"\0", pos)
                name = previous[: len(previous) - strip] + data[pos:end]
                pos = end + 1
            else:
                end = data.index(b"\0", pos)
                name = data[pos:end]
                pos = start + ((end - start + 8) & ~7)
            previous = name
            if mode & 0o170000 == _GITLINK:
                links.append(name.decode("utf-8", errors="surrogateescape"))
        # A split index keeps its entries in another file this reader does not follow.
        while pos + 8 <= len(data) - hash_len:
            signature = data[pos : pos + 4]
            (size,) = struct.unpack(">I", data[pos + 4 : pos + 8])
            if signature == b"link":
                raise Refused("a split git index")
            pos += 8 + size
    except (struct.error, ValueError, IndexError) as exc:
        raise Refused("a git index that cannot be read") from exc
    return links


def _borrows(alternates: Path) -> bool:
    """An alternates file that names a place. The CLI's sandbox leaves an empty one behind (the
    mount point that keeps commands from writing it), and an empty file names nothing."""
    if not os.path.lexists(alternates):
        return False
    if alternates.is_symlink() or not alternates.is_file():
        return True
    try:
        with alternates.open("rb") as fh:
            return bool(fh.read(1 << 16).strip()) or bool(fh.read(1))
    except OSError:
        return True


def _inspect(repo: _Repository, root: Path, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise Refused("repositories nested too deep")
    common = repo.gitdir
    commondir = repo.gitdir / "commondir"
    if commondir.is_file():
        common = (repo.gitdir / commondir.read_text(encoding="utf-8", errors="replace").strip()).resolve()
    nested = repo.worktree if depth else None
    object_format = _check_config(common / "config", nested)
    _check_config(repo.gitdir / "config.worktree", nested)
    for name in ("alternates", "http-alternates"):
        if _borrows(common / "objects" / "info" / name):
            raise Refused("a repository borrowing objects from another (objects/info/alternates)")
    hooks = common / "hooks"
    if hooks.is_dir():
        for entry in sorted(os.listdir(hooks)):
            if not entry.endswith(".sample"):
                raise Refused(f"a git hook is installed (hooks/{entry})")
    if repo.worktree is None:
        return
    for link in gitlinks(repo.gitdir / "index", object_format):
        inner = repo.worktree / link
        if os.path.lexists(inner / ".git"):
            _inspect(_Repository(_gitdir_of(inner / ".git", root), inner), root, depth + 1)


def check_repository(workspace: Path | None) -> None:
    """Raise Refused unless a git glance run in ``workspace`` cannot run a repository's program."""
    if workspace is None:
        raise Refused("git without a known workspace")
    for name in _REDIRECTING_ENVIRONMENT:
        if name in os.environ:
            raise Refused(f"git while {name} is set")
    root = real_root(workspace)
    try:
        repo = _discover(root)
        if repo is not None:
            _inspect(repo, root, 0)
    except OSError as exc:
        raise Refused("a repository that cannot be inspected") from exc
