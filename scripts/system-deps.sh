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
set -eu
missing=""
# each entry: the command the tests run, then the Debian package that provides it
for pair in strace:strace git:git nvim:neovim bwrap:bubblewrap socat:socat faketime:faketime; do
    tool=${pair%%:*}
    package=${pair#*:}
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $package"
done
# Debian keeps the server binaries out of PATH, under /usr/lib/postgresql/<version>/bin.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
    missing="$missing postgresql"
fi
[ -z "$missing" ] && exit 0
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
