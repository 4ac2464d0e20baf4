# The two commands of the README. Each one installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test system-deps

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

# Operating-system tools the tests use (strace proves the CLI only talks to 127.0.0.1).
system-deps:
	@sh scripts/system-deps.sh

# The Python suite, then the extension inside a real VS Code (code-server + headless Chromium).
# Both always run, so a newcomer sees both results; any failure still makes `make test` fail.
test: $(VENV)/.test system-deps
	@python=0; extension=0; \
	$(BIN)/python -m pytest || python=$$?; \
	bash scripts/test-vscode.sh || extension=$$?; \
	echo "make test: Python suite $$( [ $$python = 0 ] && echo passed || echo "FAILED ($$python)" )," \
		"extension suite $$( [ $$extension = 0 ] && echo passed || echo "FAILED ($$extension)" )"; \
	[ $$python = 0 ] && [ $$extension = 0 ]
