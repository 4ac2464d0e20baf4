# The two commands of the README. Each one installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test check lint system-deps messages generate generate-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@ $(VENV)/.runtime

# The offline demo: the real Claude Code CLI with the model scripted by flower.sim.
demo: $(VENV)/.runtime
	$(BIN)/flower demo

# Every generated file from its one source (scripts/generate.py lists them): the extension's
# protocol.ts, docs/protocol.md and the Neovim plugin's protocol.lua from server/flower_lsp/protocol.py,
# the message catalogue from the marked texts (docs/i18n.md). `generate-check`, a gate of `make lint`,
# regenerates them into a temporary folder and fails while a committed one differs.
generate: $(VENV)/.test
	$(BIN)/python scripts/generate.py

generate-check: $(VENV)/.test
	$(BIN)/python scripts/generate.py --check

# The message catalogue alone (docs/i18n.md): extract every marked text from the code, merge it into
# the English .po (new texts arrive untranslated, vanished ones are dropped), compile the .mo that
# ships in the wheel. Translate the new entries in the .po, then run it again.
messages: $(VENV)/.test
	$(BIN)/python scripts/generate.py --only catalogue

# Operating-system tools the tests use (strace proves the CLI only talks to 127.0.0.1;
# bubblewrap and socat are the CLI's Bash sandbox).
system-deps:
	@sh scripts/system-deps.sh

# The gates: ruff (lint, then format), mypy (strict on the packages), the generated files fresh,
# the extension's Biome + tsc. Every gate runs and reports; any finding fails the target, and so
# `make test` and CI.
LINTS := "$(BIN)/ruff check ." "$(BIN)/ruff format --check ." "$(BIN)/mypy" \
	"$(BIN)/python scripts/generate.py --check" "bash scripts/lint-vscode.sh"

lint: $(VENV)/.test
	@failed=""; for gate in $(LINTS); do \
		echo "== $$gate"; sh -c "$$gate" || failed="$$failed\n  $$gate"; \
	done; \
	if [ -n "$$failed" ]; then printf "make lint: failed:$$failed\n" >&2; exit 1; fi

# The Python suite runs in parallel, one worker per core (pytest-xdist); a test file never splits
# across workers, so its module-scoped servers and fixtures stay as written.
PARALLEL := -n auto --dist loadfile
# The unit tests spend half their time waiting on the processes they start (confined commands,
# PostgreSQL, a killed writer), so the fast tier runs two workers per core.
UNIT_PARALLEL := -n $$(( $$(nproc) * 2 )) --dist loadfile

# A suite's wall time and verdict, for the summary lines of `make test` and `make check`.
SUMMARY := took() { s=$$(( $$(date +%s) - $$1 )); printf '%dm %02ds' $$((s / 60)) $$((s % 60)); }; \
	verdict() { [ "$$1" = 0 ] && echo passed || echo "FAILED ($$1)"; }

# The gates, the Python suite, then the extension inside a real VS Code (code-server + headless
# Chromium). All three always run, so one run shows every result; any failure fails `make test`.
# The last line gives each one's verdict and wall time.
test: $(VENV)/.test system-deps
	@$(SUMMARY); lint=0; python=0; extension=0; \
	t=$$(date +%s); $(MAKE) --no-print-directory lint || lint=$$?; lint_t=$$(took $$t); \
	t=$$(date +%s); $(BIN)/python -m pytest $(PARALLEL) || python=$$?; python_t=$$(took $$t); \
	t=$$(date +%s); bash scripts/test-vscode.sh || extension=$$?; extension_t=$$(took $$t); \
	echo "make test: gates $$(verdict $$lint) ($$lint_t), Python suite $$(verdict $$python) ($$python_t)," \
		"extension suite $$(verdict $$extension) ($$extension_t)"; \
	[ $$lint = 0 ] && [ $$python = 0 ] && [ $$extension = 0 ]

# The fast tier, for the edit-test loop: the gates and the unit tests (in parallel); minutes.
# `make test` (and so CI) runs these and everything else.
check: $(VENV)/.test system-deps
	@$(SUMMARY); lint=0; unit=0; \
	t=$$(date +%s); $(MAKE) --no-print-directory lint || lint=$$?; lint_t=$$(took $$t); \
	t=$$(date +%s); $(BIN)/python -m pytest tests/unit $(UNIT_PARALLEL) -q || unit=$$?; unit_t=$$(took $$t); \
	echo "make check: gates $$(verdict $$lint) ($$lint_t), unit tests $$(verdict $$unit) ($$unit_t)"; \
	[ $$lint = 0 ] && [ $$unit = 0 ]

# Release artifacts, into dist/. Neither needs the test toolchain.
.PHONY: dist vsix

# The wheel and the sdist, checked: twine, a fresh venv running flower --help, flower-lsp and flower demo.
dist:
	PYTHON=$(PYTHON) bash scripts/dist.sh

# The VS Code extension with flower's wheel inside (Node 20+ and the extension's lockfile).
vsix:
	PYTHON=$(PYTHON) bash scripts/vsix.sh
