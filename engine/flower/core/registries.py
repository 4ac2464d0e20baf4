"""The package registries this machine's package managers use, as host names for the sandbox.

flower names no registry itself: it asks the package managers. pip's configured indexes
(environment, then its user and global config files) or, when none is configured, the index pip
itself defaults to; npm's configured registry (`npm config get registry`, run outside the
workspace); Go's module proxy and checksum database (`go env`). A tool that is not installed
contributes nothing, and nothing in the workspace is read: a repository must not be able to open
the network for its own commands. Hosts a person wants beyond these go into
`FLOWER_SANDBOX_HOSTS` (see docs/safety.md).
"""

from __future__ import annotations

import configparser
import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

EXTRA_HOSTS_ENV = "FLOWER_SANDBOX_HOSTS"

_PIP_URL_ENV = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
)
_PIP_KEYS = ("index-url", "extra-index-url")


def host_of(url: str) -> str | None:
    """`host` or `host:port` of a URL (a port only when one is written); None if there is no host."""
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    return f"{host}:{port}" if port else host


def extra_hosts(environ: dict[str, str] | os._Environ[str] | None = None) -> list[str]:
    """The hosts a person added in FLOWER_SANDBOX_HOSTS (commas or spaces between them)."""
    env = os.environ if environ is None else environ
    raw = env.get(EXTRA_HOSTS_ENV, "")
    return [h for h in raw.replace(",", " ").split() if h]


def registry_hosts() -> list[str]:
    """Every registry host the installed package managers are configured to use (cached)."""
    return list(_discovered(os.environ.get("PATH", ""), _pip_signature()))


def _unique(hosts: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(h for h in hosts if h))


def _pip_config_files() -> list[Path]:
    home = Path.home()
    files = [Path("/etc/pip.conf"), Path("/etc/xdg/pip/pip.conf"), home / ".pip" / "pip.conf"]
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    files.append(Path(xdg) / "pip" / "pip.conf")
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    return files


def _pip_signature() -> tuple[str, ...]:
    # what the answer depends on, so that the cache notices a changed configuration
    return tuple(os.environ.get(k, "") for k in (*_PIP_URL_ENV, "PIP_CONFIG_FILE", "XDG_CONFIG_HOME"))


@functools.lru_cache(maxsize=8)
def _discovered(path: str, pip: tuple[str, ...]) -> tuple[str, ...]:
    return _unique([*_pip_hosts(), *_npm_hosts(), *_go_hosts()])


def _pip_hosts() -> list[str | None]:
    urls: list[str] = []
    for name in _PIP_URL_ENV:
        urls += os.environ.get(name, "").split()
    for file in _pip_config_files():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(file, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in parser.sections():
            for key in _PIP_KEYS:
                urls += parser.get(section, key, fallback="").split()
    if urls:
        return [host_of(u) for u in urls]
    try:  # nothing configured: the index pip itself uses, as pip knows it
        from pip._internal.models.index import PyPI
    except ImportError:
        return []
    return [PyPI.netloc, PyPI.file_storage_domain]


def _ask(argv: list[str]) -> list[str]:
    """A tool's one-line answers, run in an empty folder so no project configuration is read."""
    if shutil.which(argv[0]) is None:
        return []
    with tempfile.TemporaryDirectory(prefix="flower-registry-") as empty:
        try:
            done = subprocess.run(argv, cwd=empty, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return []
    return done.stdout.split() if done.returncode == 0 else []


def _npm_hosts() -> list[str | None]:
    return [host_of(u) for u in _ask(["npm", "config", "get", "registry"])]


def _go_hosts() -> list[str | None]:
    hosts: list[str | None] = []
    for value in _ask(["go", "env", "GOPROXY", "GOSUMDB"]):
        for item in value.replace("|", ",").split(","):
            if "://" in item:
                hosts.append(host_of(item))
            elif item and item not in ("direct", "off"):
                hosts.append(host_of(f"https://{item.split('+', 1)[0]}"))
    return hosts
