#!/usr/bin/env bash
# The extension's node_modules, following package-lock.json: `npm ci` only when the lockfile
# changed since the last install. Expects the toolchain's Node on PATH (vscode-toolchain.sh --env).
set -euo pipefail
cd "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/vscode-extension"
stamp=node_modules/.flower-lock-hash
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "[vscode-deps] npm ci" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
    echo "$want" > "$stamp"
fi
