#!/bin/sh
# Install the operating-system packages the test suite needs, if they are missing.
#   strace      proves the CLI only talks to 127.0.0.1
#   git         worktrees, glances
#   neovim      the second editor the server is tested with (the `nvim` command)
#   bubblewrap  the Claude Code CLI's Bash sandbox on Linux (the `bwrap` command)
#   socat       the sandbox's network proxy bridge
#   faketime    clock jumps under a running flower (libfaketime), for the tests of time
#   postgresql  the tests start a throwaway server of their own for PostgresSessionStore
#               (flower/sim/postgres.py)
#   gawk, mawk  the confinement's adversarial corpus runs awk programs under both
#   bash 5.1    Debian 11's, beside the system's 5.2, into .cache/bash-5.1: the corpus's shell
#               conditions differ between them (5.1's `.*` matches `..`); fetched with apt from
#               Debian's archive through a private sources list, nothing installed system-wide
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bash51="$here/.cache/bash-5.1"
fetch_bash51() {
    [ -x "$bash51/bin/bash" ] && return 0
    work=$(mktemp -d)
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
    # the Debian mirror this machine's apt already uses (where its own bash comes from)
    mirror=$(apt-get -qq --print-uris download bash 2>/dev/null | sed -n "s|^'\(.*\)/pool/.*|\1|p" | head -1)
    if [ -z "$mirror" ]; then
        echo "system-deps: cannot tell which Debian mirror apt uses, so bash 5.1 is not fetched" >&2
        rm -rf "$work"
        return 1
    fi
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bullseye main" >"$work/sources.list"
    opts="-o Dir::Etc::SourceList=$work/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$work/lists -o Dir::Cache=$work/cache"
    # shellcheck disable=SC2086
    apt-get $opts -qq update
    version=$(apt-cache $opts madison bash | awk '$3 ~ /^5\.1/ {print $3; exit}')
    # shellcheck disable=SC2086
    (cd "$work" && apt-get $opts -qq download "bash=$version")
    mkdir -p "$bash51"
    dpkg-deb -x "$work"/bash_*.deb "$work/x"
    cp -r "$work/x/bin" "$bash51/"
    rm -rf "$work"
}
missing=""
# each entry: the command the tests run, then the Debian package that provides it
for pair in strace:strace git:git nvim:neovim bwrap:bubblewrap socat:socat faketime:faketime gawk:gawk mawk:mawk; do
    tool=${pair%%:*}
    package=${pair#*:}
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $package"
done
# Debian keeps the server binaries out of PATH, under /usr/lib/postgresql/<version>/bin.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
    missing="$missing postgresql"
fi
if [ -z "$missing" ]; then
    fetch_bash51
    exit 0
fi
echo "installing:$missing"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
case "$missing" in
*postgresql*)
    # the tests start servers of their own; Debian's package would also create (and, where
    # services run, start) a cluster of its own on port 5432: tell it not to
    $SUDO mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.d/flower-tests.conf >/dev/null
    ;;
esac
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq $missing
fetch_bash51
