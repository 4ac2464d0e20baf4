"""is_ephemeral(): the read-only "glance" whitelist, and EphemeralPolicy.

is_ephemeral is a security boundary (the coordinator may run exactly these commands
itself), so the tests lean hard on refusals: a table of known forms, plus a fuzzer that
mutates admitted commands into state-changing ones. A generated grammar of read-only
commands checks the other direction, so refusing everything cannot pass.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower.stores.ephemeral import EphemeralPolicy, is_ephemeral

# --------------------------------------------------------------------------- tables

ADMITTED = [
    # git, read-only
    "git status",
    "git status -s",
    "git status --porcelain",
    "git status -sb",
    "git status --short --branch",
    "git diff",
    "git diff --stat",
    "git diff --cached",
    "git diff --staged --name-only",
    "git diff HEAD~1 -- src/app.py",
    "git diff main...feature",
    "git diff --no-ext-diff",
    "git log",
    "git log --oneline -5",
    "git log --oneline --graph --decorate --all",
    "git log -n 3 --format='%h %an %s'",
    'git log --pretty=format:"%h - %s" -10',
    "git log -p -- README.md",
    "git log @{u}..HEAD",
    "git log --since='2 days ago' --author=alice",
    "git log --output-indicator-new=+ -p",
    "git show",
    "git show HEAD",
    "git show --stat HEAD~2",
    "git show HEAD:README.md",
    "git show stash@{0}",
    "git branch",
    "git branch -a",
    "git branch -r",
    "git branch -vv",
    "git branch -av",
    "git branch --show-current",
    "git branch --list 'feat/*'",
    "git branch -l 'fix-*'",
    "git branch --merged main",
    "git branch --no-merged",
    "git branch --contains HEAD~3",
    "git branch --sort=-committerdate",
    "git branch --format '%(refname:short)'",
    "git rev-parse HEAD",
    "git rev-parse --abbrev-ref HEAD",
    "git rev-parse --show-toplevel",
    "git rev-parse --short HEAD",
    "git ls-files",
    "git ls-files --others --exclude-standard",
    "git ls-tree -r HEAD --name-only",
    "git blame src/app.py",
    "git blame -L 10,20 src/app.py",
    "git describe --tags",
    "git describe --always --dirty",
    "git shortlog -sn",
    "git show-ref --tags",
    "git rev-list --count HEAD",
    "git cat-file -p HEAD",
    "git grep -n TODO",
    "git grep -e foo -- '*.py'",
    "git merge-base main HEAD",
    "git for-each-ref --format='%(refname)' refs/heads",
    "git count-objects -v",
    "git reflog",
    "git reflog show -5",
    "git tag",
    "git tag -l",
    "git tag --list 'v1.*'",
    "git tag -n5",
    "git tag --sort=-v:refname",
    "git tag --contains HEAD",
    "git remote",
    "git remote -v",
    "git remote get-url origin",
    "git remote show origin",
    "git stash list",
    "git stash show -p stash@{1}",
    "git worktree list",
    "git config --get user.email",
    "git config --list",
    "git config -l --show-origin",
    "git config --global --get-regexp alias",
    "git config user.name",
    "git config get user.name",
    "git config list --local",
    "git --no-pager log -3",
    "git -C sub status",
    "git -C ../other log --oneline -1",
    "git -P diff",
    "git --version",
    "git version",
    "git check-ignore -v build/",
    "git diff-tree --no-commit-id -r HEAD",
    "git whatchanged -1",
    "git cherry -v main",
    "git name-rev HEAD",
    # directory and system info
    "ls",
    "ls -la",
    "ls -lah src/",
    "ls -1 *.py",
    "ls $HOME",
    "ls ~/projects",
    "ls {src,tests}",
    "pwd",
    "pwd -P",
    "df -h",
    "du -sh .",
    "du -sh *",
    "du -h --max-depth=1 .",
    "date",
    "date +%F",
    "date '+%Y-%m-%d %H:%M'",
    "date -u",
    "date -d yesterday +%s",
    "date --date='2 days ago'",
    "date -Iseconds",
    "date -R",
    "whoami",
    "env",
    "printenv PATH",
    "uname -a",
    "hostname",
    "hostname -f",
    "hostname --short",
    "id",
    "id -u",
    "free -m",
    "uptime",
    "nproc",
    # processes and containers
    "ps",
    "ps aux",
    "ps -ef",
    "top -b -n 1",
    "lsof -i :8080",
    "pgrep -fl python",
    "docker ps",
    "docker ps -a --format '{{.Names}}'",
    "docker images",
    "docker logs web",
    "docker logs --tail 100 web",
    "docker inspect web",
    "docker image ls",
    "docker container ls -a",
    "docker compose ps",
    "docker compose -f compose.yml logs api",
    "docker-compose ps",
    "kubectl get pods",
    "kubectl get pods -n kube-system -o wide",
    "kubectl -n prod get deploy",
    "kubectl --context=staging get svc",
    "kubectl describe pod api-0",
    "kubectl logs api-0 -c app --tail=50",
    "kubectl top pods",
    "kubectl config current-context",
    "kubectl config get-contexts",
    "kubectl rollout status deploy/api",
    "kubectl cluster-info",
    # file viewing
    "cat README.md",
    "cat a.txt b.txt",
    "head README.md",
    "head -n 20 src/app.py",
    "head -c 100 data.bin",
    "tail -n 50 app.log",
    "tail -f app.log",
    "wc -l src/*.py",
    "wc -c README.md",
    "stat setup.py",
    "find . -name '*.py'",
    'find . -type f -name "*.md" -maxdepth 2',
    "find src -newer setup.py -print",
    "find . -size +1M",
    "find . ! -path './.git/*' -type f",
    "tree",
    "tree -L 2",
    "tree -a -I node_modules src",
    "file README.md",
    "file -b data.bin",
    "realpath .",
    "readlink -f link",
    "md5sum a.txt",
    "sha256sum dist/app.tar.gz",
    # path lookup
    "which python",
    "which -a python3",
    "whereis git",
    "command -v node",
    "command -V ls",
    "type ls",
    "type -a python",
    # text processing
    "grep -rn TODO src/",
    "grep -c error app.log",
    "grep -E 'foo|bar' a.txt",
    "grep -v '^#' config.ini",
    "egrep 'a|b' f.txt",
    "rg TODO",
    "rg -n 'def main' src",
    "rg -g '*.py' -l import",
    "rg --pre-glob '*.gz' foo",
    "sort names.txt",
    "sort -rn counts.txt",
    "sort -t, -k2 data.csv",
    "sort -u a.txt",
    "sort --check data.txt",
    "uniq",
    "uniq -c",
    "uniq -c sorted.txt",
    "uniq -d -i sorted.txt",
    "awk '{print $1}' access.log",
    "awk -F: '{print $1, $3}' /etc/passwd",
    "awk -F ',' '{print $2}' data.csv",
    "awk 'NR==1' file.txt",
    "awk '{sum += $2} END {print sum}' data.txt",
    "awk -v x=1 '{print x, $0}' f",
    'awk \'$1 == "a" || $2 == "b" {print}\' f',
    "awk 'BEGIN { getline; print }' f",
    "sed -n '1,20p' file.txt",
    "sed 's/foo/bar/g' file.txt",
    "sed -E 's/(a|b)+/x/' f",
    "sed -n '/start/,/end/p' log.txt",
    "sed '1d' data.csv",
    "sed -n '$p' f",
    "sed 'y/abc/xyz/' f",
    "sed -e 's/a/b/' -e 's/c/d/' f",
    "sed --expression='s/a/b/' f",
    "sed -ne '/x/{p;q}' f",
    "sed ':a;N;$!ba;s/\\n/ /g' f",
    "sed '1a hello world' f",
    "sed 's/hello/world/' f",
    "sed -n 'l' f",
    "jq '.name' package.json",
    "jq -r '.dependencies | keys[]' package.json",
    "diff a.txt b.txt",
    "diff -u old.py new.py",
    "cut -d, -f1 data.csv",
    "cut -c1-10 f",
    "tr a-z A-Z",
    "tr -d '\\r'",
    "nl -ba file.txt",
    "comm -12 a.txt b.txt",
    "column -t -s, data.csv",
    "echo hello",
    "echo $PATH",
    "echo 'a;b|c&d'",
    'echo "x || y"',
    "printf '%s\\n' hello",
    "printf -- '%s\\n' a",
    # compound commands, judged segment by segment
    "git status && git log --oneline -5 | head",
    "ls -la; pwd",
    "ls -la;pwd",
    "cat a.txt | grep x | wc -l",
    "git status 2>&1",
    "ls &> /dev/null",
    "ls &>/dev/null",
    "ls nothing 2>/dev/null || echo missing",
    "git diff --stat 2>&1 | tail -5",
    "ls > /dev/null",
    "ls >/dev/null 2>&1",
    "ls 1>/dev/null",
    "echo oops >&2",
    "ls 2>>/dev/null",
    "ls |& grep x",
    "ps aux | grep python | grep -v grep",
    "sort data.txt | uniq -c | sort -rn | head -10",
    "find . -name '*.py' | wc -l",
    "docker ps && docker images",
    "kubectl get pods -n x | grep Running",
    "git status; git stash list",
    "which python || which python3",
    "ls\npwd",
    "git status\ngit log -1\n",
    "ls \\\n  -la",
    "ls;",
    "  ls -la  ",
    "env | grep PATH",
    "echo $? $$",
    'cat "$HOME/.bashrc"',
]

REFUSED = [
    # step 1: empty
    "",
    " ",
    "\t\n",
    # unknown / state-changing verbs
    "rm x",
    "rm -rf build",
    "mv a b",
    "cp a b",
    "touch f",
    "mkdir d",
    "rmdir d",
    "chmod +x run.sh",
    "chown me f",
    "ln -s a b",
    "curl http://example.com",
    "wget http://example.com",
    "python script.py",
    "python3 -c 'print(1)'",
    "node app.js",
    "bash -c ls",
    "bash script.sh",
    "sh -c 'ls'",
    "sh",
    "zsh -c ls",
    "npm install",
    "npm test",
    "pip install requests",
    "make",
    "cargo build",
    "pytest -q",
    "kill 1234",
    "pkill python",
    "sleep 1",
    "cd src",
    "cd src && ls",
    "export FOO=1",
    "unset FOO",
    "alias ll='ls -l'",
    "dd if=/dev/zero of=f",
    "truncate -s 0 f",
    "split -l 10 f",
    "patch -p1",
    "less README.md",
    "vim f",
    "open .",
    "true",
    "/bin/ls",
    "./ls",
    "l\\s > /dev/null; rm x",
    # wrappers that run or evaluate other commands
    "xargs rm",
    "find . -name '*.tmp' | xargs rm",
    "ls | xargs -n1 cat",
    "exec ls",
    "eval ls",
    "eval 'rm -rf x'",
    "source ~/.bashrc",
    ". ./env.sh",
    "sudo ls",
    "nohup ls",
    "time ls",
    "timeout 5 ls",
    "nice ls",
    "watch ls",
    "builtin echo hi",
    "command rm x",
    "command ls",
    "env X=1 rm f",
    "env FOO=1 ls",
    "env -i ls",
    "env rm f",
    "env -u PATH ls",
    "FOO=1 ls",
    "PAGER=rm git log",
    "GIT_EXTERNAL_DIFF=sh git diff",
    "a=1",
    # tee and redirections
    "ls | tee f",
    "ls | tee -a f",
    "tee f",
    "ls > f",
    "ls >> f",
    "ls > out.txt 2>&1",
    "ls 2> err.txt",
    "ls &> all.txt",
    "ls &>> all.txt",
    "ls >| f",
    "ls >& f",
    "ls 1> f",
    "ls 3>/dev/null",
    "ls > /dev/null2",
    "ls >/dev/null/../x",
    "ls > '/dev/null'",
    "ls >&3",
    "ls 2>&3",
    "ls >&-",
    "cat < f",
    "cat <f",
    "wc -l <<< 'a'",
    "cat <<EOF\nhi\nEOF",
    "cat <> f",
    "echo hi>f",
    "ls >",
    "ls > && pwd",
    "{fd}>/dev/null ls",
    # substitution
    "echo $(rm x)",
    'echo "$(rm x)"',
    "echo `rm x`",
    "ls $(pwd)",
    "cat <(ls)",
    "diff <(ls a) <(ls b)",
    "ls >(cat)",
    "echo $((1+2))",
    "echo $[1+2]",
    "echo ${x:=1}",
    "echo ${!x}",
    "echo ${x@P}",
    "echo $'\\x41'",
    'echo $"hi"',
    # backgrounding
    "sleep 1 &",
    "ls &",
    "ls & pwd",
    "ls &pwd",
    "git status & rm x",
    # compound with any bad segment
    "ls; rm x",
    "ls && rm -rf /",
    "ls || touch f",
    "ls | sh",
    "ls | bash",
    "cat x | python3",
    "git status; git push",
    "ls\nrm x",
    "ls \\\n; rm x",
    "git log | xargs git branch -D",
    # subshells, grouping, control flow
    "(ls)",
    "( ls; pwd )",
    "{ ls; }",
    "if true; then ls; fi",
    "for f in *; do cat $f; done",
    "while true; do ls; done",
    "ls;; pwd",
    "f() { ls; }",
    "! ls",
    "ls # comment",
    "ls; # > f",
    # find
    "find . -delete",
    "find . -name '*.pyc' -delete",
    "find . -exec rm {} \\;",
    "find . -type f -exec rm -f {} +",
    "find . -execdir rm {} \\;",
    "find . -ok rm {} \\;",
    "find . -okdir rm {} \\;",
    "find . -fprint out.txt",
    "find . -fprint0 out.txt",
    "find . -fprintf out.txt %p",
    "find . -fls out.txt",
    'find . -name "-delete"',
    "find *",
    "find $DIR",
    # sed
    "sed -i 's/a/b/' f",
    "sed -i.bak 's/a/b/' f",
    "sed -i '' 's/a/b/' f",
    "sed --in-place 's/a/b/' f",
    "sed --in-place=.orig 's/a/b/' f",
    "sed --in 's/a/b/' f",
    "sed -Ei 's/a/b/' f",
    "sed -ni 'p' f",
    "sed -n -i p f",
    "sed 's/a/b/' -i f",
    "sed -f script.sed f",
    "sed --file=script.sed f",
    "sed 'w out' f",
    "sed -n '/x/w out' f",
    "sed '1W out' f",
    "sed 's/a/b/w out' f",
    "sed 's/a/b/gw out' f",
    "sed 's/a/b/e' f",
    "sed '1e ls' f",
    "sed -e p -e 'w out' f",
    "sed --expression='w out' f",
    "sed 's/[/]/x/w out' f",
    "sed s/a/b/ *",
    "sed",
    # sort / uniq / tree / file / date / hostname / rg
    "sort -o out.txt data.txt",
    "sort -o/tmp/x data.txt",
    "sort data.txt -o out.txt",
    "sort -ro out.txt data.txt",
    "sort --output=out.txt data.txt",
    "sort --output out.txt data.txt",
    "sort --out=out.txt data.txt",
    "sort --compress-program=sh data.txt",
    "sort *",
    "uniq in.txt out.txt",
    "uniq -c in.txt out.txt",
    "uniq in.txt -c",
    "uniq -- a b",
    "tree -o out.txt",
    "tree -ao out.txt",
    "tree -R -H . .",
    "file -C -m magic",
    "file --compile",
    "date -s '2020-01-01'",
    "date --set=2020-01-01",
    "date 010112002020",
    "date -us now",
    "hostname newname",
    "hostname -F /etc/hostname",
    "hostname -b x",
    "rg --pre=sh foo",
    "rg --pre sh foo",
    "rg --hostname-bin=sh foo",
    "rg foo *",
    "printf -v x hi",
    "printf -vx hi",
    "printf $FMT",
    # awk
    "awk '{system(\"rm x\")}'",
    "awk 'BEGIN{system(\"ls\")}'",
    "awk '{print > \"f\"}'",
    "awk '{print $1 > \"out\"}' f",
    'awk \'{printf "%s", $1 >> "out"}\' f',
    "awk '{print | \"sh\"}' f",
    "awk '{print |& \"sh\"}' f",
    "awk 'BEGIN{\"date\" | getline d; print d}'",
    "awk -f prog.awk f",
    "awk --file=prog.awk f",
    "awk -i inplace '{print}' f",
    "gawk -i inplace '{print}' f",
    "awk '@load \"filefuncs\"; {print}' f",
    'awk \'BEGIN{f="system"; @f("ls")}\'',
    "awk -o out.awk '{print}'",
    'awk \'BEGIN{print "x" |& "/inet/tcp/0/host/80"}\'',
    "awk '{print}' *",
    "awk",
    # git that writes, forces or runs programs
    "git",
    "git push",
    "git push --force",
    "git push -f origin main",
    "git push --force-with-lease",
    "git commit -m x",
    "git commit --amend",
    "git add .",
    "git checkout main",
    "git checkout -- .",
    "git switch main",
    "git restore f",
    "git reset HEAD~1",
    "git reset --hard",
    "git reset --hard HEAD~1",
    "git clean -fd",
    "git stash",
    "git stash push",
    "git stash pop",
    "git stash drop",
    "git stash clear",
    "git fetch",
    "git fetch --prune",
    "git pull",
    "git merge feature",
    "git rebase main",
    "git cherry-pick abc",
    "git revert HEAD",
    "git rm f",
    "git mv a b",
    "git init",
    "git clone http://x",
    "git gc --prune=now",
    "git remote prune origin",
    "git remote add origin http://x",
    "git remote set-url origin http://x",
    "git remote remove origin",
    "git branch -D x",
    "git branch -d x",
    "git branch -m a b",
    "git branch -M a b",
    "git branch -c a b",
    "git branch -C a b",
    "git branch --delete x",
    "git branch --del x",
    "git branch --move a b",
    "git branch --copy a b",
    "git branch --set-upstream-to=origin/x",
    "git branch -u origin/x",
    "git branch --unset-upstream",
    "git branch --edit-description",
    "git branch -f x HEAD",
    "git branch newbranch",
    "git branch -vD x",
    "git branch -a x",
    "git tag v1.0",
    "git tag -a v1 -m x",
    "git tag -d v1",
    "git tag --delete v1",
    "git tag -f v1",
    "git config user.name alice",
    "git config --unset user.name",
    "git config --add a.b c",
    "git config --edit",
    "git config -e",
    "git config edit",
    "git config set user.name x",
    "git config unset user.name",
    "git config --global core.pager less",
    "git config --replace-all a.b c",
    "git reflog expire --expire=now --all",
    "git reflog delete HEAD@{1}",
    "git worktree add ../x",
    "git worktree remove x",
    "git worktree prune",
    "git -c core.pager=sh log",
    "git -c alias.st='!rm x' st",
    "git --exec-path=/tmp log",
    "git --config-env=a.b=X log",
    "git -p log",
    "git --paginate log",
    "git --git-dir=/tmp/x status",
    "git --help",
    "git diff --output=out.patch",
    "git log --output=x -p",
    "git diff --ext-diff",
    "git log --ext-diff -p",
    "git grep -O foo",
    "git grep --open-files-in-pager=vim foo",
    "git status --hard",
    "git log --force",
    "git ls-remote --upload-pack='rm x' .",
    "git submodule foreach rm x",
    "git hash-object -w f",
    "git update-ref -d refs/heads/x",
    "git symbolic-ref HEAD refs/heads/x",
    "git difftool",
    "git log $REV",
    "git show *",
    # containers
    "docker run alpine",
    "docker rm web",
    "docker rmi img",
    "docker exec web ls",
    "docker stop web",
    "docker system prune",
    "docker compose up",
    "docker compose down",
    "docker compose config -o out.yml",
    "docker -H ssh://host ps",
    "docker",
    "docker image rm x",
    "docker container rm x",
    "kubectl delete pod x",
    "kubectl apply -f x.yaml",
    "kubectl exec x -- ls",
    "kubectl edit deploy x",
    "kubectl scale deploy x --replicas=0",
    "kubectl cluster-info dump --output-directory=out",
    "kubectl config use-context prod",
    "kubectl rollout restart deploy/x",
    "kubectl",
    # control characters
    "ls\x00",
    "ls\rrm x",
    "ls\x1b[2K",
]

# Refused although harmless: the spec reads these markers textually, and a false refusal
# only costs a subagent.
CONSERVATIVE_REFUSALS = [
    "awk '$3 > 100 {print $1}' f",  # any remaining `>` or `<`, even quoted
    "grep '<div' index.html",
    "git log --format='%an <%ae>'",
    "echo '$(not run)'",  # substitution markers are matched even inside quotes
    "awk '{print $(NF-1)}' f",
    "echo unterminated 'quote",
    "find . -name *.py",  # unquoted glob could expand to `-delete`
    "git log $BRANCH",
    "sed -n 1p $FILE",
    'cat f 2> "/dev/null"',
    "git branch --li",  # abbreviated options are not resolved
    "sort --c data.txt",
]


@pytest.mark.parametrize("cmd", ADMITTED)
def test_read_only_commands_are_admitted(cmd: str) -> None:
    assert is_ephemeral(cmd) is True


@pytest.mark.parametrize("cmd", REFUSED)
def test_state_changing_commands_are_refused(cmd: str) -> None:
    assert is_ephemeral(cmd) is False


@pytest.mark.parametrize("cmd", CONSERVATIVE_REFUSALS)
def test_ambiguous_forms_are_refused(cmd: str) -> None:
    assert is_ephemeral(cmd) is False


def test_tables_do_not_overlap() -> None:
    assert not set(ADMITTED) & (set(REFUSED) | set(CONSERVATIVE_REFUSALS))
    assert len(ADMITTED) >= 200 and len(REFUSED) >= 300


def test_non_string_input_is_refused() -> None:
    assert is_ephemeral(None) is False  # type: ignore[arg-type]
    assert is_ephemeral(b"ls") is False  # type: ignore[arg-type]


# ------------------------------------------------------------ generated commands

NAME = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
FILE = st.builds(lambda a, ext: a + ext, NAME, st.sampled_from(["", ".txt", ".py", ".md", ".json", ".log"]))
PATH = st.lists(FILE, min_size=1, max_size=3).map("/".join)
NUM = st.integers(1, 500).map(str)


def flags(pool: list[str], max_size: int = 3) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(pool), max_size=max_size)


@st.composite
def with_danger(draw, head: list[str], safe: list[str], dangers: list[str] | None, danger: bool) -> str:
    """`head + safe`, with one dangerous token group inserted anywhere after `head`."""
    parts = list(safe)
    if danger:
        assert dangers
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(dangers)))
    return " ".join(head + parts)


GIT_DANGER = [
    "--force",
    "--hard",
    "--prune",
    "--output=out.txt",
    "--ext-diff",
    "--force-with-lease",
    "--prune=now",
    "--delete",
    "--exec=sh",
]


@st.composite
def segment(draw, danger: bool = False) -> str:
    """One read-only command; with danger=True, the same command made state-changing."""
    family = draw(st.sampled_from(sorted(FAMILIES)))
    return draw(FAMILIES[family](danger))


def _git_status(danger):
    return flags(["-s", "--short", "-b", "--porcelain", "-uno", "--ignored"]).flatmap(
        lambda f: with_danger(["git", "status"], f, GIT_DANGER, danger)
    )


def _git_log(danger):
    pool = [
        "--oneline",
        "-5",
        "-n 3",
        "--stat",
        "--graph",
        "--decorate",
        "--all",
        "--format=%h",
        "main..HEAD",
        "-p",
        "--no-merges",
    ]
    return flags(pool).flatmap(lambda f: with_danger(["git", "log"], f, GIT_DANGER, danger))


def _git_diff(danger):
    pool = ["--stat", "--cached", "HEAD~1", "--name-only", "--staged", "-U3", "--word-diff"]
    return flags(pool).flatmap(lambda f: with_danger(["git", "diff"], f, GIT_DANGER, danger))


def _git_global(danger):
    # A dangerous global option goes before the subcommand.
    sub = st.sampled_from(["status", "log -1", "diff --stat", "show HEAD", "rev-parse HEAD"])
    pre = st.sampled_from(
        [
            "-c core.pager=sh",
            "-c alias.x=!sh",
            "--exec-path=/tmp",
            "-p",
            "--paginate",
            "--git-dir=/tmp/x",
            "--config-env=a.b=X",
        ]
        if danger
        else ["--no-pager", "-C sub", "-P", "--no-optional-locks"]
    )
    return st.builds(lambda p, s: f"git {p} {s}", pre, sub)


def _git_branch(danger):
    if danger:
        bad = [
            "-D x",
            "-d x",
            "-m a b",
            "-M a b",
            "-c a b",
            "-C a b",
            "--delete x",
            "--move a b",
            "--copy a b",
            "--set-upstream-to=origin/x",
            "-u origin/x",
            "-f x",
            "--edit-description",
            "--unset-upstream",
            "-t x origin/x",
            "--track x",
        ]
        safe = flags(["-a", "-r", "-v", "-vv"])
        return safe.flatmap(lambda f: with_danger(["git", "branch"], f, bad, True))
    pool = ["-a", "-r", "-v", "-vv", "--show-current", "--merged main", "--sort=-committerdate", "--no-color"]
    listing = st.sampled_from(["", "--list 'feat/*'", "-l x"])
    return st.builds(lambda f, extra: " ".join(["git", "branch", *f, extra]).strip(), flags(pool), listing)


def _git_misc(danger):
    if danger:
        return st.sampled_from(
            [
                "git push",
                "git commit -am x",
                "git reset HEAD",
                "git checkout .",
                "git stash",
                "git tag -d v1",
                "git tag v2",
                "git config a.b c",
                "git remote add o u",
                "git clean -xfd",
                "git stash drop",
                "git worktree add x",
                "git reflog expire --all",
                "git fetch",
                "git grep -O foo",
                "git config --unset a.b",
                "git add -A",
                "git merge x",
                "git pull --rebase",
            ]
        )
    return st.sampled_from(
        [
            "git rev-parse HEAD",
            "git rev-parse --abbrev-ref HEAD",
            "git ls-files",
            "git blame f.py",
            "git describe --tags",
            "git stash list",
            "git tag -l",
            "git remote -v",
            "git config --get a.b",
            "git reflog -5",
            "git shortlog -sn",
            "git worktree list",
            "git show-ref",
            "git grep -n x",
        ]
    )


def _ls(danger):
    pool = ["-la", "-l", "-a", "-h", "-R", "-1", "-t", "--color=never"]
    return st.builds(lambda f, p: " ".join(["ls", *f, *p]), flags(pool), st.lists(PATH, max_size=2))


def _viewers(danger):
    verb = st.sampled_from(
        [
            "cat",
            "head",
            "tail",
            "wc -l",
            "stat",
            "nl",
            "md5sum",
            "head -n 5",
            "tail -n 20",
            "file",
            "realpath",
        ]
    )
    return st.builds(lambda v, p: f"{v} {p}", verb, PATH)


def _system(danger):
    if danger:
        return st.sampled_from(
            [
                "env X=1 rm f",
                "env rm f",
                "env -i sh",
                "date -s now",
                "date 0101",
                "hostname x",
                "printf -v x y",
                "command rm f",
                "command ls",
            ]
        )
    return st.sampled_from(
        [
            "pwd",
            "whoami",
            "date",
            "date +%F",
            "uname -a",
            "df -h",
            "env",
            "id",
            "hostname",
            "uptime",
            "free -m",
            "ps aux",
            "ps -ef",
            "top -b -n 1",
            "nproc",
            "printenv HOME",
            "command -v git",
            "which python",
            "type ls",
            "whereis git",
            "lsof -i :8080",
            "echo done",
            "printf '%s\\n' x",
        ]
    )


def _find(danger):
    pool = [
        "-type f",
        "-type d",
        "-maxdepth 2",
        "-name '*.py'",
        "-newer setup.py",
        "-print",
        "-size +1k",
        '-iname "*.MD"',
    ]
    bad = [
        "-delete",
        "-exec rm {} \\;",
        "-execdir rm {} +",
        "-ok rm {} \\;",
        "-okdir rm {} \\;",
        "-fprint out",
        "-fprintf out %p",
        "-fls out",
        "-fprint0 out",
        "-exec sh -c x \\;",
    ]
    return st.tuples(PATH, flags(pool)).flatmap(lambda t: with_danger(["find", t[0]], t[1], bad, danger))


def _tree(danger):
    pool = ["-L 2", "-a", "-d", "-I node_modules", "--dirsfirst", "-f"]
    bad = ["-o out", "-R -H x", "-ao out", "--output=out"]
    return flags(pool).flatmap(lambda f: with_danger(["tree"], f, bad, danger))


def _grep(danger):
    verb = st.sampled_from(["grep -rn", "grep -c", "grep -i", "grep -E", "rg", "rg -n", "rg -l -i"])
    if danger:
        return st.builds(
            lambda w, p, b: f"rg {b} {w} {p}",
            NAME,
            PATH,
            st.sampled_from(["--pre=sh", "--pre sh", "--hostname-bin=sh"]),
        )
    return st.builds(lambda v, w, p: f"{v} {w} {p}", verb, NAME, PATH)


def _sort(danger):
    pool = ["-n", "-r", "-u", "-k2", "-t,", "-h", "-rn", "--check"]
    bad = ["-o out", "--output=out", "-o/tmp/x", "--compress-program=sh", "-ro out", "--output out"]
    return st.tuples(PATH, flags(pool)).flatmap(lambda t: with_danger(["sort"], [*t[1], t[0]], bad, danger))


def _uniq(danger):
    pool = ["-c", "-d", "-u", "-i"]
    if danger:
        return st.builds(lambda f, a, b: " ".join(["uniq", *f, a, b]), flags(pool), PATH, PATH)
    return st.builds(lambda f, p: " ".join(["uniq", *f, *p]), flags(pool), st.lists(PATH, max_size=1))


def _sed(danger):
    scripts = [
        "-n '1,5p'",
        "'s/foo/bar/g'",
        "-E 's/(a|b)+/x/'",
        "-n '/x/p'",
        "'1d'",
        "-n '$p'",
        "'y/abc/xyz/'",
        "-e 's/a/b/' -e 's/c/d/'",
        "-n '/a/,/b/{p;}'",
    ]
    if danger:
        bad_flag = st.sampled_from(
            ["-i", "-i.bak", "--in-place", "-Ei", "-ni", "--in-place=.orig", "-i -n", "-s -i", "--in"]
        )
        bad_script = st.sampled_from(
            [
                "'w out'",
                "'s/a/b/w out'",
                "'1e rm x'",
                "'s/a/b/e'",
                "-f script.sed",
                "'/x/W out'",
                "-n '/x/w out'",
                "'$!N;s/a/b/w out'",
            ]
        )
        return st.one_of(
            st.builds(lambda f, s, p: f"sed {f} {s} {p}", bad_flag, st.sampled_from(scripts), PATH),
            st.builds(lambda s, p: f"sed {s} {p}", bad_script, PATH),
        )
    return st.builds(lambda s, p: f"sed {s} {p}", st.sampled_from(scripts), PATH)


def _awk(danger):
    progs = [
        "'{print $1}'",
        "-F: '{print $1, $3}'",
        "'NR==1'",
        "'{sum += $2} END {print sum}'",
        "'/foo/ {print NR}'",
        "-v x=1 '{print x}'",
        '\'$1 == "a" || $2 == "b"\'',
    ]
    if danger:
        progs = [
            "'{system(\"rm x\")}'",
            "'{print | \"sh\"}'",
            "'{print > \"out\"}'",
            "'BEGIN{\"date\" | getline d}'",
            "-f prog.awk",
            "'@load \"x\"'",
            "-i inplace '{print}'",
            '\'{printf "%s", $0 >> "log"}\'',
            "'BEGIN{system(\"ls\")}'",
        ]
    return st.builds(
        lambda v, p, f: f"{v} {p} {f}", st.sampled_from(["awk", "gawk"]), st.sampled_from(progs), PATH
    )


def _containers(danger):
    if danger:
        return st.sampled_from(
            [
                "docker rm web",
                "docker run alpine",
                "docker exec web sh",
                "docker stop web",
                "docker compose up",
                "docker system prune",
                "docker compose down -v",
                "kubectl delete pod x",
                "kubectl apply -f x.yaml",
                "kubectl exec x -- sh",
                "kubectl edit pod x",
                "kubectl cluster-info dump",
                "docker image rm x",
            ]
        )
    return st.sampled_from(
        [
            "docker ps",
            "docker ps -a",
            "docker images",
            "docker logs web",
            "docker logs --tail 50 web",
            "docker inspect web",
            "docker compose ps",
            "kubectl get pods",
            "kubectl get pods -n ns",
            "kubectl describe pod x",
            "kubectl logs x",
            "kubectl top pods",
            "kubectl -n ns get svc",
        ]
    )


def _text(danger):
    return st.sampled_from(
        [
            "jq '.x' a.json",
            "diff a b",
            "cut -d, -f1 a.csv",
            "tr a-z A-Z",
            "tr -d '\\r'",
            "nl",
            "wc -l",
            "head -3",
            "tail -n 2",
            "sort",
            "uniq -c",
            "grep -v x",
            "cut -c1-5",
            "column -t",
        ]
    )


FAMILIES = {
    "git_status": _git_status,
    "git_log": _git_log,
    "git_diff": _git_diff,
    "git_global": _git_global,
    "git_branch": _git_branch,
    "git_misc": _git_misc,
    "ls": _ls,
    "viewers": _viewers,
    "system": _system,
    "find": _find,
    "tree": _tree,
    "grep": _grep,
    "sort": _sort,
    "uniq": _uniq,
    "sed": _sed,
    "awk": _awk,
    "containers": _containers,
    "text": _text,
}
# Families whose danger=True form is never generated (no dangerous option exists).
SAFE_ONLY = {"ls", "viewers", "text"}

SEPARATORS = [" && ", " || ", "; ", ";", " | ", " |& ", "\n"]
SAFE_REDIRECTIONS = [
    "",
    "",
    "",
    " 2>&1",
    " 2>/dev/null",
    " >/dev/null",
    " &> /dev/null",
    " >&2",
    " 1>/dev/null",
    " > /dev/null 2>&1",
    " 2>>/dev/null",
]


@st.composite
def compound(draw) -> tuple[list[str], list[str]]:
    """Read-only segments (each with an optional safe redirection) and the separators between them."""
    segs = draw(st.lists(segment(), min_size=1, max_size=4))
    segs = [s + draw(st.sampled_from(SAFE_REDIRECTIONS)) for s in segs]
    seps = [draw(st.sampled_from(SEPARATORS)) for _ in segs[1:]]
    return segs, seps


def join(segs: list[str], seps: list[str]) -> str:
    out = segs[0]
    for sep, seg in zip(seps, segs[1:]):
        out += sep + seg
    return out


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(compound())
def test_generated_read_only_commands_are_admitted(parts) -> None:
    cmd = join(*parts)
    assert is_ephemeral(cmd), cmd


APPENDED = [
    "; rm -rf x",
    " && rm -rf x",
    " || touch f",
    " | xargs rm",
    " | xargs -0 rm -f",
    " | tee f",
    " | tee -a f",
    " | sh",
    " | bash",
    " | python3",
    "\nrm x",
    " ; mv a b",
    " ; cp a b",
    " && mkdir d",
    " ; chmod +x f",
    " ; curl http://x",
    " ; wget http://x",
    " && npm install",
    " && pip install x",
    " && make",
    " ; git push --force",
    " && git reset --hard",
    " && git fetch --prune",
    " ; git checkout -- .",
    " ; git commit -m x",
    " ; git clean -fd",
    " ; git stash",
    " | sed -i s/a/b/ f",
    " ; find . -delete",
    " | sort -o f",
    " ; bash -c ls",
    " ; sh -c ls",
    " ; eval ls",
    " ; exec ls",
    " ; source f",
    " ; . f",
    " ; kill 1",
    " ; docker rm x",
    " ; kubectl delete pod x",
    " ; env X=1 rm f",
    " ; FOO=1 ls",
    " | awk '{system(\"rm x\")}'",
    " ; git branch -D x",
]
REDIRECTS = [
    " > f",
    " >> f",
    " 2> f",
    " &> f",
    " >| f",
    " < f",
    " <<< x",
    " 1>f",
    " >/dev/null2",
    " > /tmp/x",
    " 2>>f",
    " >& f",
    " 3>f",
    " >'/dev/null'",
    " <f",
    " <<EOF",
]
SUBSTITUTIONS = ["$(rm x)", "`rm x`", "<(rm x)", ">(rm x)", "$((1))", "$(", "`"]
PREFIXES = [
    "eval ",
    "exec ",
    "xargs ",
    "sudo ",
    "FOO=1 ",
    "env X=1 ",
    "source ",
    ". ",
    "nohup ",
    "time ",
    "command ",
    "bash -c ",
    "sh ",
    "timeout 5 ",
    "PAGER=sh ",
]


@st.composite
def mutated(draw) -> str:
    segs, seps = draw(compound())
    base = join(segs, seps)
    assert is_ephemeral(base), base  # the mutation, not the base, must cause the refusal
    kind = draw(st.sampled_from(["append", "redirect", "background", "substitute", "prefix", "swap", "gt"]))
    if kind == "append":
        return base + draw(st.sampled_from(APPENDED))
    if kind == "redirect":
        # After any segment: the redirection applies to that segment.
        k = draw(st.integers(0, len(segs) - 1))
        segs = list(segs)
        segs[k] += draw(st.sampled_from(REDIRECTS))
        return join(segs, seps)
    if kind == "background":
        if seps and draw(st.booleans()):
            seps = list(seps)
            seps[draw(st.integers(0, len(seps) - 1))] = draw(st.sampled_from([" & ", "&"]))
            return join(segs, seps)
        return base + draw(st.sampled_from([" &", "&", " & ls"]))
    if kind == "substitute":
        # Substitution markers are refused wherever they appear, quoted or not.
        at = draw(st.integers(0, len(base)))
        return base[:at] + draw(st.sampled_from(SUBSTITUTIONS)) + base[at:]
    if kind == "gt":
        # A file redirection spliced in anywhere: either it redirects, or it leaves a literal `>`.
        at = draw(st.integers(0, len(base)))
        return base[:at] + draw(st.sampled_from([" > f ", " >> f ", " < f ", ">f"])) + base[at:]
    if kind == "prefix":
        k = draw(st.integers(0, len(segs) - 1))
        segs = list(segs)
        segs[k] = draw(st.sampled_from(PREFIXES)) + segs[k]
        return join(segs, seps)
    # swap: one segment replaced by the dangerous form of some command family
    family = draw(st.sampled_from(sorted(set(FAMILIES) - SAFE_ONLY)))
    k = draw(st.integers(0, len(segs) - 1))
    segs = list(segs)
    segs[k] = draw(FAMILIES[family](True))
    return join(segs, seps)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_commands_are_never_admitted(cmd: str) -> None:
    assert not is_ephemeral(cmd), cmd


@FUZZ
@given(st.sampled_from(sorted(set(FAMILIES) - SAFE_ONLY)).flatmap(lambda f: FAMILIES[f](True)))
def test_dangerous_forms_of_each_family_are_refused(cmd: str) -> None:
    assert not is_ephemeral(cmd), cmd


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(list("ls -|&;<>()$`'\"\\\n{}*=#!/.0123") + ["git", "rm", "cat"])).map("".join)
)
def test_arbitrary_text_never_raises(cmd: str) -> None:
    assert isinstance(is_ephemeral(cmd), bool)


# ------------------------------------------------------------------ EphemeralPolicy


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
