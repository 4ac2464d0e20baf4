"""What a program's rule may ask about the place a command runs in.

Every question that depends on the file system goes through here, so a rule itself is a plain
function of its argv. Without a known workspace the questions that need one (symlinks, recursive
reads, git's repository) cannot be answered, and the forms that need them are refused.

``confined`` says whether the command will run inside ``flower.shell.confine``: then the forms
only the confinement makes harmless are glances too (``env``, ``printenv``, ``cd``, ``top -b``,
``git remote -v``): they print an environment of the confinement's own, change a shell that ends
with the command, write a home folder that is read-only, show URLs whose tokens are masked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .gitrepo import check_repository
from .paths import Reads, check_path, check_tree, real_root
from .refusal import Refused


@dataclass(frozen=True)
class Context:
    workspace: Path | None
    confined: bool = False

    def needs_confinement(self, what: str) -> None:
        """Raise Refused unless the command runs confined (``what``: the form, for the reason)."""
        if not self.confined:
            raise Refused(f"{what} (only inside the confinement)")

    def read(self, value: str, reads: Reads) -> None:
        """Raise Refused unless the program may read ``value`` (see ``paths``)."""
        check_path(value, reads, self.workspace)

    def read_tree(self, value: str, *, follow_symlinks: bool) -> None:
        """Raise Refused unless a recursive content read of ``value`` meets no credential."""
        check_tree(value, self.workspace, follow_symlinks=follow_symlinks)

    def is_directory(self, value: str) -> bool:
        """Whether ``value`` names a folder; refuses when that cannot be known."""
        if self.workspace is None:
            raise Refused("a path that may be a folder, without a known workspace")
        return (real_root(self.workspace) / value).is_dir()

    def git_repository(self) -> None:
        """Raise Refused unless the repository git would use here is inert (see ``gitrepo``)."""
        check_repository(self.workspace)

    def own_configuration(
        self, program: str, variables: tuple[str, ...], home_paths: tuple[str, ...]
    ) -> None:
        """Raise Refused when the user's configuration of ``program`` lies inside the workspace.

        The user's own configuration (``~/.gitconfig``, ``~/.kube/config``, ...) is trusted
        because a worker cannot write it; a workspace that holds HOME, or a variable naming a
        file in the workspace (``KUBECONFIG=./cfg``), would break that.
        """
        if self.workspace is None:
            return
        root = real_root(self.workspace)
        home = os.environ.get("HOME", "")
        candidates = [p for v in variables for p in os.environ.get(v, "").split(os.pathsep) if p]
        candidates += [os.path.join(home, p) for p in home_paths if home]
        for candidate in candidates:
            path = Path(candidate) if os.path.isabs(candidate) else root / candidate
            if Path(os.path.realpath(path)).is_relative_to(root):
                raise Refused(f"{program}'s own configuration lies in the workspace ({candidate})")

    def program(self, name: str) -> None:
        """Raise Refused when ``name`` would run a file inside the workspace.

        A workspace folder on PATH (an activated ``.venv/bin``, ``node_modules/.bin``, a
        relative entry such as ``.``) would let a worker shadow ``cat`` or ``git`` with its own
        program.
        """
        if self.workspace is None:
            return
        root = real_root(self.workspace)
        for entry in os.environ.get("PATH", "").split(os.pathsep):
            folder = Path(entry) if entry else Path(".")
            if not folder.is_absolute():
                folder = root / folder
            candidate = folder / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                if Path(os.path.realpath(candidate)).is_relative_to(root):
                    raise Refused(f"{name} would run a program from the workspace")
                return
