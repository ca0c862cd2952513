# The two commands of the README: `make run` (the default benchmark) and `make test` (the suite).
# Both install missing Debian packages first (scripts/install-deps.sh does nothing when all are there).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CUDA ?= AUTO
# The Python package's extension: built by `make test` (which sets PYTHON_PACKAGE = ON) when
# scripts/python-env.sh has, or can make, the venv with torch; `make build` leaves it out.
PYTHON_PACKAGE ?= OFF

.PHONY: all deps configure build run test test-pip test-sanitize fuzz-ci clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@python_flags=-DFP4GEMM_PYTHON=OFF; \
	if [ "$(PYTHON_PACKAGE)" = ON ] && python=$$(bash scripts/python-env.sh $(abspath $(BUILD_DIR))/venv); then \
	  python_flags="-DFP4GEMM_PYTHON=ON -DFP4GEMM_PYTHON_EXECUTABLE=$$python"; fi; \
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DFP4GEMM_CUDA=$(CUDA) $$python_flags $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	./$(BUILD_DIR)/fp4gemm bench

test: PYTHON_PACKAGE = ON
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE pip_install

# `pip install --no-build-isolation .` into a scratch folder, then import and run (CI runs it after `test`).
test-pip: PYTHON_PACKAGE = ON
test-pip: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L pip_install

# The host suite again under AddressSanitizer + UndefinedBehaviorSanitizer (CI runs it after `test`).
# install_consumer is left out: it links the sanitized library into a plain consumer project.
test-sanitize: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFP4GEMM_CUDA=OFF -DFP4GEMM_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -L cpu -E install_consumer -j $(JOBS)

# A 30-second libFuzzer run of the safetensors header parser (scripts/fuzz.sh runs 10 minutes).
fuzz-ci: deps
	bash scripts/fuzz.sh --ci

clean:
	rm -rf $(BUILD_DIR) build-asan build-fuzz
