"""is_ephemeral rule by rule: admitted forms, refused forms and the reason given, in the sandbox.

The reason is checked too, so that a command is refused by the rule meant to refuse it (a refusal
for an unrelated reason would hide a hole the moment that other rule changed).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from glance_sandbox import Sandbox

import flower
import flower.stores.ephemeral
from flower.shell import is_ephemeral, judge
from flower.stores.ephemeral import EphemeralPolicy

ADMITTED = [
    # what only stats or names: safe with or without the confinement
    "test -f README.md",
    "[ -d src ]",
    "[ ! -e build ]",
    "python3 --version",
    "git check-ignore -v .env",
    # git
    "git status",
    "git status -sb",
    "git diff --stat",
    "git diff HEAD~1 -- src/app.py",
    "git diff main...feature",
    "git log --oneline --graph --decorate --all",
    "git log -n 3 --format='%h %an %s'",
    "git log --format='%an <%ae>'",
    "git log @{u}..HEAD",
    "git log --since='2 days ago' --author=alice",
    "git show HEAD:README.md",
    "git show stash@{0}",
    "git branch --list 'feat/*'",
    "git branch --format '%(refname:short)'",
    "git rev-parse --abbrev-ref HEAD",
    "git rev-parse --git-dir",
    "git ls-files --others --exclude-standard",
    "git blame -L 10,20 src/app.py",
    "git grep -e foo -- '*.py'",
    "git for-each-ref --format='%(refname)' refs/heads",
    "git tag -n5",
    "git tag --sort=-v:refname",
    "git remote",
    "git stash show -p stash@{1}",
    "git config --get user.email",
    "git config get user.name",
    "git config user.name",
    "git --no-pager log -3",
    "git -P diff",
    "git --version",
    "git version --build-options",
    "git var GIT_AUTHOR_IDENT",
    "git diff --no-ext-diff --no-textconv",
    # files
    "ls -lah src/",
    "ls *.md",
    "ls > '/dev/null'",
    "du -sh *",
    "wc -l src/*.py",
    "find . -name '*.py' -newer README.md",
    'find . -name "-delete"',
    "find . \\( -name '*.py' -o -name '*.md' \\) -print",
    "cat 需求.md",
    "head -n 3 /etc/os-release",
    "cat /proc/cpuinfo",
    "tail -n +2 data.csv",
    "stat -c %s README.md",
    "readlink -f README.md",
    "ls traps",
    "ls -la traps/",
    "find traps",
    # search and text
    "grep -rn TODO src/",
    "grep '<div' README.md",
    "grep -rn --include='*.py' main src",
    "awk '$3 > 100 {print $1}' data.csv",
    "awk '{print $(NF-1)}' data.csv",
    "awk -F, 'NR > 1 {s += $2} END {print s}' data.csv",
    'awk \'$1 == "a" || $2 == "b" {print}\' data.csv',
    "sed ':a;N;$!ba;s/\\n/ /g' README.md",
    "sed -n '/start/,/end/{p;q}' README.md",
    "sed = README.md",
    "sed '1a hello world' README.md",
    "sed 's/a\\/b/c/' README.md",
    "jq -r '.dependencies | keys[]' package.json",
    "jq --arg n x '.name == $n' package.json",
    "echo '$(not run)'",
    "echo 'a;b|c&d'",
    'grep -n "x$" README.md',
    "grep -n 'x$' README.md",
    "echo cost: $ 5 a$/b",
    "tree -a -L 2",
    "printf -- '%s\\n' a",
    "sort -t, -k2 -n data.csv",
    "uniq -c data.csv",
    "diff -u README.md docs/guide.md",
    # system
    "date -d yesterday +%s",
    "ps aux",
    "ps -eo pid,comm,%cpu --sort=-%cpu",
    "ps -p 1 -o pid,cmd",
    "pgrep -fl python",
    "lsof -nP -iTCP -sTCP:LISTEN",
    "command -v node",
    "type -t ls",
    "docker ps -a --format '{{.Names}}'",
    "docker logs --tail 100 web",
    "docker stats --no-stream",
    "kubectl get pods -n kube-system -o wide",
    "kubectl --context=staging get svc",
    "kubectl logs api-0 -c app --tail=50",
    # compound and redirections
    "git status && git log --oneline -5 | head",
    "ls -la;pwd",
    "ls nothing 2>/dev/null || echo missing",
    "ls >/dev/null 2>&1",
    'cat README.md 2> "/dev/null"',
    "echo oops >&2",
    "ls |& grep x",
    "ls\npwd",
    "ls &&\n  pwd",
    "ls \\\n  -la",
    "ls;",
    "  ls -la  ",
    "cat < /dev/null",
]

REFUSED = [
    # step 1 and 2: empty input, characters, what the lexer cannot prove
    ("", "empty"),
    (" \t\n", "empty"),
    ("ls \u2028rm a", "U+2028"),
    ("ls \u2016 rm a", "U+2016"),
    ("ls \u01c0rm a", "U+01C0"),
    ("ls \uff1brm a", "U+FF1B"),
    ("cat \u202e.env", "U+202E"),
    ("ls\u00a0-la", "U+00A0"),
    ("ls\rrm x", "U+000D"),
    ("ls\x00", "U+0000"),
    ("echo $(rm x)", "'$' expansion"),
    ("echo `rm x`", "command substitution"),
    ('echo "`rm x`"', "command substitution"),
    ("echo $HOME", "'$' expansion"),
    ("echo ${x:=1}", "'$' expansion"),
    ("echo $'\\x41'", "'$' expansion"),
    ("echo $=x $+x", "'$' expansion"),
    ("echo x$~y", "'$' expansion"),
    ("cat <(ls)", "process substitution"),
    ("(ls)", "parentheses"),
    ("ls # comment", "comment"),
    ("ls {a,b}", "brace expansion"),
    ("ls ~/projects", "tilde"),
    ("ls x=~/y", "tilde"),
    ("cat =ls", "zsh"),
    ("echo 'unterminated", "unterminated"),
    ("ls \\", "trailing backslash"),
    ("ls;; pwd", "case terminator"),
    ("cat <<EOF\nx\nEOF", "here-document"),
    ("{fd}>/dev/null ls", "{variable} redirection"),
    ("; ls", "without a command before it"),
    ("ls &&", "ending in an operator"),
    ("> /dev/null", "only of redirections"),
    # step 3: redirections
    ("ls > f", "redirection"),
    ("ls >> /dev/null2", "redirection"),
    ("ls 3>/dev/null", "redirection"),
    ("ls 2>&3", "redirection"),
    ("cat < .env", "redirection"),
    # step 4: background
    ("ls &", "background"),
    ("ls & pwd", "background"),
    # step 5: programs
    ("rm x", "'rm' is not a glance"),
    ("/bin/ls", "'/bin/ls' is not a glance"),
    ("FOO=1 ls", "'FOO=1' is not a glance"),
    ("env", "env (only inside the confinement)"),
    ("env ls", "env with operands"),
    ("xargs rm", "'xargs' is not a glance"),
    ("top -b -n 1", "top (only inside the confinement)"),
    ("top -b", "top without -b and -n"),
    ("printenv", "printenv (only inside the confinement)"),
    ("cd src", "cd (only inside the confinement)"),
    ("cd ..", "a path leaving its folder"),
    ("python3 -c 'print(1)'", "an interpreter beyond --version"),
    ("[ -f x", "[ without its closing ]"),
    ("l* -la", "is not a glance"),
    ("ls && rm -rf /", "'rm' is not a glance"),
    # sed as GNU sed parses it
    ("sed -n ':a e touch pwned' README.md", "label followed by more text"),
    ("sed ':a w out.txt' README.md", "label followed by more text"),
    ("sed 'v 4.2 w o' README.md", "'v' command"),
    ("sed 'bx w o\n:x' README.md", "label followed by more text"),
    ("sed 's/a/b/ w out' README.md", "s flag 'w'"),
    ("sed 's/a/b/e' README.md", "s flag 'e'"),
    ("sed '1r .env' README.md", "'r' command"),
    ("sed -i s/a/b/ README.md", "option -i"),
    ("sed --in s/a/b/ README.md", "option --in"),
    ("sed -f s.sed README.md", "option -f"),
    ("sed -e 'a x\\' -e 'w o' README.md", "continues into the next -e"),
    # awk
    ("awk 'BEGIN{system(\"ls\")}'", "awk: system"),
    ("awk '{print > \"f\"}' README.md", "output redirection"),
    ("awk '{print | \"sh\"}' README.md", "pipe"),
    ("awk 'BEGIN{getline l < \".env\"}'", "getline"),
    ("awk 'BEGIN{print ENVIRON[\"HOME\"]}'", "ENVIRON"),
    ("awk 'BEGIN{ARGV[1]=\".env\"} {print}'", "ARGV"),
    ("awk '{print}' README.md -f x", "after the program"),
    # find
    ("find . -delete", "find -delete"),
    ("find . -exec rm {} \\;", "find -exec"),
    ("find . -fprint out", "find -fprint"),
    ("find -L . -name x", "find -L"),
    ("find / -name x", "absolute path"),
    # git
    ("git -C /tmp status", "global option -C"),
    ("git -c core.pager=sh log", "global option -c"),
    ("git --git-dir=/tmp/x status", "global option --git-dir"),
    ("git --work-tree=/ status", "global option --work-tree"),
    ("git -p log", "global option -p"),
    ("git diff --output=out.patch", "--output"),
    ("git diff --out=x", "--out"),
    ("git log --ext-diff -p", "--ext-diff"),
    ("git show --textconv HEAD", "--textconv"),
    ("git grep -O foo", "git grep -O"),
    ("git grep --open-files-in-pager=vim foo", "--open-files-in-pager"),
    ("git diff --no-index /etc/passwd /dev/null", "--no-index"),
    ("git log --show-signature", "--show-signature"),
    ("git log '--format=%G?'", "verifies signatures"),
    ("git remote -v", "URLs can hold tokens"),
    ("git config --list", "git config --list"),
    ("git config --get remote.origin.url", "may hold a secret"),
    ("git var -l", "git var other than an identity"),
    ("git show HEAD:.env", "credential file"),
    ("git log -p -- ../outside", "leaving the repository"),
    ("git branch newbranch", "create a branch or tag"),
    ("git push", "git push"),
    ("git help log", "git help"),
    # kubectl and docker
    ("kubectl --kubeconfig=/elsewhere/cfg get pods", "option --kubeconfig"),
    ("kubectl get pods --kubeconfig cfg", "option --kubeconfig"),
    ("kubectl config view --raw", "kubectl config view"),
    ("kubectl get secret x -o yaml", "kubectl -o yaml"),
    ("kubectl describe pod api", "kubectl describe"),
    ("kubectl logs -f api", "option -f"),
    ("docker inspect web", "docker inspect"),
    ("docker -H ssh://x ps", "docker -H"),
    ("docker compose ps", "docker compose"),
    ("docker top web e", "2 operands"),
    # reads outside the workspace or of credentials
    ("cat /etc/passwd", "absolute path"),
    ("cat /proc/self/environ", "absolute path"),
    ("head ../outside.txt", "leaving its folder"),
    ("cat .env", "credential file"),
    ("cat .ENV.local", "credential file"),
    ("grep KEY config/prod.env", "credential file"),
    ("cat .git/config", "credential file"),
    ("cat traps/key-link", "symlink out of the workspace"),
    ("cat traps/hard.txt", "hard-linked file"),
    ("ls traps/home-link", "symlink out of the workspace"),
    ("grep -r API_KEY .", "recursive read that reaches"),
    ("grep -rn url .git/", "inside .git"),
    ("grep -R x traps", "follows symlinks"),
    ("cat .e*", "credential file"),
    ("cat .?nv", "credential file"),
    ("cat ?env", "matches nothing"),
    ("ls *.nothing", "matches nothing"),
    ("ls **", "'**' glob"),
    ("ls [a-c]*", "range in a glob bracket"),
    # secrets through programs
    ("ps eww", "ps BSD options eww"),
    ("ps -o pid,environ", "ps format environ"),
    ("ps -auxe", "ps option -auxe"),
    ("jq -n env", "jq: env"),
    ("jq -n '$ENV.HOME'", "jq: $ENV"),
    ("jq -f x.jq data.json", "jq option -f"),
    ("jq --rawfile k .env -n '$k'", "credential file"),
    # forms that write or never end
    ("sort -o out data.csv", "option -o"),
    ("sort --compress-program=sh data.csv", "option --compress-program"),
    ("uniq data.csv out", "2 operands"),
    ("uniq data.csv -c", "options after its input"),
    ("xxd README.md -p", "2 operands"),
    ("tree -o out", "option -o"),
    ("tree -Lo 2 out", "option -L inside a cluster"),
    ("date -s now", "option -s"),
    ("date 010112002020", "set the clock"),
    ("hostname newname", "1 operands"),
    ("tail -f app.log", "option -f"),
    ("printf -v x hi", "printf option -v"),
    ("type ls", "type without -t"),
    ("command ls", "command other than command -v"),
    ("diff src docs", "diff of a folder"),
    ("rg --pre=sh x", "option --pre"),
    ("strings @opts", "@file"),
    ("file -z x.gz", "option -z"),
    ("md5sum -c sums", "option -c"),
]


@pytest.mark.parametrize("command", ADMITTED)
def test_read_only_forms_are_admitted(glance_box: Sandbox, command: str) -> None:
    assert judge(command, workspace=glance_box.workspace) == judge("ls")  # admitted, no reason


@pytest.mark.parametrize(("command", "reason"), REFUSED)
def test_forms_that_write_run_or_leak_are_refused_by_their_rule(
    glance_box: Sandbox, command: str, reason: str
) -> None:
    verdict = judge(command, workspace=glance_box.workspace, confined=False)
    assert not verdict.admitted
    assert reason in verdict.reason


# Harmless only because they run confined: their own environment, a shell that ends with them,
# a read-only home, URLs whose tokens are masked in what the model is shown.
CONFINED_ONLY = ["env", "printenv PATH HOME", "top -b -n 1", "top -bn1", "cd src", "git remote -v"]


@pytest.mark.parametrize("command", CONFINED_ONLY)
def test_forms_only_the_confinement_makes_harmless_are_glances_only_when_confined(
    glance_box: Sandbox, command: str
) -> None:
    assert judge(command, workspace=glance_box.workspace).admitted
    alone = judge(command, workspace=glance_box.workspace, confined=False)
    assert not alone.admitted and "only inside the confinement" in alone.reason


def test_the_tables_do_not_overlap() -> None:
    assert not set(ADMITTED) & {c for c, _ in REFUSED}


# ----------------------------------------------------------------- without a workspace


@pytest.mark.parametrize(
    ("command", "admitted"),
    [
        ("ls -la", True),
        ("cat README.md", True),
        ("cat traps/key-link", True),  # lexically harmless; only the workspace shows the symlink
        ("git status", False),
        ("ls *.py", False),
        ("grep -rn foo src", False),
        ("diff a b", False),
        ("cat .env", False),
    ],
)
def test_without_a_workspace_what_needs_the_file_system_is_refused(command: str, admitted: bool) -> None:
    assert is_ephemeral(command) is admitted


def test_a_workspace_without_any_repository_admits_git_which_then_runs_nothing(tmp_path: Path) -> None:
    assert is_ephemeral("git status", workspace=tmp_path)
    assert is_ephemeral("git status", workspace=str(tmp_path))


def test_non_string_input_is_refused() -> None:
    assert is_ephemeral(None) is False  # type: ignore[arg-type]
    assert is_ephemeral(b"ls") is False  # type: ignore[arg-type]


# ------------------------------------------------------------------ the public contract


def test_the_seeds_signature_with_two_optional_keywords() -> None:
    params = inspect.signature(is_ephemeral).parameters
    assert list(params) == ["cmd", "workspace", "confined"]
    assert params["cmd"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert params["workspace"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["workspace"].default is None
    # a glance is what the coordinator runs, and that runs confined
    assert params["confined"].kind is inspect.Parameter.KEYWORD_ONLY and params["confined"].default is True


def test_every_public_import_path_is_the_shell_package() -> None:
    assert flower.is_ephemeral is is_ephemeral
    assert flower.stores.ephemeral.is_ephemeral is is_ephemeral


def test_policy_defaults() -> None:
    p = EphemeralPolicy()
    assert p.enabled is True
    assert p.keep_recent == 6
    assert p.max_chars == 2000
    assert p.text == "[{cmd} 的结果已过期(第 {age} 轮前),当前状态可能已变。需要请重新执行]"


def test_placeholder_fills_command_and_age() -> None:
    assert EphemeralPolicy().placeholder("git status", 7) == (
        "[git status 的结果已过期(第 7 轮前),当前状态可能已变。需要请重新执行]"
    )


def test_placeholder_uses_custom_text_and_keeps_braces_in_command() -> None:
    p = EphemeralPolicy(text="stale: {cmd} @{age}")
    assert p.placeholder("echo {age} {cmd}", 3) == "stale: echo {age} {cmd} @3"
