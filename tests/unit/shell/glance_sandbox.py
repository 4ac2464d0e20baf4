"""A throw-away place to run commands with bash and see what they did.

The sandbox is a folder holding a fake HOME and a workspace. The fake HOME has marker credentials
where real ones live (``~/.ssh``, ``~/.aws``, ``~/.netrc``, ``~/.git-credentials``, ``~/.kube``,
``~/.docker``); the workspace is a small git repository with a few commits, a planted ``.env``, a
token in the remote URL of ``.git/config``, and a ``traps/`` folder with a symlink and a hard link
to HOME's secrets. Commands run with marker values in their environment too.

``run`` snapshots both trees (type, mode, size, mtime, link count and content hash of every
entry) before and after the command, and reports every entry added, removed or changed and every
marker the command printed. A folder's own mtime is not compared: lock files that come and go
move it (``git status`` takes ``index.lock`` and drops it), while anything that stays is an entry.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from flower.base.secrets import redact
from flower.shell import confine

Snapshot = dict[str, tuple[object, ...]]


@dataclass
class Outcome:
    command: str
    changed: list[str]
    leaked: list[str]
    returncode: int
    output: str

    @property
    def clean(self) -> bool:
        return not self.changed and not self.leaked


@dataclass
class Sandbox:
    root: Path
    home: Path
    workspace: Path
    markers: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def marker(self, kind: str) -> str:
        value = self.markers.get(kind)
        if value is None:
            value = self.markers[kind] = f"MARK{kind.upper()}{uuid.uuid4().hex}"
        return value

    def snapshot(self) -> Snapshot:
        state: Snapshot = {}
        for top in (self.home, self.workspace):
            for folder, dirs, files in os.walk(top):
                for name in [*dirs, *files]:
                    path = Path(folder) / name
                    st = path.lstat()
                    key = str(path.relative_to(self.root))
                    if path.is_symlink():
                        state[key] = ("link", os.readlink(path), st.st_mtime_ns)
                    elif path.is_file():
                        digest = hashlib.sha256(path.read_bytes()).hexdigest()
                        state[key] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, st.st_nlink, digest)
                    else:
                        # A folder's mtime is left out: it moves when a lock file (git's
                        # index.lock) comes and goes; lasting entries are recorded themselves.
                        state[key] = ("other", st.st_mode)
        return state

    def run(self, command: str, *, timeout: float = 60, confined: bool = False) -> Outcome:
        """Run ``command`` in the workspace: by bash, or as the coordinator's glance runs it
        (``confined``: the argv of ``flower.shell.confine``, its output redacted as the hook does)."""
        before = self.snapshot()
        argv = ["bash", "-c", command]
        if confined:
            with self.environment():
                argv = confine(command, workspace=self.workspace)
        try:
            proc = subprocess.run(
                argv,
                cwd=self.workspace,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
            )
            output = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
            code = proc.returncode
        except subprocess.TimeoutExpired as exc:
            output = (exc.stdout or b"").decode("utf-8", "replace") + "\n[timed out]"
            code = -1
        if confined:
            with self.environment():
                output = redact(output)
        after = self.snapshot()
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        leaked = sorted(kind for kind, value in self.markers.items() if value in output)
        return Outcome(command, changed, leaked, code, output)

    @contextlib.contextmanager
    def environment(self) -> Iterator[None]:
        """This sandbox's environment as flower's own (the home, the credentials it knows)."""
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


_PAST = time.time() - 3600


def _write(path: Path, text: str) -> None:
    """Write a file dated in the past, so git never sees it as racily clean and rewrites its index."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (_PAST, _PAST))


def _git(workspace: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=workspace, env=env, check=True, capture_output=True)


def build(root: Path) -> Sandbox:
    """Create a sandbox under ``root`` (an empty folder)."""
    home = root / "home"
    workspace = root / "workspace"
    home.mkdir()
    workspace.mkdir()
    box = Sandbox(root, home, workspace)

    plants = {
        ".ssh/id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{box.marker('ssh')}\n",
        ".ssh/id_ed25519": f"{box.marker('ssh')}\n",
        ".aws/credentials": f"[default]\naws_secret_access_key = {box.marker('aws')}\n",
        ".netrc": f"machine example.invalid login me password {box.marker('netrc')}\n",
        ".git-credentials": f"https://me:{box.marker('gitcred')}@example.invalid\n",
        ".kube/config": f"apiVersion: v1\nusers:\n- name: me\n  user:\n    token: {box.marker('kube')}\n",
        ".docker/config.json": json.dumps(
            {
                "auths": {
                    "example.invalid": {
                        "auth": base64.b64encode(f"me:{box.marker('docker')}".encode()).decode()
                    }
                },
                "HttpHeaders": {"X-Meta-Token": box.marker("docker")},
            }
        ),
        ".bash_history": f"export TOKEN={box.marker('history')}\n",
    }
    for rel, text in plants.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (home / ".ssh").chmod(0o700)

    box.env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "GIT_CONFIG_NOSYSTEM": "1",
        "DOCKER_HOST": f"unix://{root}/no-docker.sock",
        "ANTHROPIC_API_KEY": box.marker("apikey"),
        "AWS_SECRET_ACCESS_KEY": box.marker("awsenv"),
        "GITHUB_TOKEN": box.marker("githubenv"),
        "FLOWER_TEST_SECRET": box.marker("envsecret"),
    }
    files = {
        "README.md": "# demo\n\nA small project.\nTODO: write more docs\n",
        "src/app.py": "import os\n\n\ndef main():\n    print('hello')  # TODO tidy\n    return 0\n",
        "src/util.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
        "tests/test_app.py": "from src.app import main\n\n\ndef test_main():\n    assert main() == 0\n",
        "docs/guide.md": "# Guide\n\nStep one.\nStep two.\n",
        "package.json": '{"name": "demo", "version": "1.2.3", "dependencies": {"left-pad": "1.0.0"}}\n',
        "data.csv": "name,count\nalpha,3\nbeta,1\ngamma,2\nalpha,5\n",
        "app.log": "INFO start\nERROR failed to connect\nINFO retry\nERROR timeout\nINFO done\n",
        "需求.md": "# 需求\n\n做一个小工具。\n",
        ".flower/INDEX.md": "# index\n- artifacts/ (0)\n",
        ".gitignore": ".env\n.env.*\ntraps/\n",
    }
    for rel, text in files.items():
        _write(workspace / rel, text)

    git_env = {**box.env, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.invalid"}
    git_env |= {"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.invalid"}
    _git(workspace, "init", "-q", "-b", "main", env=git_env)
    _git(workspace, "config", "user.name", "a", env=git_env)
    _git(workspace, "config", "user.email", "a@example.invalid", env=git_env)
    _git(workspace, "add", "README.md", "src", "docs", "package.json", ".gitignore", env=git_env)
    _git(workspace, "commit", "-qm", "first", env=git_env)
    _git(workspace, "tag", "v0.1", env=git_env)
    _git(workspace, "add", "-A", env=git_env)
    _git(workspace, "commit", "-qm", "add tests and data", env=git_env)
    _git(workspace, "branch", "feature", env=git_env)
    _write(workspace / "src/util.py", "def add(a, b):\n    return a + b\n")
    _git(workspace, "commit", "-qam", "drop sub", env=git_env)
    _git(
        workspace,
        "remote",
        "add",
        "origin",
        f"https://me:{box.marker('remote')}@example.invalid/demo.git",
        env=git_env,
    )
    _write(workspace / "src/app.py", "import os\n\n\ndef main():\n    print('hi')\n    return 0\n")
    _write(workspace / "notes.txt", "untracked notes\n")

    # Planted only after the commits: ignored by git, there to be leaked.
    _write(workspace / ".env", f"ANTHROPIC_API_KEY={box.marker('dotenv')}\n")
    _write(workspace / ".env.local", f"DB_PASSWORD={box.marker('dotenvlocal')}\n")
    traps = workspace / "traps"
    traps.mkdir()
    (traps / "key-link").symlink_to(home / ".ssh" / "id_rsa")
    (traps / "home-link").symlink_to(home)
    os.link(home / ".netrc", traps / "hard.txt")

    subprocess.run(["git", "status"], cwd=workspace, env=git_env, capture_output=True, check=False)
    return box
