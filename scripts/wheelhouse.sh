#!/usr/bin/env bash
# A folder holding every dependency of flower's wheel, downloaded once, so that the tests install
# the wheel into fresh environments without the network and without a download per test.
# (pip's own HTTP cache cannot be relied on for that: it stores nothing when the index's
# responses carry no cache headers, as some mirrors and proxies send them.)
#   .cache/wheelhouse/<hash of the wheel's requirements and the Python's tags>/
# Usage: bash scripts/wheelhouse.sh WHEEL   -> prints the folder; PYTHON picks the interpreter.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WHEEL="${1:?usage: bash scripts/wheelhouse.sh WHEEL}"

key="$("$PYTHON" - "$WHEEL" <<'EOF'
import hashlib, sys, sysconfig, zipfile
from email.parser import Parser
wheel = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
requires = sorted(Parser().parsestr(wheel.read(meta).decode()).get_all("Requires-Dist") or [])
tags = f"{sys.implementation.cache_tag} {sysconfig.get_platform()}"
print(hashlib.sha256("\n".join([tags, *requires]).encode()).hexdigest()[:16])
EOF
)"
DIR="$ROOT/.cache/wheelhouse/$key"
if [ ! -f "$DIR/.complete" ]; then
    printf '[wheelhouse] downloading the dependencies of %s into %s\n' "$(basename "$WHEEL")" "${DIR#"$ROOT"/}" >&2
    rm -rf "$DIR" && mkdir -p "$DIR"
    out="$("$PYTHON" -m pip download --quiet --disable-pip-version-check --dest "$DIR" "$WHEEL" 2>&1)" \
        || { printf '%s\n' "$out" | tail -20 >&2; rm -rf "$DIR"; exit 1; }
    # The wheel itself is whatever was built last: only its dependencies belong here.
    rm -f "$DIR/$(basename "$WHEEL")"
    touch "$DIR/.complete"
fi
# Wheelhouses of other requirements are dead weight (hundreds of megabytes each).
for old in "$ROOT"/.cache/wheelhouse/*/; do
    [ "${old%/}" = "$DIR" ] || rm -rf "${old%/}"
done
echo "$DIR"
