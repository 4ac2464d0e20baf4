#!/usr/bin/env bash
# The extension's gates (`npm run check`): Biome lints and checks the format, tsc type-checks.
# Runs on the toolchain's pinned Node, installed on first use like scripts/test-vscode.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
eval "$(bash "$ROOT/scripts/vscode-toolchain.sh" --env)"
bash "$ROOT/scripts/vscode-deps.sh"
cd "$ROOT/vscode-extension"
npm run --silent check
