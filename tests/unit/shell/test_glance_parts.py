"""The pieces of flower.shell, each checked against the real thing it models where one runs here.

The lexer against bash's own word splitting, the glob expansion against bash's under every
setting, the git index reader against ``git ls-files -s``, the option parser's strictness.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from flower.shell.chars import unsafe_character
from flower.shell.credentials import credential_name, credential_path
from flower.shell.gitrepo import check_repository, gitlinks
from flower.shell.globs import expand_words
from flower.shell.lexer import Operator, Redirection, Word, tokenize
from flower.shell.options import options, parse
from flower.shell.paths import Reads, check_path
from flower.shell.predicate import is_ephemeral
from flower.shell.refusal import Refused

# ------------------------------------------------------------------------------ lexer

WORDS = [
    "ls -la",
    "echo 'a b' \"c d\" e\\ f",
    "echo a'b'\"c\"\\d",
    'echo "a\\"b\\$c\\\\d\\e"',
    "echo 'it'\\''s'",
    "echo \"$\" '$x' a$ $/",
    "echo a#b '#' \"#\"",
    "echo \\\n  continued",
    "echo 目标 '需求.md'",
    "echo ''",
    'echo "" x',
    "printf '%s\\n' \"x\"",
    "echo @{u} HEAD~1 a:b x=y",
]


def bash_words(command: str) -> list[str]:
    """The argv bash builds for ``command``, after the program name."""
    script = f"set -f; args() {{ printf '%s\\0' \"$@\"; }}; args {command[len('echo ') :]}"
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout
    return out.decode().split("\0")[:-1]


@pytest.mark.parametrize("command", WORDS)
def test_words_are_what_bash_passes(command: str) -> None:
    tokens = tokenize(command)
    assert all(isinstance(t, Word) for t in tokens)
    words = [t.value for t in tokens if isinstance(t, Word)]
    if command.startswith("echo"):
        assert words[1:] == bash_words(command)


def test_operators_and_redirections_are_split_as_bash_splits_them() -> None:
    tokens = tokenize("a 2>&1|b&&c||d;e|&f >/dev/null\ng 2>>/dev/null &>/dev/null")
    kinds = [t.kind if isinstance(t, Operator) else t.value if isinstance(t, Word) else t.op for t in tokens]
    assert kinds == [
        "a",
        ">&",
        "|",
        "b",
        "&&",
        "c",
        "||",
        "d",
        ";",
        "e",
        "|&",
        "f",
        ">",
        "\n",
        "g",
        ">>",
        "&>",
    ]
    redirections = [t for t in tokens if isinstance(t, Redirection)]
    assert [(r.fd, r.target.value) for r in redirections] == [
        ("2", "1"),
        (None, "/dev/null"),
        ("2", "/dev/null"),
        (None, "/dev/null"),
    ]


def test_a_digit_word_before_a_redirection_is_its_fd_only_when_attached() -> None:
    attached = tokenize("echo 2>/dev/null")
    spaced = tokenize("echo 2 >/dev/null")
    assert [t.value for t in attached if isinstance(t, Word)] == ["echo"]
    assert [t.value for t in spaced if isinstance(t, Word)] == ["echo", "2"]


def test_quoted_glob_characters_are_not_active() -> None:
    (_, quoted) = tokenize("ls '*.py'")
    (_, bare) = tokenize("ls *.py")
    assert isinstance(quoted, Word) and isinstance(bare, Word)
    assert not quoted.has_glob and bare.has_glob


# ------------------------------------------------------------------------------ chars


@pytest.mark.parametrize("ch", ["a", "Z", "~", " ", "\t", "\n", "需", "é", "ß", "٣", "\u0301"])
def test_safe_characters(ch: str) -> None:
    assert unsafe_character(f"ls {ch}") is None


@pytest.mark.parametrize(
    "ch",
    [
        "\x00",
        "\r",
        "\x1b",
        "\x7f",
        "\x85",
        "\u00a0",
        "\u2028",
        "\u2029",
        "\u200b",
        "\u202e",
        "\u2066",
        "\ufeff",
        "\u2016",
        "\uff5c",
        "\u2223",
        "\u037e",
        "\uff1b",
        "\uff06",
        "\u3000",
        "\u01c0",
        "\u3164",
        "\ufe0f",
    ],
)
def test_unsafe_characters(ch: str) -> None:
    assert unsafe_character(f"ls {ch}x") == ch


# ------------------------------------------------------------------------------ globs


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in ["a.py", "B.py", ".hidden.py", ".env", "src/x.py", "src/.y.py", "docs/z.md", "-rf.txt"]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return tmp_path


def bash_expansions(pattern: str, folder: Path) -> list[list[str]]:
    found = []
    for options_ in ["", "dotglob", "nocaseglob", "dotglob nocaseglob"]:
        setup = f"shopt -s {options_};" if options_ else ""
        script = f"{setup} printf '%s\\0' {pattern}"
        out = subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, check=True).stdout
        words = sorted(out.decode().split("\0")[:-1])
        if words not in found:
            found.append(words)
    return found


@pytest.mark.parametrize(
    "pattern", ["*.py", "*", "src/*", "*/*.py", "?.py", "[ab].py", "[!a].py", ".*", "*/", "s*/x.py"]
)
def test_glob_variants_are_exactly_bash_expansions_under_every_setting(tree: Path, pattern: str) -> None:
    (word,) = tokenize(pattern)
    assert isinstance(word, Word)
    try:
        mine = [sorted(v) for v in expand_words([word], tree)]
    except Refused as refusal:
        assert "option" in refusal.reason  # `-rf.txt` is matched: refused, never expanded
        assert any(w.startswith("-") for v in bash_expansions(pattern, tree) for w in v)
        return
    assert sorted(mine) == sorted(bash_expansions(pattern, tree))


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("*.nothing", "matches nothing"),
        ("**/*.py", "'**'"),
        ("[[:alpha:]].py", "character class"),
        ("/etc/*", "absolute"),
    ],
)
def test_globs_that_cannot_be_known_are_refused(tree: Path, pattern: str, reason: str) -> None:
    (word,) = tokenize(pattern)
    assert isinstance(word, Word)
    with pytest.raises(Refused, match=re.escape(reason)):
        expand_words([word], tree)


def test_a_glob_without_a_workspace_is_refused() -> None:
    (word,) = tokenize("*.py")
    assert isinstance(word, Word)
    with pytest.raises(Refused, match="without a known workspace"):
        expand_words([word], None)


# ------------------------------------------------------------------------ credentials


@pytest.mark.parametrize(
    "name",
    [
        *[".env", ".ENV", ".env.local", "prod.env", ".envrc", "id_rsa", "id_ed25519.pub", "server.KEY"],
        *[
            "cert.pem",
            ".netrc",
            ".git-credentials",
            ".npmrc",
            "credentials",
            "credentials.json",
            "secrets.yaml",
        ],
        "x.tfvars",
    ],
)
def test_credential_names(name: str) -> None:
    assert credential_name(name)


@pytest.mark.parametrize(
    "name",
    [".venv", "env", "environment.py", "keys.md", "README.md", "config", ".gitignore", "credentials.py"],
)
def test_ordinary_names(name: str) -> None:
    assert not credential_name(name)


def test_git_config_is_a_credential_file_but_other_git_files_are_not() -> None:
    assert credential_path([".git", "config"])
    assert credential_path([".git", "modules", "x", "config"])
    assert not credential_path([".git", "HEAD"])
    assert not credential_path(["config", "app.yaml"])


# ------------------------------------------------------------------------------ paths


def test_paths_stay_in_the_workspace_through_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("x")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "in.txt").write_text("x")
    (ws / "out").symlink_to(outside)
    (ws / "ok").symlink_to(ws / "in.txt")
    check_path("in.txt", Reads.CONTENT, ws)
    check_path("ok", Reads.CONTENT, ws)
    with pytest.raises(Refused, match="symlink out"):
        check_path("out/notes.txt", Reads.CONTENT, ws)
    with pytest.raises(Refused, match="symlink out"):
        check_path("out", Reads.NAMES, ws)


def test_a_symlink_to_a_credential_inside_is_refused_for_content(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("K=v")
    (tmp_path / "notes.txt").symlink_to(tmp_path / ".env")
    check_path("notes.txt", Reads.NAMES, tmp_path)
    with pytest.raises(Refused, match="symlink to a credential"):
        check_path("notes.txt", Reads.CONTENT, tmp_path)


def test_fifos_and_hard_links_are_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a").write_text("x")
    os.link(tmp_path / "a", tmp_path / "b")
    with pytest.raises(Refused, match="not a regular file"):
        check_path("pipe", Reads.CONTENT, tmp_path)
    with pytest.raises(Refused, match="hard-linked"):
        check_path("b", Reads.CONTENT, tmp_path)


def test_a_program_on_path_inside_the_workspace_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "cat"
    fake.write_text("#!/bin/sh\ntouch pwned\n")
    fake.chmod(0o755)
    assert is_ephemeral("cat README.md", workspace=tmp_path)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert not is_ephemeral("cat README.md", workspace=tmp_path)
    monkeypatch.setenv("PATH", f".venv/bin{os.pathsep}{os.environ['PATH']}")
    assert not is_ephemeral("cat README.md", workspace=tmp_path)
    assert is_ephemeral("echo hi", workspace=tmp_path)  # a builtin: PATH does not decide


@pytest.mark.parametrize(
    ("command", "variable", "value"),
    [
        ("git status", "HOME", "."),
        ("git log -1", "GIT_CONFIG_GLOBAL", "gitconfig"),
        ("kubectl get pods", "KUBECONFIG", "./cfg"),
        ("kubectl get pods", "KUBECONFIG", "/nonexistent/a:cfg"),
        ("docker ps", "DOCKER_CONFIG", "docker"),
        ("rg foo src", "RIPGREP_CONFIG_PATH", "rg.conf"),
        ("jq . package.json", "HOME", "."),
    ],
)
def test_the_users_own_configuration_is_trusted_only_outside_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, variable: str, value: str
) -> None:
    (tmp_path / "src").mkdir()
    assert is_ephemeral(command, workspace=tmp_path)
    monkeypatch.setenv(variable, value if not value.startswith(".") else str(tmp_path / value))
    monkeypatch.chdir(tmp_path)
    assert not is_ephemeral(command, workspace=tmp_path)


def test_rg_is_judged_with_hidden_files_since_an_ignore_file_can_whitelist_one(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x")
    assert is_ephemeral("rg KEY src", workspace=tmp_path)
    (tmp_path / "src" / ".ignore").write_text("!.env\n")
    (tmp_path / "src" / ".env").write_text("KEY=secret\n")
    assert not is_ephemeral("rg KEY src", workspace=tmp_path)


# ---------------------------------------------------------------------------- options

TABLE = options("-n, --lines=NUM", "-q, --quiet", "--color[=WHEN]", "-f, --file=FILE", numeric=True)


def test_options_are_parsed_like_getopt() -> None:
    parsed = parse(TABLE, ["-qn5", "a", "--lines", "3", "--color", "--file=x", "-7", "--", "-q"])
    assert [(o.key, v) for o, v in parsed.given] == [
        ("-q", None),
        ("-n", "5"),
        ("-n", "3"),
        ("--color", None),
        ("-f", "x"),
        ("-NUM", "7"),
    ]
    assert parsed.operands == ["a", "-q"]
    assert parsed.late == ["--lines", "3", "--color", "--file=x", "-7"]


def test_an_optional_argument_belongs_only_to_the_name_that_shows_it() -> None:
    # sort: `-c, --check[=WHEN]`; read `-cfoo` as -c with "foo" and a cluster -c -f -o o slips by.
    table = options("-c, --check[=WHEN]", "-f", "-o, --output=FILE")
    assert [(o.key, v) for o, v in parse(table, ["-cf", "--check=quiet"]).given] == [
        ("-c", None),
        ("-f", None),
        ("-c", "quiet"),
    ]
    given = parse(table, ["-cfoo"]).given
    assert [(o.key, v) for o, v in given] == [("-c", None), ("-f", None), ("-o", "o")]


def test_a_tree_style_parser_refuses_valued_letters_inside_clusters() -> None:
    table = options("-a", "-L=LEVEL", "-o=FILE", attached=False)
    assert [(o.key, v) for o, v in parse(table, ["-a", "-L", "2"]).given] == [("-a", None), ("-L", "2")]
    for argv in (["-aL", "2"], ["-L2"], ["-Lo", "2", "out"]):
        with pytest.raises(Refused, match="inside a cluster"):
            parse(table, argv)


@pytest.mark.parametrize("argv", [["--line=3"], ["--li", "3"], ["-x"], ["--quiet=1"], ["-n"], ["--lines"]])
def test_abbreviations_unknown_options_and_missing_values_are_refused(argv: list[str]) -> None:
    with pytest.raises(Refused):
        parse(TABLE, argv)


# -------------------------------------------------------------------------- git index


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a"}
    env |= {"GIT_COMMITTER_EMAIL": "a@x", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize(("version", "object_format"), [(2, "sha1"), (3, "sha1"), (4, "sha1"), (4, "sha256")])
def test_the_index_reader_finds_the_gitlinks_git_lists(
    tmp_path: Path, version: int, object_format: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", f"--object-format={object_format}", cwd=repo)
    for name in ["a.txt", "deep/dir/b.txt", "deep/dir/c.txt", "z.txt"]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    for inner in ["vendor/one", "deep/two"]:
        (repo / inner).mkdir(parents=True)
        git("init", "-q", f"--object-format={object_format}", cwd=repo / inner)
        git("commit", "-q", "--allow-empty", "-m", "x", cwd=repo / inner)
    git("add", "-A", cwd=repo)
    git("update-index", "--index-version", str(version), cwd=repo)
    listed = [
        line.split("\t")[1]
        for line in git("ls-files", "-s", cwd=repo).splitlines()
        if line.startswith("160000")
    ]

    assert (
        sorted(gitlinks(repo / ".git" / "index", object_format))
        == sorted(listed)
        == ["deep/two", "vendor/one"]
    )


def test_a_fresh_repository_is_inert_and_a_configured_program_is_not(tmp_path: Path) -> None:
    git("init", "-q", cwd=tmp_path)
    git("config", "user.name", "a", cwd=tmp_path)
    git("config", "pull.rebase", "true", cwd=tmp_path)
    check_repository(tmp_path)
    check_repository(tmp_path / "sub" / "folder")  # git finds the repository above
    with (tmp_path / ".git" / "config").open("a") as fh:
        fh.write('[diff "x"]\n\ttextconv = "cat \\\n\t  # continued"\n')
    with pytest.raises(Refused, match=re.escape("diff.x.textconv")):
        check_repository(tmp_path)


@pytest.mark.parametrize(
    "text",
    [
        "[core]\n\tfsmonitor = x\n",
        "[core] fsmonitor = x\n",
        "[CORE]\n\tFsMonitor = x\n",
        "[include]\n\tpath = x\n",
        '[includeIf "gitdir:/"]\n\tpath = x\n',
        "[core]\n\tbare = false \\\n\n[core]\n\tpager = x\n",
        '[core]\n\tbare = "unterminated\n',
    ],
)
def test_config_keys_that_run_or_include_are_found_however_they_are_written(
    tmp_path: Path, text: str
) -> None:
    git("init", "-q", cwd=tmp_path)
    with (tmp_path / ".git" / "config").open("a") as fh:
        fh.write(text)
    with pytest.raises(Refused):
        check_repository(tmp_path)


def test_a_submodule_is_inspected_as_a_repository_of_its_own(tmp_path: Path) -> None:
    inner, main = tmp_path / "inner", tmp_path / "main"
    for repo in (inner, main):
        repo.mkdir()
        git("init", "-q", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "x", cwd=inner)
    git("-c", "protocol.file.allow=always", "submodule", "-q", "add", str(inner), "sub", cwd=main)
    check_repository(main)
    git("config", "core.fsmonitor", f"touch {tmp_path / 'pwned'}; false", cwd=main / "sub")
    with pytest.raises(Refused, match=re.escape("core.fsmonitor")):
        check_repository(main)
    git("status", "--porcelain", cwd=main)
    assert (tmp_path / "pwned").exists()  # control: git really runs it


def test_a_linked_worktree_is_inert_but_a_forged_git_file_is_another_repository(tmp_path: Path) -> None:
    main, other, ws = tmp_path / "main", tmp_path / "other", tmp_path / "ws"
    for repo in (main, other):
        repo.mkdir()
        git("init", "-q", cwd=repo)
        git("commit", "-q", "--allow-empty", "-m", f"secret of {repo.name}", cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "linked"), cwd=main)
    check_repository(tmp_path / "linked")

    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with pytest.raises(Refused, match="another repository"):
        check_repository(ws)
    assert "secret of other" in git("log", "-1", cwd=ws)  # control: git follows the file


def test_borrowed_objects_are_another_repository(tmp_path: Path) -> None:
    git("init", "-q", cwd=tmp_path)
    check_repository(tmp_path)
    (tmp_path / ".git" / "objects" / "info" / "alternates").write_text("/elsewhere/.git/objects\n")
    with pytest.raises(Refused, match="alternates"):
        check_repository(tmp_path)


def test_the_sandboxs_empty_alternates_stub_borrows_nothing(tmp_path: Path) -> None:
    # the CLI's sandbox leaves an empty objects/info/alternates behind as a mount point
    git("init", "-q", cwd=tmp_path)
    stub = tmp_path / ".git" / "objects" / "info" / "alternates"
    stub.write_text("")
    check_repository(tmp_path)
    stub.write_text("\n  \n")
    check_repository(tmp_path)
    stub.unlink()
    stub.symlink_to(tmp_path / "elsewhere")  # a link is never taken as empty
    with pytest.raises(Refused, match="alternates"):
        check_repository(tmp_path)


def test_a_hook_is_found(tmp_path: Path) -> None:
    git("init", "-q", cwd=tmp_path)
    check_repository(tmp_path)
    (tmp_path / ".git" / "hooks" / "post-index-change").write_text("#!/bin/sh\n")
    with pytest.raises(Refused, match="post-index-change"):
        check_repository(tmp_path)


@pytest.mark.parametrize(
    "variable", ["GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF"]
)
def test_git_refuses_while_the_environment_points_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    check_repository(tmp_path)
    monkeypatch.setenv(variable, str(tmp_path))
    with pytest.raises(Refused, match=variable):
        check_repository(tmp_path)
