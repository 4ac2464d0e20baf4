# Sourced by the build scripts: one way to say progress, a passed check and a failed one.
# Set REPORT_AS (the bracketed prefix) before sourcing. Checks go to stdout, so that a test runner
# can count "[x] ok: ..." and "[x] FAIL: ..." lines; progress goes to stderr.
log() { printf '[%s] %s\n' "$REPORT_AS" "$*" >&2; }
ok() { printf '[%s] ok: %s\n' "$REPORT_AS" "$*"; }
# fail WHAT [OUTPUT]: the check that failed, and the tail of what the failing command printed.
fail() {
    printf '[%s] FAIL: %s\n' "$REPORT_AS" "$1"
    if [ -n "${2:-}" ]; then printf '%s\n' "$2" | tail -30 | sed 's/^/    /'; fi
    exit 1
}
# flower's version, from the one place that holds it (hatchling reads the same line).
flower_version() {
    sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$1/engine/flower/__init__.py"
}
