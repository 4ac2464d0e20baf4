"""The sandbox policy: modes, the settings the CLI gets, and where the network hosts come from.

What the settings really confine is proven against the CLI in tests/e2e/test_sandbox_cli.py.
"""

from __future__ import annotations

import os
import platform
import shutil
import stat
from pathlib import Path

import pytest

from flower.base.i18n import set_language
from flower.base.secrets import CREDENTIAL_ENV, CREDENTIAL_PATHS
from flower.core import registries, sandbox
from flower.core.registries import extra_hosts, host_of, registry_hosts
from flower.core.sandbox import SandboxPolicy, SandboxUnavailable, decide


@pytest.fixture(autouse=True)
def _fresh_caches() -> None:
    sandbox._why.cache_clear()
    registries._discovered.cache_clear()


def path_without(tmp_path: Path, *missing: str) -> str:
    """A PATH holding links to the tools this machine has, minus `missing`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("bwrap", "socat", "true", "sh"):
        found = shutil.which(tool)
        if found and tool not in missing:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


@pytest.mark.parametrize(
    ("value", "mode"),
    [(None, "auto"), (True, "auto"), (False, "off"), ("require", "require"), ("off", "off")],
)
def test_a_policy_from_what_a_caller_passes(value, mode):
    assert SandboxPolicy.of(value).mode == mode
    policy = SandboxPolicy(mode="require")
    assert SandboxPolicy.of(policy) is policy


def test_an_unknown_mode_is_refused_by_name():
    with pytest.raises(ValueError, match="require, auto, off"):
        SandboxPolicy(mode="strict")


def test_off_asks_nothing_of_the_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", path_without(tmp_path, "bwrap", "socat"))
    state = decide(SandboxPolicy(mode="off"))
    assert state.active is False and state.note is None


@pytest.mark.parametrize("missing", [("bwrap",), ("socat",), ("bwrap", "socat")])
def test_require_fails_clearly_when_a_tool_is_missing(monkeypatch, tmp_path, missing):
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setenv("PATH", path_without(tmp_path, *missing))
    with pytest.raises(SandboxUnavailable) as caught:
        decide(SandboxPolicy(mode="require"))
    text = str(caught.value)
    assert text.startswith("需要沙箱,但缺少 ") and "apt-get install bubblewrap socat" in text
    assert ("bubblewrap (bwrap)" in text) == ("bwrap" in missing) and ("socat" in text)


def test_auto_says_in_one_line_that_it_runs_unconfined_and_why(monkeypatch, tmp_path):
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setenv("PATH", path_without(tmp_path, "socat"))
    state = decide(SandboxPolicy())
    assert state.active is False and state.note is not None and "\n" not in state.note
    assert state.note == "flower: 没有沙箱:缺少 socat;命令不受限地运行"


def test_bubblewrap_that_cannot_make_its_namespaces_counts_as_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    bin_dir = Path(path_without(tmp_path, "bwrap"))
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    state = decide(SandboxPolicy())
    assert state.active is False and "No permissions to create new namespace" in (state.note or "")


@pytest.mark.parametrize(
    ("speaking", "said"),
    [
        ("zh", "flower: 没有沙箱:Claude Code CLI 在 Windows 上没有沙箱;"),
        ("en", "the Claude Code CLI has no sandbox on Windows"),
    ],
)
def test_a_platform_without_a_sandbox_says_so_in_the_language_spoken(monkeypatch, speaking, said):
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    set_language(speaking)
    try:
        assert said in (decide(SandboxPolicy()).note or "")
    finally:
        set_language("zh")


def test_this_machine_can_sandbox():
    # `make test` installs both tools (scripts/system-deps.sh): the e2e sandbox tests rely on it
    assert sandbox.why_unavailable() is None, "run `make system-deps` (bubblewrap and socat)"
    assert decide(SandboxPolicy(mode="require")).active is True


def test_settings_confine_writes_reads_environment_and_network(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(hosts=["registry.example:443"])
    s = policy.settings(workspace=ws, writable=[tmp_path / "bench"], protected=[ws / "runs"])
    assert s["enabled"] and s["failIfUnavailable"] and s["autoAllowBashIfSandboxed"]
    assert s["allowUnsandboxedCommands"] is False
    fs = s["filesystem"]
    assert fs["allowWrite"] == [str(tmp_path / "bench")]
    assert fs["denyWrite"] == [str(ws / "runs"), str(ws / ".git")]  # no .git yet: none can be planted
    assert str(tmp_path / "home" / ".ssh") in fs["denyRead"] and str(tmp_path / "cfg") in fs["denyRead"]
    assert len(fs["denyRead"]) == len(CREDENTIAL_PATHS) + 1
    assert [v["name"] for v in s["credentials"]["envVars"]] == list(CREDENTIAL_ENV)
    assert {v["mode"] for v in s["credentials"]["envVars"]} == {"deny"}
    assert s["network"] == {"allowedDomains": ["registry.example:443"], "strictAllowlist": True}


def test_an_existing_git_folder_is_left_to_the_clis_own_protection(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    assert SandboxPolicy(hosts=[]).settings(workspace=ws)["filesystem"]["denyWrite"] == []


def test_no_hosts_means_no_network():
    assert SandboxPolicy(hosts=[]).allowed_hosts() == []


def test_by_default_the_hosts_are_the_registries_in_use_and_the_persons_own(monkeypatch):
    monkeypatch.setattr(registries, "registry_hosts", lambda: ["index.example", "files.example"])
    monkeypatch.setattr(sandbox, "registry_hosts", registries.registry_hosts)
    monkeypatch.setenv("FLOWER_SANDBOX_HOSTS", "git.example, files.example  mirror.example:8443")
    assert SandboxPolicy().allowed_hosts() == [
        "index.example",
        "files.example",
        "git.example",
        "mirror.example:8443",
    ]


# -- registries ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://index.example/simple/", "index.example"),
        ("http://mirror.example:8080/pypi", "mirror.example:8080"),
        ("https://user:pw@private.example/", "private.example"),
        ("not a url", None),
        ("", None),
    ],
)
def test_host_of_a_url(url, host):
    assert host_of(url) == host


def test_extra_hosts_split_on_commas_and_spaces():
    assert extra_hosts({"FLOWER_SANDBOX_HOSTS": "a.example,b.example  c.example"}) == [
        "a.example",
        "b.example",
        "c.example",
    ]
    assert extra_hosts({}) == []


@pytest.fixture
def bare_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No package manager on PATH, an empty home, no pip configuration in the environment."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    for name in (*registries._PIP_URL_ENV, "PIP_CONFIG_FILE", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(registries, "_pip_config_files", lambda: [home / ".config" / "pip" / "pip.conf"])
    return home


def test_with_nothing_configured_pip_names_its_own_index(bare_machine):
    from pip._internal.models.index import PyPI

    assert registry_hosts() == [PyPI.netloc, PyPI.file_storage_domain]


def test_a_configured_pip_index_replaces_the_default(bare_machine, monkeypatch):
    conf = bare_machine / ".config" / "pip" / "pip.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(
        "[global]\nindex-url = https://mirror.example/simple\nextra-index-url = https://extra.example/\n"
    )
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://env.example:8443/simple")
    assert registry_hosts() == ["env.example:8443", "mirror.example", "extra.example"]


def fake_tool(tmp_path: Path, name: str, script: str) -> None:
    tool = tmp_path / "nothing" / name
    tool.parent.mkdir(exist_ok=True)
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(0o755)


def test_npm_and_go_are_asked_outside_any_project(bare_machine, tmp_path, monkeypatch):
    # both fakes answer from the folder they run in: a project's own .npmrc must not count
    fake_tool(
        tmp_path,
        "npm",
        "if [ -f .npmrc ]; then echo https://planted.example/; else echo https://npm.example/; fi",
    )
    fake_tool(tmp_path, "go", "echo 'https://proxy.example,direct'; echo sum.example")
    project = tmp_path / "project"
    project.mkdir()
    (project / ".npmrc").write_text("registry=https://planted.example/\n")
    monkeypatch.chdir(project)
    monkeypatch.setattr(registries, "_pip_hosts", list)
    assert registry_hosts() == ["npm.example", "proxy.example", "sum.example"]
    assert os.getcwd() == str(project)
