# The two commands of the README: `make run` (the default benchmark) and `make test` (the suite).
# Both install missing Debian packages first (scripts/install-deps.sh does nothing when all are there).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CUDA ?= AUTO

.PHONY: all deps configure build run test test-sanitize fuzz-ci clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DFP4GEMM_CUDA=$(CUDA) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	./$(BUILD_DIR)/fp4gemm bench

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

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
