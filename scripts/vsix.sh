#!/usr/bin/env bash
# make vsix: the VS Code extension as dist/flower-<version>.vsix, with flower's wheel inside so
# that the extension can set flower up on first use. Needs only Python (for the wheel) and Node
# 20+ with the extension's lockfile (npm ci): none of the test toolchain.
#   1. the wheel and sdist (scripts/dist.sh --build-only; `make dist` also checks them)
#   2. the extension's version must equal flower's: a mismatch stops here
#   3. npm ci (scripts/vscode-deps.sh: only when the lockfile changed), typecheck, bundle, wheel into wheels/, vsce package
#   4. the .vsix holds the bundle, the wheel, the l10n bundles and nls files and the right
#      version, and nothing of the sources
# Usage: bash scripts/vsix.sh     (prints "[vsix] ok: ..." lines on stdout)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXT="$ROOT/vscode-extension"
PYTHON="${PYTHON:-python3}"

REPORT_AS=vsix
# shellcheck source=report.sh
. "$ROOT/scripts/report.sh"

command -v node >/dev/null || fail "node is not on PATH (the extension builds with Node 20 or newer)"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
    || fail "node $(node --version) is too old: the extension builds with Node 20 or newer"

bash "$ROOT/scripts/dist.sh" --build-only
VERSION="$(flower_version "$ROOT")"
WHEEL="$ROOT/dist/flower_agents-$VERSION-py3-none-any.whl"
EXT_VERSION="$(node -p 'require(process.argv[1]).version' "$EXT/package.json")"
[ "$EXT_VERSION" = "$VERSION" ] || fail "vscode-extension/package.json has version $EXT_VERSION but flower is $VERSION (engine/flower/__init__.py): make them equal"
ok "the extension's version equals flower's ($VERSION)"

cd "$EXT"
out="$(bash "$ROOT/scripts/vscode-deps.sh" 2>&1)" || fail "npm ci" "$out"

log "typecheck, bundle"
out="$(npx tsc -p . --noEmit 2>&1)" || fail "tsc --noEmit" "$out"
out="$(node build.mjs --production 2>&1)" || fail "node build.mjs --production" "$out"
rm -rf wheels && mkdir wheels && cp "$WHEEL" wheels/

VSIX="$ROOT/dist/flower-$VERSION.vsix"
log "vsce package"
out="$(npx vsce package --no-dependencies --allow-missing-repository --out "$VSIX" 2>&1)" \
    || fail "vsce package" "$out"

out="$("$PYTHON" - "$VSIX" "$VERSION" "$(basename "$WHEEL")" <<'EOF'
import json, sys, zipfile
vsix, version, wheel = sys.argv[1:]
names = set(zipfile.ZipFile(vsix).namelist())
# the bundle, the wheel, and the extension's words in English and Chinese (l10n/, package.nls*.json)
wanted = ("extension/dist/extension.js", f"extension/wheels/{wheel}", "extension/package.nls.json",
          "extension/package.nls.zh-cn.json", "extension/l10n/bundle.l10n.json", "extension/l10n/bundle.l10n.zh-cn.json")
problems = [f"missing {n}" for n in wanted if n not in names]
shipped = json.loads(zipfile.ZipFile(vsix).read("extension/package.json"))["version"]
if shipped != version:
    problems.append(f"package.json in the .vsix says {shipped}")
problems += [f"ships {n}" for n in names if n.startswith(("extension/src/", "extension/out/", "extension/node_modules/", "extension/test/"))]
sys.exit("; ".join(problems) if problems else None)
EOF
)" || fail "the .vsix holds the bundle, the wheel and the translations, and no sources" "$out"
ok "packaged ${VSIX#"$ROOT"/} ($(du -k "$VSIX" | cut -f1) KiB) with $(basename "$WHEEL") inside"
