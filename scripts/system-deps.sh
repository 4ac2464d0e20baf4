#!/bin/sh
# Install the operating-system packages the test suite needs, if they are missing.
#   strace      proves the CLI only talks to 127.0.0.1
#   git         worktrees, glances
#   neovim      the second editor the server is tested with (the `nvim` command)
#   bubblewrap  the Claude Code CLI's Bash sandbox on Linux (the `bwrap` command)
#   socat       the sandbox's network proxy bridge
set -eu
missing=""
# each entry: the command the tests run, then the Debian package that provides it
for pair in strace:strace git:git nvim:neovim bwrap:bubblewrap socat:socat; do
    tool=${pair%%:*}
    package=${pair#*:}
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $package"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq $missing
