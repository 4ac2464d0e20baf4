#!/usr/bin/env bash
# Build, package and test the VS Code extension in a real VS Code (code-server) driven by
# headless Chromium. Installs its toolchain on first use (cached under .cache/vscode-toolchain/).
# Needs flower installed in .venv (or FLOWER_PYTHON pointing at a Python that has it).
# Usage: bash scripts/test-vscode.sh [--only unit,host,ui] [--keep] [--verbose] [--screenshots]
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

bash "$ROOT/scripts/vscode-deps.sh"
cd "$EXT"

echo "[test-vscode] typecheck, bundle, package" >&2
npx tsc -p . --noEmit
node build.mjs --production
mkdir -p dist
npx vsce package --no-dependencies --allow-missing-repository --out dist/flower.vsix >dist/vsce.log 2>&1 \
    || { cat dist/vsce.log >&2; exit 1; }

exec node test/run.mjs "$@"
