#!/bin/sh
# Install the operating-system packages the test suite needs, if they are missing.
# strace proves the CLI talks only to 127.0.0.1; Neovim is the second editor the server is tested with.
set -eu
missing=""
# each entry: the command the tests run, then the Debian package that provides it
for pair in strace:strace git:git nvim:neovim; do
    tool="${pair%%:*}"
    command -v "$tool" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq $missing
