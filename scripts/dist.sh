#!/usr/bin/env bash
# make dist: build the wheel and the sdist of flower into dist/ and check them the way a user
# gets them.
#   build  `python -m build`: the sdist first, then the wheel built from that sdist, so a file the
#          sdist forgot fails here rather than for a user.
#   check  `twine check --strict`; the wheel carries both packages and the plugin; a fresh venv
#          installs the wheel and runs `flower --help`, `flower-lsp` (answers initialize over stdio)
#          and `flower demo` (offline: flower.sim is the model), away from this checkout.
# Usage: bash scripts/dist.sh [--build-only | --check-only]
# Each check prints "[dist] ok: ..." or "[dist] FAIL: ..." on stdout (the test runner counts them).
# build and twine live in .cache/dist-tools/<versions>/. The fresh venv gets the wheel's
# dependencies from pip's usual sources, or only from $FLOWER_WHEELHOUSE when it is set.
set -euo pipefail

BUILD_VERSION=1.6.1
TWINE_VERSION=7.0.0

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
DIST="$ROOT/dist"
TOOLS="$ROOT/.cache/dist-tools/build-${BUILD_VERSION}_twine-${TWINE_VERSION}"

mode=all
case "${1:-}" in
    "") ;;
    --build-only) mode=build ;;
    --check-only) mode=check ;;
    *) echo "usage: bash scripts/dist.sh [--build-only | --check-only]" >&2; exit 2 ;;
esac

REPORT_AS=dist
# shellcheck source=report.sh
. "$ROOT/scripts/report.sh"

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
    || fail "$PYTHON is not Python 3.11 or newer (flower needs 3.11+; set PYTHON=...)"
VERSION="$(flower_version "$ROOT")"
[ -n "$VERSION" ] || fail "no __version__ = \"...\" line in engine/flower/__init__.py"
WHEEL="$DIST/flower_agents-$VERSION-py3-none-any.whl"
SDIST="$DIST/flower_agents-$VERSION.tar.gz"

tools() {
    if [ ! -f "$TOOLS/.installed" ]; then
        log "installing build $BUILD_VERSION and twine $TWINE_VERSION into ${TOOLS#"$ROOT"/}"
        rm -rf "$TOOLS"
        local out
        out="$("$PYTHON" -m venv "$TOOLS" 2>&1 && "$TOOLS/bin/python" -m pip install --quiet \
            --disable-pip-version-check "build==$BUILD_VERSION" "twine==$TWINE_VERSION" 2>&1)" \
            || { rm -rf "$TOOLS"; fail "installing build and twine" "$out"; }
        touch "$TOOLS/.installed"
    fi
}

build() {
    tools
    mkdir -p "$DIST"
    rm -f "$DIST"/flower_agents-*
    log "building the sdist and the wheel of flower $VERSION"
    local out
    out="$("$TOOLS/bin/python" -m build --outdir "$DIST" "$ROOT" 2>&1)" || fail "python -m build" "$out"
    [ -f "$WHEEL" ] && [ -f "$SDIST" ] \
        || fail "python -m build made no $(basename "$WHEEL") and $(basename "$SDIST")" "$(ls "$DIST")"
    ok "built $(basename "$SDIST") and, from it, $(basename "$WHEEL")"
}

# Every name in the archive must be there (a wheel is a zip, an sdist a tar.gz).
has_files() {
    "$PYTHON" - "$@" <<'EOF'
import sys, tarfile, zipfile
archive, wanted = sys.argv[1], sys.argv[2:]
if archive.endswith(".whl"):
    names = zipfile.ZipFile(archive).namelist()
else:
    names = [n.split("/", 1)[1] for n in tarfile.open(archive).getnames() if "/" in n]
missing = [w for w in wanted if not any(n == w or n.startswith(w.rstrip("/") + "/") for n in names)]
if missing:
    sys.exit("missing: " + ", ".join(missing))
EOF
}

check() {
    [ -f "$WHEEL" ] && [ -f "$SDIST" ] || fail "dist/ has no wheel and sdist of $VERSION (run make dist)"
    tools
    local out
    out="$("$TOOLS/bin/twine" check --strict "$WHEEL" "$SDIST" 2>&1)" || fail "twine check --strict" "$out"
    ok "twine check --strict passes on the wheel and the sdist"

    out="$(has_files "$WHEEL" flower/__init__.py flower/cli/ flower/sim/ flower_lsp/__main__.py \
        flower/_plugin/ flower/locale/en/LC_MESSAGES/flower.mo 2>&1)" \
        || fail "the wheel holds flower, flower_lsp, the plugin and the English catalogue" "$out"
    out="$(has_files "$SDIST" pyproject.toml README.md LICENSE engine/flower/ server/flower_lsp/ plugin/ 2>&1)" \
        || fail "the sdist holds the sources, the plugin, README and LICENSE" "$out"
    ok "the wheel holds flower, flower_lsp, the plugin (flower/_plugin) and the English catalogue; the sdist the sources"

    tmp="$(mktemp -d "${TMPDIR:-/tmp}/flower-dist-check.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    local venv="$tmp/venv" pip_from=()
    if [ -n "${FLOWER_WHEELHOUSE:-}" ]; then pip_from=(--no-index --find-links "$FLOWER_WHEELHOUSE"); fi
    log "installing the wheel into a fresh venv"
    out="$("$PYTHON" -m venv "$venv" 2>&1 && "$venv/bin/python" -m pip install --quiet \
        --disable-pip-version-check "${pip_from[@]}" "$WHEEL" 2>&1)" || fail "pip install of the wheel into a fresh venv" "$out"
    ok "the wheel installs into a fresh venv with its dependencies"

    # Away from the checkout, so that nothing can come from the source tree.
    mkdir -p "$tmp/work" && cd "$tmp/work"
    out="$("$venv/bin/python" -P -c 'import flower, flower_lsp; print(flower.__file__); print(flower_lsp.__file__)' 2>&1)" \
        || fail "the fresh venv imports flower and flower_lsp" "$out"
    case "$out" in
        "$venv"/*"$venv"/*) ;;
        *) fail "flower and flower_lsp come from the fresh venv" "$out" ;;
    esac
    out="$("$venv/bin/flower" --version 2>&1)" || fail "flower --version" "$out"
    [ "$out" = "flower $VERSION" ] || fail "flower --version says flower $VERSION" "$out"
    out="$("$venv/bin/flower" --help 2>&1)" || fail "flower --help" "$out"
    grep -q 'demo' <<<"$out" || fail "flower --help lists its commands" "$out"
    out="$(FLOWER_LANG=en "$venv/bin/flower" --help 2>&1)" || fail "FLOWER_LANG=en flower --help" "$out"
    grep -q 'run the whole flow offline' <<<"$out" || fail "flower --help speaks English from the wheel's catalogue" "$out"
    ok "flower --help (in Chinese and in English) and flower --version ($VERSION) run from the fresh venv"

    out="$("$venv/bin/python" "$ROOT/scripts/lsp_initialize.py" "$venv/bin/flower-lsp" 2>&1)" \
        || fail "flower-lsp starts and answers initialize" "$out"
    grep -q '"flower.continue"' <<<"$out" || fail "flower-lsp lists its commands in initialize" "$out"
    ok "flower-lsp starts and answers initialize: $out"

    log "flower demo from the fresh venv"
    out="$("$venv/bin/flower" demo 2>&1)" || fail "flower demo from the fresh venv" "$out"
    ok "flower demo completes from the fresh venv (offline, flower.sim as the model)"
}

case "$mode" in
    build) build ;;
    check) check ;;
    all) build && check ;;
esac
