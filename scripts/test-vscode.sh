#!/usr/bin/env bash
# Build the release artifacts (make vsix, then make dist's checks as the first tests) and test
# the VS Code extension in a real VS Code (code-server) driven by headless Chromium. Installs its
# toolchain on first use (cached under .cache/vscode-toolchain/) and the wheel's dependencies
# once (.cache/wheelhouse/). Needs flower installed in .venv (or FLOWER_PYTHON pointing at a
# Python that has it).
# Usage: bash scripts/test-vscode.sh [--only dist,unit,host,setup,untrusted,l10n,ui] [--keep] [--verbose] [--screenshots]
# (--screenshots: the UI walk replaces docs/vscode-*.png; without it no tracked file is written)
# The last line printed is "N passed, M failed"; the exit code is non-zero on any failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXT="$ROOT/vscode-extension"
export FLOWER_PYTHON="${FLOWER_PYTHON:-$ROOT/.venv/bin/python}"

if ! "$FLOWER_PYTHON" -c 'import flower, flower_lsp' 2>/dev/null; then
    echo "$FLOWER_PYTHON cannot import flower: install it first (make test does, or: pip install -e '.[test]')" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

eval "$(bash "$ROOT/scripts/vscode-toolchain.sh" --env)"

# make vsix (which builds the wheel and sdist too): the tests install that very .vsix and wheel.
bash "$ROOT/scripts/vsix.sh" || { echo "0 passed, 1 failed"; exit 1; }
# The wheel's dependencies, downloaded once, for the tests that install it into fresh venvs.
WHEEL="$(ls "$ROOT"/dist/flower_agents-*-py3-none-any.whl)"
FLOWER_WHEELHOUSE="$(PYTHON="$FLOWER_PYTHON" bash "$ROOT/scripts/wheelhouse.sh" "$WHEEL")" \
    || { echo "0 passed, 1 failed"; exit 1; }
export FLOWER_WHEELHOUSE

cd "$EXT"
exec node test/run.mjs "$@"
