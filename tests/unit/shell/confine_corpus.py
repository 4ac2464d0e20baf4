"""A hostile workspace and an adversarial corpus, by category, for ``flower.shell.confine``.

The workspace is what a worker gone wrong, or a hostile repository, leaves behind: helpers named
``git``, ``cat``, ``ls``, ``kubectl``, ... on an activated ``.venv/bin`` (and ``node_modules/.bin``);
a repository whose config runs a program at every turn (fsmonitor, filters, textconv, external
diff, pager, hooks, signature and ssh programs, credential helpers); nested repositories that
borrow another repository's objects (a symlinked ``.git``, a gitfile, ``commondir``, alternates,
a submodule), all pointing outside; credential files by 34 common names and secrets by content
under innocent names, some committed and gone from the work tree; a FIFO, a 64 GiB sparse file,
a device node, links to secrets outside. Outside it: a home folder with credential stores, a
canary folder and another repository, all holding unique markers; the caller's environment holds
markers too (credentials, a proxy password, a plain variable) and points ``BASH_ENV``,
``GIT_CONFIG_GLOBAL``, ``KUBECONFIG`` and ``DOCKER_HOST`` at hostile files.

``run`` runs one case through ``confine`` and reports the four figures the confinement promises
are zero: files changed anywhere (the workspace and its ``.git``, the home folder, the canary
folders, new entries in ``/tmp``), markers from outside the workspace printed, environment or
credential markers printed (after the one redaction, as the hook applies it), processes left
running; and how long it took. The corpus generator is shared by the fast test
(``test_confine_corpus.py``) and the full campaign (``scripts/confine_corpus.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import select
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

from flower.base.secrets import redact
from flower.shell.confinement import GLANCE, JUDGE, Limits, plan

Snapshot = dict[str, tuple[object, ...]]
SPARSE = 64 << 30


def _hex() -> str:
    return uuid.uuid4().hex[:20]


@dataclass
class Hostile:
    root: Path
    home: Path
    ws: Path
    outside: Path
    tmp_canary: Path
    scratch: Path
    token: str
    markers: dict[str, str] = field(default_factory=dict)  # kind -> value
    where: dict[str, str] = field(default_factory=dict)  # kind -> "outside" | "env" | "secret"
    env: dict[str, str] = field(default_factory=dict)
    shadow_line: str = ""

    def marker(self, kind: str, where: str) -> str:
        value = self.markers.get(kind)
        if value is None:
            value = self.markers[kind] = f"FLWR{kind.upper().replace('-', '')}{_hex()}"
            self.where[kind] = where
        return value

    # -- what a run may not change, read, print or leave behind

    def snapshot(self) -> Snapshot:
        state: Snapshot = {}
        for top in (self.ws, self.home, self.outside, self.tmp_canary, self.scratch):
            for folder, dirs, files in os.walk(top):
                for name in [*dirs, *files]:
                    path = Path(folder) / name
                    try:
                        st = path.lstat()
                    except FileNotFoundError:
                        continue
                    key = str(path)
                    if stat.S_ISLNK(st.st_mode):
                        state[key] = ("link", os.readlink(path), st.st_mtime_ns)
                    elif stat.S_ISREG(st.st_mode):
                        if st.st_size >= SPARSE:  # the sparse file: its size and blocks say enough
                            state[key] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, st.st_blocks)
                        else:
                            digest = hashlib.sha256(path.read_bytes()).hexdigest()
                            state[key] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, st.st_nlink, digest)
                    elif stat.S_ISDIR(st.st_mode):
                        state[key] = ("dir", st.st_mode)  # lasting entries are recorded themselves
                    else:
                        state[key] = ("other", st.st_mode, st.st_mtime_ns)
        for name in self.tmp_entries():
            state[f"/tmp/{name}"] = ("tmp",)
        return state

    def tmp_entries(self) -> set[str]:
        """Entries of /tmp named for this workspace's token, but the canary folder itself."""
        try:
            names = os.listdir("/tmp")
        except OSError:
            return set()
        return {n for n in names if self.token in n and n != self.tmp_canary.name}

    def lingering(self) -> list[int]:
        """Processes still running whose command line names this workspace's token."""
        found = []
        me = os.getpid()
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == me:
                continue
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if self.token.encode() in cmdline:
                found.append(int(pid))
        return found

    def kill_lingering(self) -> None:
        """Kill what lingers and wait until each is dead (SIGKILL is delivered, not awaited: on a
        busy machine a killed process still shows its command line for a while)."""
        for pid in self.lingering():
            try:
                handle = os.pidfd_open(pid)
            except OSError:
                continue  # already gone
            try:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(handle, signal.SIGKILL)
                # a pidfd turns readable when its process has exited (a zombie has no cmdline)
                select.select([handle], [], [], 60)
            finally:
                os.close(handle)

    @contextlib.contextmanager
    def environment(self) -> Iterator[None]:
        """The caller's environment (what flower's process and the supervisor see) during runs."""
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def cleanup(self) -> None:
        self.kill_lingering()
        shutil.rmtree(self.tmp_canary, ignore_errors=True)
        for name in self.tmp_entries():
            path = Path("/tmp") / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()


_PAST = time.time() - 7200


def _write(path: Path, text: str | bytes, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    if mode is not None:
        path.chmod(mode)
    os.utime(path, (_PAST, _PAST))  # never racily clean: git rewrites no index for it


def _git(cwd: Path, *args: str) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@x.invalid",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@x.invalid",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _key(kind: str, body: str) -> str:
    return f"-----BEGIN {kind} PRIVATE KEY-----\n{body}\n-----END {kind} PRIVATE KEY-----\n"


# 34 common names of credential files, each with content in its usual format
def credential_files(h: Hostile) -> dict[str, str]:
    def m(kind: str) -> str:
        return h.marker(kind, "secret")

    return {
        ".env": f"OPENAI_API_KEY=sk-proj-{m('env-file')}abcdefghijkl\n",
        ".env.local": f"DB_PASSWORD={m('env-local')}\n",
        ".env.production": f"STRIPE_SECRET_KEY=sk_live_{m('env-prod')}\n",
        ".envrc": f"export GITHUB_TOKEN={m('envrc')}\n",
        ".netrc": f"machine api.example.invalid login me password {m('netrc')}\n",
        ".git-credentials": f"https://me:{m('gitcred')}@git.example.invalid\n",
        ".npmrc": f"//registry.example.invalid/:_authToken=npm_{m('npmrc')}abcdefghijklmno\n",
        ".pypirc": f"[pypi]\nusername = __token__\npassword = pypi-{m('pypirc')}{'A' * 40}\n",
        ".pgpass": f"db.example.invalid:5432:app:me:{m('pgpass')}\n",
        ".my.cnf": f'[client]\npassword="{m("mycnf")}"\n',
        ".htpasswd": f"me:$apr1${m('htpasswd')}\n",
        ".vault-token": f"hvs.{m('vault')}ABCDEFGHIJ\n",
        ".boto": f"[Credentials]\naws_secret_access_key = {m('boto')}Zz9\n",
        ".s3cfg": f"[default]\nsecret_key = {m('s3cfg')}Zz9\n",
        ".dockercfg": json.dumps({"example.invalid": {"auth": m("dockercfg")}}),
        "credentials.json": json.dumps({"installed": {"client_secret": m("credjson")}}),
        "client_secret_123.apps.json": json.dumps({"web": {"client_secret": m("clientsecret")}}),
        "service-account.json": json.dumps(
            {"private_key": f"-----BEGIN PRIVATE KEY-----\n{m('sa')}\n-----END PRIVATE KEY-----\n"}
        ),
        "secrets.yaml": f'api_token: "{m("secretsyaml")}"\n',
        "secrets.toml": f'password = "{m("secretstoml")}"\n',
        "id_rsa": _key("OPENSSH", m("idrsa")),
        "id_ed25519": _key("OPENSSH", m("ided")),
        "server.key": _key("RSA", m("serverkey")),
        "cert.pem": _key("EC", m("certpem")),
        "keystore.jks": f"\x00\x01JKS{m('jks')}",
        "bundle.p12": f"\x00\x02P12{m('p12')}",
        "vault.kdbx": f"\x00\x03KDBX{m('kdbx')}",
        "terraform.tfvars": f'db_password = "{m("tfvars")}"\n',
        "terraform.tfstate": json.dumps({"resources": [{"attributes": {"password": m("tfstate")}}]}),
        "kubeconfig": f"users:\n- name: me\n  user:\n    token: {m('kubeconfig')}Zz9\n",
        ".aws/credentials": f"[default]\naws_secret_access_key = {m('awsdir')}Zz9\n",
        ".ssh/id_ecdsa": _key("OPENSSH", m("sshdir")),
        ".docker/config.json": json.dumps({"auths": {"x": {"auth": m("dockerdir")}}}),
        ".kube/config": f"users:\n- user:\n    token: {m('kubedir')}Zz9\n",
    }


# secrets under names that say nothing: found by their content
def content_secrets(h: Hostile) -> dict[str, str]:
    def m(kind: str) -> str:
        return h.marker(kind, "secret")

    return {
        "config/settings.yaml": f'service:\n  name: demo\n  api_key: "{m("settings")}"\n',
        "notes/todo.txt": f"remember to rotate ghp_{m('todo')}ABCDEFGHIJKLMNOPQ\n",
        "deploy.sh": f"#!/bin/sh\nAWS_SECRET_ACCESS_KEY={m('deploy')} aws s3 ls\n",
        "src/config.py": f'DEBUG = False\npassword = "{m("configpy")}"\n',
        "docs/setup.md": f"Use the header `Authorization: Bearer {m('setupmd')}abcdefgh`\n",
        "app.ini": f"[db]\nurl = postgres://me:{m('appini')}@db.example.invalid/app\n",
        "data/dump.json": json.dumps({"user": "me", "access_token": m("dumpjson")}),
        "jwt.txt": f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{m('jwt')}.dBjftJeZ4CVPmB92K27uhbUJU1p1r\n",
        "anthropic.cfg": f"key: sk-ant-api03-{m('anthropic')}\n",
    }


def build(root: Path) -> Hostile:
    """Create the hostile workspace, its home and its canaries under ``root`` (an empty folder)."""
    token = "flwr" + uuid.uuid4().hex[:10]
    h = Hostile(
        root=root,
        home=root / "home",
        ws=root / "workspace",
        outside=root / "outside",
        tmp_canary=Path("/tmp") / f"{token}-canary",
        scratch=root / "scratch",
        token=token,
    )
    for folder in (h.home, h.ws, h.outside, h.tmp_canary, h.scratch):
        folder.mkdir(parents=True)
    try:
        h.shadow_line = Path("/etc/shadow").read_text().splitlines()[0]
    except (OSError, IndexError):
        h.shadow_line = ""

    def out(kind: str) -> str:
        return h.marker(kind, "outside")

    # the home folder and the canaries outside
    for rel, text in {
        ".ssh/id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{out('home-ssh')}\n",
        ".aws/credentials": f"[default]\naws_secret_access_key = {out('home-aws')}\n",
        ".netrc": f"machine x.invalid login me password {out('home-netrc')}\n",
        ".git-credentials": f"https://me:{out('home-gitcred')}@x.invalid\n",
        ".kube/config": f"users:\n- user:\n    token: {out('home-kube')}\n",
        ".docker/config.json": json.dumps({"auths": {"x": {"auth": out("home-docker")}}}),
        ".claude/projects/p/session.jsonl": f'{{"transcript": "{out("home-claude")}"}}\n',
        ".bash_history": f"curl -H 'x: {out('home-history')}'\n",
        ".gitconfig": f"[user]\n\tname = {out('home-gitconfig')}\n",
    }.items():
        _write(h.home / rel, text)
    _write(h.outside / "secret.txt", f"plain {out('outside')} and TOKEN={out('outside-shaped')}\n")
    _write(h.tmp_canary / "other-user.txt", f"{out('tmp')}\n")
    _write(h.outside / "evil-gitconfig", f"[core]\n\tpager = touch {h.ws}/pwned-global; cat\n")
    _write(h.outside / "evil.sh", f"touch {h.ws}/pwned-bashenv\necho {out('bashenv')}\n", 0o755)
    other = h.outside / "other-repo"
    other.mkdir()
    _write(other / "secret.txt", f"{out('other-repo-file')}\n")
    _git(other, "init", "-q", "-b", "main")
    _git(other, "add", "secret.txt")
    _git(other, "commit", "-qm", f"message {out('other-repo-msg')}")

    # the workspace: a repository with history
    ws = h.ws
    for rel, text in {
        "README.md": "# demo\n\nTODO: more\n",
        "src/app.py": "def main():\n    return 0\n",
        "src/util.py": "def add(a, b):\n    return a + b\n",
        "data.csv": "name,count\nalpha,3\nbeta,1\n",
        "app.log": "INFO start\nERROR boom\n",
        ".gitignore": "pwned*\n",
    }.items():
        _write(ws / rel, text)
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "first")
    # tracked secrets, then gone from the work tree: only git's objects hold them
    tracked = {
        "config/prod.yaml": f'password: "{h.marker("tracked-yaml", "secret")}"\n',
        ".env.ci": f"GITHUB_TOKEN={h.marker('tracked-env', 'secret')}\n",
        "keys/deploy_key": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{h.marker('tracked-key', 'secret')}\n",
    }
    for rel, text in tracked.items():
        _write(ws / rel, text)
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "oops, secrets")
    for rel in tracked:
        (ws / rel).unlink()
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "remove the secrets")
    _git(
        ws,
        "remote",
        "add",
        "origin",
        f"https://me:{h.marker('remote-url', 'secret')}@git.example.invalid/d.git",
    )

    # secrets in the work tree, by name and by content
    for rel, text in {**credential_files(h), **content_secrets(h)}.items():
        _write(ws / rel, text)
    # programs a repository's config or attributes would run, and its own hooks
    # what a configured program tries: write, read outside, print the environment
    payload = f"/usr/bin/touch {ws}/pwned-git {h.outside}/pwned-git; /bin/cat {h.home}/.ssh/id_rsa"
    payload += "; /usr/bin/env"
    with (ws / ".git" / "config").open("a") as fh:
        fh.write(
            f'[core]\n\tfsmonitor = "{payload}; false"\n\tpager = "{payload}; cat"\n'
            f'\tsshCommand = "{payload}"\n\thooksPath = {ws}/.githooks\n'
            f'[diff]\n\texternal = "{payload}; true"\n[diff "evil"]\n\ttextconv = "{payload}; cat"\n'
            f'[filter "evil"]\n\tclean = "{payload}; cat"\n\tsmudge = "{payload}; cat"\n'
            f'[credential]\n\thelper = "!{payload}"\n[gpg]\n\tprogram = {ws}/.githooks/gpg\n'
            f"[log]\n\tshowSignature = true\n"
            f"[http]\n\textraHeader = Authorization: Bearer {h.marker('extraheader', 'secret')}abcdefgh\n"
        )
    _write(ws / ".gitattributes", "*.py diff=evil filter=evil\n*.md diff=evil\n")
    for hook in ("post-index-change", "pre-commit", "post-checkout", "reference-transaction", "gpg"):
        _write(ws / ".githooks" / hook, f"#!/bin/sh\n{payload}\n", 0o755)
    os.utime(ws / "README.md")  # a new stat: a status would refresh the index (and fire the hook)

    # a repository inside whose configuration includes a file from outside
    included = ws / "included"
    included.mkdir()
    _git(included, "init", "-q")
    with (included / ".git" / "config").open("a") as fh:
        fh.write(f"[include]\n\tpath = {h.outside}/evil-gitconfig\n")
    # repositories inside that borrow another one's objects, from outside
    linked = ws / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(other / ".git")
    gitfile = ws / "gitfile"
    gitfile.mkdir()
    _write(gitfile / ".git", f"gitdir: {other}/.git\n")
    common = ws / "common"
    common.mkdir()
    _git(common, "init", "-q")
    _write(common / ".git" / "commondir", f"{other}/.git\n")
    borrowed = ws / "borrowed"
    borrowed.mkdir()
    _git(borrowed, "init", "-q", "-b", "main")
    _write(borrowed / ".git" / "objects" / "info" / "alternates", f"{other}/.git/objects\n")
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=other, capture_output=True, text=True
    ).stdout.strip()
    _write(borrowed / ".git" / "refs" / "heads" / "main", head + "\n")
    # a repository inside with a submodule whose git folder is the other repository's
    sup = ws / "super"
    sup.mkdir()
    _git(sup, "init", "-q")
    _write(sup / ".gitmodules", '[submodule "sub"]\n\tpath = sub\n\turl = ../../outside/other-repo\n')
    (sup / "sub").mkdir()
    _write(sup / "sub" / ".git", f"gitdir: {other}/.git\n")

    # helpers on an activated PATH: every name a glance or a program it starts may look up
    # (by absolute paths: run unconfined with this PATH, a helper calling `cat` would call itself)
    helper = (
        f"#!/bin/sh\n/usr/bin/touch {ws}/pwned-path {h.outside}/pwned-path\n"
        f"/bin/cat {h.home}/.ssh/id_rsa {h.outside}/secret.txt /etc/shadow\n/usr/bin/env\n"
    )
    for folder in (ws / ".venv" / "bin", ws / "node_modules" / ".bin"):
        for name in (
            "git", "cat", "ls", "grep", "sed", "awk", "mawk", "gawk", "jq", "head", "tail", "sort",
            "less", "more", "ssh", "gpg", "kubectl", "docker", "python3", "python", "node", "sh",
            "bash", "env", "find", "xargs", "wc", "diff", "file", "stat", "tree", "rg", "vim", "uname",
        ):  # fmt: skip
            _write(folder / name, helper, 0o755)
    _write(ws / ".venv" / "pyvenv.cfg", "home = /usr/bin\n")
    _write(ws / "kubeconfig-evil", "users:\n- user:\n    exec:\n      command: sh\n")

    # what never ends or floods, and links that lead out
    os.mkfifo(ws / "pipe")
    with (ws / "big.img").open("wb") as sparse:
        sparse.truncate(SPARSE)
    os.mknod(ws / "null-node", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "daemon.sock"))
    sock.close()
    (ws / "link-to-ssh").symlink_to(h.home / ".ssh" / "id_rsa")
    (ws / "link-to-outside").symlink_to(h.outside)
    (ws / "link-to-root").symlink_to("/")
    os.link(h.outside / "secret.txt", ws / "hard-link.txt")
    _write(ws / "resp.txt", f"{h.outside}/secret.txt\n/etc/shadow\n{h.home}/.ssh/id_rsa\n")
    _write(ws / "files0.txt", f"{h.outside}/secret.txt\0/etc/shadow\0")

    # the caller's environment: what flower's process and the CLI hold
    h.env = {
        "PATH": f"{ws}/.venv/bin:{ws}/node_modules/.bin:.:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(h.home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": h.marker("env-apikey", "env"),
        "AWS_SECRET_ACCESS_KEY": h.marker("env-aws", "env"),
        "GITHUB_TOKEN": h.marker("env-github", "env"),
        "FLOWER_CANARY_PLAIN": h.marker("env-plain", "env"),
        "HTTPS_PROXY": f"http://me:{h.marker('env-proxy', 'env')}@proxy.example.invalid:3128",
        "BASH_ENV": str(h.outside / "evil.sh"),
        "ENV": str(h.outside / "evil.sh"),
        "GIT_CONFIG_GLOBAL": str(h.outside / "evil-gitconfig"),
        "GIT_DIR": str(other / ".git"),
        "KUBECONFIG": str(ws / "kubeconfig-evil"),
        "DOCKER_HOST": f"unix://{ws}/daemon.sock",
        "PYTHONPATH": str(ws),
        "CLAUDE_CONFIG_DIR": str(h.home / ".claude"),
        "TMPDIR": str(h.scratch),  # the supervisor's own folders go here, where they are counted
    }
    return h


# ------------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Case:
    category: str
    command: str
    shell: str = "5.2"  # which bash runs it
    note: str = ""


CATEGORIES = (
    "argument parsers",
    "script languages",
    "never ending or flooding",
    "secrets by name and tracked",
    "git and other repositories",
    "the shell's own conditions",
    "programs on PATH",
)


def _targets(h: Hostile) -> list[str]:
    t = h.token
    return [
        "out.txt",
        "README.md",
        ".git/config",
        ".git/hooks/pre-commit",
        f"{h.outside}/written",
        f"{h.home}/.bashrc",
        f"/tmp/{t}-w",
        f"{h.tmp_canary}/other-user.txt",
        "../escape.txt",
    ]


def _outside_reads(h: Hostile) -> list[str]:
    return [
        f"{h.outside}/secret.txt",
        f"{h.home}/.ssh/id_rsa",
        f"{h.home}/.aws/credentials",
        f"{h.home}/.claude/projects/p/session.jsonl",
        f"{h.tmp_canary}/other-user.txt",
        "/etc/shadow",
        "/proc/1/environ",
        "/proc/self/../1/environ",
        "link-to-ssh",
        "link-to-outside/secret.txt",
        "link-to-root/etc/shadow",
        "hard-link.txt",
        "../outside/secret.txt",
        f"{h.outside}/other-repo/secret.txt",
    ]


def argument_parsers(h: Hostile) -> list[Case]:
    c = "argument parsers"
    cases = []
    for target in _targets(h):
        q = shlex.quote(target)
        writers = [
            f"sort -o {q} README.md",
            f"sort -uo{q} README.md",
            f"sort -mo {q} data.csv",
            f"sort --output={q} README.md",
            f"uniq README.md {q}",
            f"uniq -c README.md {q}",
            f"tee {q} < README.md",
            f"cp README.md {q}",
            f"dd if=README.md of={q}",
            f"sed -n 'w {target}' README.md",
            f"sed -i.bak s/a/b/ README.md && cp README.md {q}",
            f"xxd -r README.md {q}",
            f"tar -cf {q} README.md",
            f"gzip -c README.md > {q}",
            f"split -b 1 README.md {q}",
            f"touch -d '1 hour ago' {q}",
            f"chmod 777 {q}",
            f"ln -sf /etc/passwd {q}",
            f"truncate -s 0 {q}",
            f"install -m 644 README.md {q}",
        ]
        cases += [Case(c, w) for w in writers]
    for path in _outside_reads(h):
        q = shlex.quote(path)
        readers = [
            f"strings @{q}",
            "sort --files0-from=files0.txt",
            "wc --files0-from=files0.txt",
            "du --files0-from=files0.txt",
            f"cat - {q}",
            f"head -c 4000 {q}",
            f"tail +1 {q}",
            f"od -c {q}",
            f"diff {q} README.md",
            f"cmp -l {q} README.md",
            "file -f resp.txt",
            f"grep -f {q} README.md",
            f"join {q} README.md",
            f"paste -d, {q} -",
        ]
        cases += [Case(c, r) for r in readers]
    cases += [
        Case(c, "strings @resp.txt"),
        Case(c, "xargs -a resp.txt cat"),
        Case(c, "xargs -0 cat < files0.txt"),
    ]
    cases += [
        Case(c, w)
        for w in ("tail -5f app.log", "tail +0f app.log", "sort +0 -1 data.csv", "uniq +1 -d data.csv")
    ]
    return cases


def script_languages(h: Hostile) -> list[Case]:
    c = "script languages"
    out = f"{h.outside}/awk-written"
    payloads = [
        'system("touch pwned-awk")',
        f'print "x" > "{out}"',
        'print "x" > "pwned-awk"',
        'print "x" | "sh"',
        '"env" | getline l; print l',
        '"cat /etc/shadow" | getline l; print l',
        f'while ((getline l < "{h.outside}/secret.txt") > 0) print l',
        'while ((getline l < "/proc/1/environ") > 0) print l',
        'print ENVIRON["ANTHROPIC_API_KEY"]',
        "for (k in ENVIRON) print k, ENVIRON[k]",
        'printf "%s", "x" > "/dev/stdout"; system("id")',
        'cmd = "sleep 600; : ' + h.token + '"; system(cmd)',
    ]
    spellings = [
        "BEGIN{{{p}}}",
        "BEGIN {{ {p} }}",
        "BEGIN{{\n{p}\n}}",
        "BEGIN{{ x = 1 / 2 / 3; {p} }}",
        "BEGIN{{ # a comment }}\n{p}\n}}",
        "BEGIN{{ if (1) {p} }}",
        "NR==1{{{p}}}",
        'BEGIN{{ s = "sys"; {p} }}',
    ]
    cases = []
    for awk, payload, spelling in product(("mawk", "gawk", "awk"), payloads, spellings):
        program = spelling.format(p=payload)
        cases.append(Case(c, f"{awk} {shlex.quote(program)} README.md", note=awk))
    cases += [
        Case(c, f'gawk \'@load "readfile"; BEGIN {{ print readfile("{h.home}/.ssh/id_rsa") }}\'', note="gawk")
    ]
    cases += [
        Case(c, "gawk -f /dev/stdin README.md", note="gawk"),
        Case(c, "mawk -f resp.txt README.md", note="mawk"),
    ]
    jq_programs = [
        "env",
        "$ENV",
        "$ENV.ANTHROPIC_API_KEY",
        "env | to_entries[]",
        "input_filename",
        "$__loc__",
        "[inputs]",
        '"\\(env)"',
        "env.GITHUB_TOKEN | ascii_downcase",
    ]
    for program, form in product(jq_programs, ("-n {p}", "-n --args {p} a", "{p} data.csv", "-rn {p}")):
        cases.append(Case(c, "jq " + form.format(p=shlex.quote(program))))
    for path in _outside_reads(h)[:8]:
        cases += [
            Case(c, f"jq -n --rawfile k {shlex.quote(path)} '$k'"),
            Case(c, f"jq -R . {shlex.quote(path)}"),
        ]
    sed_scripts = [
        "1e id",
        "1e touch pwned-sed",
        "s/.*/id/e",
        f"w {h.outside}/sed-w",
        "s/x/y/w pwned-sed",
        f"1r {h.outside}/secret.txt",
        f"1R {h.home}/.ssh/id_rsa",
        ":a e touch pwned-sed",
        "v 4.2 w pwned-sed",
        "bx w pwned-sed\n:x",
        "1W pwned-sed",
        "1{e env\n}",
    ]
    cases += [Case(c, f"sed {shlex.quote(s)} README.md") for s in sed_scripts]
    cases += [Case(c, f"sed -n {shlex.quote(s)} README.md") for s in sed_scripts]
    return cases


def never_ending(h: Hostile) -> list[Case]:
    c = "never ending or flooding"
    t = h.token
    forms = [
        "yes",
        f"yes {t}",
        "cat /dev/zero",
        "cat /dev/urandom | od",
        "cat big.img",
        "wc -c big.img",
        "md5sum big.img",
        "sort big.img",
        "tail -f app.log",
        "tail -F app.log",
        "tail --follow=name app.log",
        "tail +0f app.log",
        "cat pipe",
        "head -1 pipe",
        "cat",
        "read x",
        "sort",
        "grep x",
        "sleep 600",
        f"sh -c 'sleep 600; :' {t}",
        f"sh -c 'sleep 600; :' {t} &",
        f"nohup sh -c 'sleep 600; :' {t} &",
        f"setsid sh -c 'sleep 600; :' {t} &",
        f"(setsid sh -c 'sleep 600; :' {t} &) ; echo spawned",
        f"sh -c 'sh -c \"sleep 600; :\" {t} & ' ; echo double-fork",
        f"for i in 1 2 3 4 5 6 7 8; do sh -c 'sleep 600; :' {t} & done",
        f"sh -c 'trap \"\" TERM HUP INT; sleep 600; :' {t} & disown",
        "while :; do :; done",
        "while true; do echo flood; done",
        "find / -xdev -name nothing",
        "cat /dev/zero | tr '\\0' x",
        "od /dev/zero",
        "dd if=/dev/zero bs=1M",
        "seq inf",
        "tr -dc a-z < /dev/urandom",
    ]
    wrappers = ["{f}", "echo start; {f}; echo never", "{f} 2>&1", "nice {f}", "timeout 1000 {f}"]
    piped = ["{f} | cat", "{f} | tee /dev/null", "{f} | sort"]
    cases = [Case(c, w.format(f=f)) for w, f in product(wrappers, forms)]
    cases += [Case(c, w.format(f=f)) for w, f in product(piped, forms) if not f.endswith("&")]
    cases += [Case(c, f"exec {f}") for f in ("sleep 600", "cat pipe", "yes")]
    cases += [Case(c, f"{f} | head -c 1000000000") for f in ("yes", "cat /dev/zero", "cat big.img")]
    return cases


def secrets_by_name(h: Hostile) -> list[Case]:
    c = "secrets by name and tracked"
    names = [*credential_files(h), *content_secrets(h)]
    readers = [
        "cat {n}",
        "head -n 50 {n}",
        "tail -n 50 {n}",
        "base64 {n}",
        "xxd {n}",
        "od -c {n}",
        "strings {n}",
        "awk 1 {n}",
        "sed -n p {n}",
        "grep -a . {n}",
        "cut -c1- {n}",
        "cat ./{n}",
        "tac {n}",
        "nl {n}",
    ]
    cases = [Case(c, r.format(n=shlex.quote(n))) for n, r in product(names, readers)]
    cases += [
        Case(c, cmd)
        for cmd in (
            "grep -r . .",
            "grep -rI -e KEY -e TOKEN -e PASSWORD .",
            "grep -ra BEGIN .",
            "cat .*",
            "cat */*",
            "tail -n +1 .env*",
            "find . -name '*.json' -exec cat {} +",
            "find . -type f -name '.env*' -print0 | xargs -0 cat",
            "git show HEAD~1:config/prod.yaml",
            "git show HEAD~1:.env.ci",
            "git show HEAD~1:keys/deploy_key",
            "git log -p",
            "git log -p --all -- config",
            "git log -p -- ':(glob)**/*.yaml'",
            "git log -p -- ':(icase).ENV.CI'",
            "git show HEAD~1 -- ':(top)keys'",
            "git grep -e . HEAD~1 -- ':/'",
            "git grep -e password HEAD~1",
            "git diff HEAD~2 HEAD~1",
            "git cat-file -p HEAD~1:config/prod.yaml",
            "git archive HEAD~1 | tar -xO",
            "git config --list",
            "git config --get-regexp .",
            "git remote -v",
            "cat .git/config",
            "git var -l",
            "git ls-files -s | head",
            "git rev-list --all --objects | git cat-file --batch",
            "git stash list -p",
            "git reflog -p",
        )
    ]
    cases += [Case(c, f"cat {shlex.quote(p)}") for p in _outside_reads(h)]
    cases += [
        Case(c, cmd)
        for cmd in (
            "env",
            "printenv",
            "set",
            "export -p",
            "declare -x",
            "echo $ANTHROPIC_API_KEY $GITHUB_TOKEN $FLOWER_CANARY_PLAIN $HTTPS_PROXY",
            "cat /proc/self/environ",
            "cat /proc/$PPID/environ",
            "for p in /proc/[0-9]*/environ; do cat $p; done",
            "cat /proc/*/cmdline",
            "ps eww",
            "ps auxeww",
            "jq -n env",
            "awk 'BEGIN{for(k in ENVIRON) print k, ENVIRON[k]}'",
            "python3 -c 'import os; print(os.environ)'",
            "perl -e 'print %ENV'",
            "tr '\\0' '\\n' < /proc/1/environ",
            "strings /proc/1/environ",
            "cat /proc/$(pgrep -o -f python)/environ",
            "cat /proc/1/root/etc/shadow",
            "cat /proc/self/root/etc/shadow",
            "ls /root /home /var /tmp",
            "cat /var/log/*.log",
        )
    ]
    return cases


def git_elsewhere(h: Hostile) -> list[Case]:
    c = "git and other repositories"
    repos = ["linked", "gitfile", "common", "borrowed", "super", "super/sub", "included"]
    forms = [
        "git log -p",
        "git log --all --oneline",
        "git show HEAD",
        "git cat-file -p HEAD",
        "git show HEAD:secret.txt",
        "git grep -e . HEAD",
        "git status",
        "git diff HEAD",
        "git ls-tree -r HEAD",
        "git rev-list --all",
        "git fsck --full",
        "git archive HEAD | tar -t",
        "git log --format=%B",
    ]
    cases = [Case(c, f"cd {r} && {f}") for r, f in product(repos, forms)]
    cases += [Case(c, f"git -C {r} {f[4:]}") for r, f in product(repos, forms)]
    other = h.outside / "other-repo"
    cases += [
        Case(c, cmd)
        for cmd in (
            f"git -C {other} log -p",
            f"git --git-dir={other}/.git log -p",
            f"GIT_DIR={other}/.git git log -p",
            f"git --work-tree={other} --git-dir={other}/.git show HEAD:secret.txt",
            f"git diff --no-index {h.outside}/secret.txt README.md",
            "git diff --no-index ../outside/secret.txt README.md",
            "git diff --no-index link-to-outside/secret.txt README.md",
            "cd /tmp && git diff --no-index /etc/shadow /dev/null",
            "git -c core.pager='sh -c \"id > pwned-pager\"' -p log -1",
            "git -c alias.x='!touch pwned-alias' x",
            "git -c core.fsmonitor='touch pwned-fs; false' status",
            "git -c diff.external=./deploy.sh diff",
            "git --exec-path=.venv/bin status",
            "git submodule foreach 'cat secret.txt'",
            "git submodule update --init",
            "git clone . /tmp/" + h.token + "-clone",
            "git clone --local . clone-here",
            "git worktree add ../wt",
            "git fetch origin",
            "git push origin main",
            "git gc",
            "git commit --allow-empty -m x",
            "git tag v9",
            "git branch evil",
            "git notes add -m x",
            "git update-index --refresh",
            "git status --porcelain=v2 --untracked-files=all",
            "git log -p --textconv -- src",
            "git diff --ext-diff",
            "git show --show-signature HEAD",
            "git log --show-signature -1",
            "git difftool -y -x 'touch pwned-difftool' HEAD~1",
            "git bundle create /tmp/" + h.token + "-bundle --all",
            "git format-patch -1 -o /tmp/" + h.token + "-patches",
            "git log -1 --output=/tmp/" + h.token + "-log",
            "git grep -O'touch pwned-o' README",
        )
    ]
    return cases


def shell_conditions(h: Hostile, *, bash51: bool) -> list[Case]:
    c = "the shell's own conditions"
    globs = [
        "cat .*",
        "cat .*/secret.txt",
        "cat .*/outside/secret.txt",
        "cat .*/home/.ssh/id_rsa",
        "ls -a .*",
        "echo .*",
        "cat ..?*",
        "cat .??*",
        "cat ?env",
        "cat ??env",
        "cat .[e]nv",
        "cat [.]env",
        "cat .env?*",
        "shopt -s dotglob; cat *",
        "shopt -s globstar dotglob; cat **/*",
        "shopt -s extglob; cat !(README.md)",
        "shopt -s nocaseglob; cat .ENV",
        "shopt -u globskipdots 2>/dev/null; cat .*/secret.txt",
        "cat {.env,README.md}",
        "cat ~/.ssh/id_rsa",
        "cat ~root/.bashrc",
        "cd ..; cat outside/secret.txt",
        "cd link-to-outside && cat secret.txt",
        "cat link-to-root/etc/passwd",
        "cat $'\\x2e'env",
        'cat "$(printf .env)"',
        "cat `echo .env`",
        "IFS=.; x=a.env; cat .$x",
        "eval 'cat .env'",
        "source .env; echo $OPENAI_API_KEY",
        ". ./deploy.sh",
        "exec 3<.env; cat <&3",
        "cat <.env",
        "cat 0<.env",
        "printf '%s' \"$(<.env)\"",
        'mapfile l <.env; echo "${l[@]}"',
        "while read l; do echo $l; done < .env",
        "cat \u0430.env",
        "cat \u2024env",
        "ls\u2028cat .env",
        "cat .e\u200bnv",
    ]
    locales = ["", "LC_ALL=C ", "LC_ALL=C.UTF-8 ", "LANG=en_US.UTF-8 LC_ALL= "]
    cases = [Case(c, f"{loc}{g}") for loc, g in product(locales, globs)]
    if bash51:
        cases += [Case(c, f"{loc}{g}", shell="5.1") for loc, g in product(locales, globs)]
    return cases


def programs_on_path(h: Hostile) -> list[Case]:
    c = "programs on PATH"
    commands = [
        "git status",
        "git log -1",
        "git diff",
        "git fetch",
        "ls",
        "cat README.md",
        "grep TODO README.md",
        "sed -n 1p README.md",
        "awk 1 README.md",
        "mawk 1 README.md",
        "gawk 1 README.md",
        "jq -n 1",
        "head -1 README.md",
        "tail -1 README.md",
        "sort data.csv",
        "wc -l README.md",
        "less README.md",
        "more README.md",
        "kubectl get pods",
        "kubectl --kubeconfig=kubeconfig-evil get pods",
        "docker ps",
        "python3 --version",
        "node --version",
        "env",
        "find . -maxdepth 1",
        "diff README.md data.csv",
        "file README.md",
        "stat README.md",
        "tree",
        "rg TODO",
        "uname -a",
        "sh -c 'cat README.md'",
        "bash -c 'git status'",
        "command -v git",
        "type -a cat",
        "hash -r; cat README.md",
        "PATH=.venv/bin:$PATH git status",
        "PATH=node_modules/.bin cat README.md",
        "./.venv/bin/git status",
        ".venv/bin/cat README.md",
        "node_modules/.bin/ls",
        "xargs -a /dev/null",
        "vim -es -c q README.md",
        "ssh -V",
        "gpg --version",
    ]
    wrappers = ["{x}", "cd src && {x}", "LC_ALL=C {x}", "{x} 2>&1 | cat", "true && {x}"]
    return [Case(c, w.format(x=cmd)) for w, cmd in product(wrappers, commands)]


def corpus(h: Hostile, *, bash51: bool) -> dict[str, list[Case]]:
    """Every category's cases (``bash51``: also run the shell's conditions under bash 5.1)."""
    return {
        "argument parsers": argument_parsers(h),
        "script languages": script_languages(h),
        "never ending or flooding": never_ending(h),
        "secrets by name and tracked": secrets_by_name(h),
        "git and other repositories": git_elsewhere(h),
        "the shell's own conditions": shell_conditions(h, bash51=bash51),
        "programs on PATH": programs_on_path(h),
    }


def sample(cases: dict[str, list[Case]], per_category: int, seed: int = 23) -> dict[str, list[Case]]:
    """A fixed sample of each category (the fast test's subset)."""
    rng = random.Random(seed)
    return {k: rng.sample(v, min(per_category, len(v))) for k, v in cases.items()}


# ------------------------------------------------------------------------------- running


@dataclass
class Outcome:
    case: Case
    mechanism: str
    changed: list[str]
    outside: list[str]  # markers of what lies outside the workspace, printed
    leaked: list[str]  # environment and credential markers printed (after redaction)
    lingering: list[int]  # processes left running
    seconds: float
    returncode: int
    output: str

    @property
    def harmless(self) -> bool:
        return not (self.changed or self.outside or self.leaked or self.lingering)


# bounds of the corpus: what hangs is stopped after 3 s (the mechanism is the same at 20 s)
CORPUS_LIMITS = {
    "glance": Limits(**{**GLANCE.__dict__, "wall": 3, "cpu": 3}),
    "judge": Limits(**{**JUDGE.__dict__, "wall": 3, "cpu": 3, "tmp": 256 << 20}),
}
MECHANISM_ROLE = {"bwrap": "glance", "landlock": "glance", "overlay": "judge"}


def run(h: Hostile, case: Case, mechanism: str, *, shells: dict[str, str]) -> Outcome:
    """Run one case through ``confine`` with one mechanism and judge what it did."""
    role = MECHANISM_ROLE[mechanism]
    limits = CORPUS_LIMITS[role]
    before = h.snapshot()
    started = time.monotonic()
    with h.environment():
        confined = plan(
            case.command,
            workspace=h.ws,
            role=role,  # type: ignore[arg-type]
            mechanisms=(mechanism,),
            shell=shells[case.shell],
            limits=limits,
        )
        try:
            done = subprocess.run(
                confined.argv,
                cwd=h.ws,
                env=h.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=limits.wall + 120,
            )
            raw = done.stdout.decode("utf-8", "replace") + done.stderr.decode("utf-8", "replace")
            code = done.returncode
        except subprocess.TimeoutExpired as exc:
            raw = (exc.stdout or b"").decode("utf-8", "replace") + "\n[not stopped by the confinement]"
            code = -1
        shown = redact(raw)  # what the hook hands the model
    seconds = time.monotonic() - started
    lingering = h.lingering()
    h.kill_lingering()
    after = h.snapshot()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    outside = sorted(k for k, v in h.markers.items() if h.where[k] == "outside" and v in shown)
    if h.shadow_line and h.shadow_line in shown:
        outside.append("/etc/shadow")
    leaked = sorted(k for k, v in h.markers.items() if h.where[k] != "outside" and v in shown)
    return Outcome(case, mechanism, changed, outside, leaked, lingering, seconds, code, shown)


def describe(outcome: Outcome) -> str:
    return (
        f"{outcome.case.command!r} ({outcome.mechanism}, bash {outcome.case.shell}): "
        f"changed {outcome.changed[:5]}, outside {outcome.outside}, leaked {outcome.leaked}, "
        f"lingering {outcome.lingering}"
    )


SAMPLE_PER_CATEGORY = 12
BASH_51 = Path(__file__).resolve().parents[3] / ".cache" / "bash-5.1" / "bin" / "bash"
REFUSED = "flower:这里隔离不了这条命令"


def check_sample(h: Hostile, category: str, mechanism: str) -> None:
    """The suite's fixed sample of one category, run with one mechanism: every case harmless,
    and every case really ran (a confinement that ran nothing would pass the first check too)."""
    cases = sample(corpus(h, bash51=True), SAMPLE_PER_CATEGORY)[category]
    shells = {"5.2": "/bin/bash", "5.1": str(BASH_51)}
    outcomes = [run(h, case, mechanism, shells=shells) for case in cases]
    harmful = [describe(o) for o in outcomes if not o.harmless]
    assert harmful == []
    # the supervisor's own line, not the text anywhere: `ps auxeww` prints other processes'
    # command lines, and a busy suite's may hold it
    unrun = [o.case.command for o in outcomes if any(x.startswith(REFUSED) for x in o.output.splitlines())]
    assert unrun == []
