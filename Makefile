# Thin wrapper around CMake. `make test` and `make demo` work on a fresh Debian machine: `deps`
# installs what is missing (as root) or prints the exact apt-get line to run.
BUILD     ?= build
URPE_CUDA ?= AUTO
URPE_MPI  ?= AUTO
BUILD_TYPE ?= Release
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
# OpenMPI: data-parallel training (`mpirun -np K urpe train`) and its test suite, test_dist.
DEB_PACKAGES := cmake g++ make libopenblas-dev libopenblas-openmp-dev zlib1g-dev libopenmpi-dev openmpi-bin
# nvcc is often installed outside PATH; hand CMake its usual location when present.
NVCC := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
# ccache, when installed, caches compiled objects across build directories and checkouts.
CCACHE    := $(shell command -v ccache 2>/dev/null)
# A GPU is visible when nvidia-smi lists one (no nvidia-smi: none).
GPU_VISIBLE := $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU')
CMAKE_FLAGS := -DURPE_CUDA=$(URPE_CUDA) -DURPE_MPI=$(URPE_MPI) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(if $(NVCC),-DCMAKE_CUDA_COMPILER=$(NVCC)) \
  $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_CUDA_COMPILER_LAUNCHER=$(CCACHE))
# Any other CMake options, passed last so they win (README "Build options"), e.g.
#   make build CMAKE_ARGS="-DURPE_NATIVE=OFF -DURPE_CUDA_SIM=OFF"
# CMake keeps them in the build directory's cache: later runs without them keep those values.
CMAKE_ARGS ?=

.PHONY: deps configure build test sanitize demo bench clean fuzz walkthrough gpu docs docs-check

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "make deps: installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "make deps: missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

configure: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) $(CMAKE_ARGS) >/dev/null

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer, Debug, every report fatal,
# in a build directory of its own. CUDA is off (the driver and ASan's shadow memory do not mix, and
# nvcc's device code is not instrumented), and so is MPI (LeakSanitizer reports OpenMPI's own
# allocations at exit; test_dist reports itself skipped there); the CUDA simulator's suites still run every kernel's
# source, compiled by the host compiler and so instrumented.
# SANITIZE_FLAGS passes more CMake options (CI: -DURPE_CUDA_SIM_SUITES=kernels, only the
# simulator's own tests and parity suite; see .ci/run and docs/cuda.md).
SANITIZE_BUILD ?= build-sanitize
SANITIZE_FLAGS ?=
sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -DURPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DURPE_CUDA=OFF -DURPE_MPI=OFF $(SANITIZE_FLAGS) \
	  $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE)) >/dev/null
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:allocator_may_return_null=1 \
	  UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# The demo needs only the binary, not the test suites (nor their simulator copy), and it runs on
# the CPU: on a fresh checkout with no visible GPU (nvidia-smi lists none) it configures the build
# without CUDA, which saves the minutes nvcc would spend on kernels nothing runs. A build
# directory that is already configured is used as it is; a later `make build` or `make test`
# turns CUDA on (URPE_CUDA=AUTO) for the CUDA suites. `make demo URPE_CUDA=ON` asks for CUDA.
DEMO_CUDA := $(if $(filter command line environment,$(origin URPE_CUDA)),$(URPE_CUDA),$(if $(filter-out 0,$(GPU_VISIBLE)),AUTO,OFF))
demo: deps
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ -n "$(filter command line environment,$(origin URPE_CUDA))" ]; then \
	  if [ "$(DEMO_CUDA)" = OFF ]; then echo "make demo: no GPU visible, so a CPU-only build (make build adds CUDA for the tests)"; fi; \
	  cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DURPE_CUDA=$(DEMO_CUDA) $(CMAKE_ARGS) >/dev/null; \
	fi
	cmake --build $(BUILD) -j $(JOBS) --target urpe
	./$(BUILD)/urpe demo --overwrite

# docs/walkthrough.md step by step, into runs/walkthrough (docs/testing.md#the-walkthrough):
# WALKTHROUGH=--quick for the short form CI runs, --write to put the outputs into the page.
WALKTHROUGH ?=
walkthrough: deps
	@if [ ! -f $(BUILD)/CMakeCache.txt ]; then cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DURPE_CUDA=$(DEMO_CUDA) $(CMAKE_ARGS) >/dev/null; fi
	cmake --build $(BUILD) -j $(JOBS) --target urpe test_urpe_attention test_cuda_sim_parity
	docs/run_walkthrough.sh --build $(BUILD) $(WALKTHROUGH)

# The GPU build, for profiling and benchmarks on an H100/H200 (docs/profiling.md): CUDA on, the
# CUDA simulator off (it would compile every library a second time for nothing a GPU needs), in a
# directory of its own, the one bench/gpu_session.sh uses. No `deps`: GPU machines often have no
# package registry, and CMake says what it found (OpenBLAS, MPI and NCCL are optional).
GPU_BUILD ?= build-cuda
gpu:
	@cmake -S . -B $(GPU_BUILD) $(CMAKE_FLAGS) -DURPE_CUDA=ON -DURPE_CUDA_SIM=OFF $(CMAKE_ARGS) >/dev/null
	cmake --build $(GPU_BUILD) -j $(JOBS)

# The manual's generated parts (docs/testing.md#documentation-that-cannot-rot): `make docs` rewrites
# the command reference in docs/cli.md from app/cli/command_table.cpp and runs the walkthrough in
# full, putting its outputs into docs/walkthrough.md; `make docs-check` runs the checks CI runs
# (every cross-reference resolves, docs/cli.md matches the command table, the quick walkthrough).
DOCS_TESTS := test_doc_links test_cli_reference
docs: configure
	cmake --build $(BUILD) -j $(JOBS) --target $(DOCS_TESTS) urpe test_urpe_attention test_cuda_sim_parity
	URPE_WRITE_DOCS=1 ./$(BUILD)/test_cli_reference
	docs/run_walkthrough.sh --build $(BUILD) --write

docs-check: configure
	cmake --build $(BUILD) -j $(JOBS) --target $(DOCS_TESTS) urpe test_urpe_attention test_cuda_sim_parity
	cd $(BUILD) && ctest --output-on-failure -R '^(test_doc_links|test_cli_reference|walkthrough_quick)$$'

# The bench needs only the binary too.
bench: configure
	cmake --build $(BUILD) -j $(JOBS) --target urpe
	./$(BUILD)/urpe bench kernels

clean:
	rm -rf $(BUILD)

# Fuzzing (docs/testing.md#fuzzing, tests/fuzz): libFuzzer with AddressSanitizer and UBSan needs clang,
# so the fuzzers get their own build directory. Each target runs SECONDS seconds on its seeds;
# new inputs go to $(FUZZ_BUILD)/corpus/<target>, crashes to tests/fuzz/crashes/<target>/.
#   make fuzz SECONDS=300 FUZZ_TARGETS="smiles json" FUZZ_FLAGS="-jobs=2"
FUZZ_BUILD   ?= build-fuzz
SECONDS      ?= 60
FUZZ_TARGETS ?= smiles csv text_file safetensors config json corpus_sources
FUZZ_CXX     ?= $(shell command -v clang++ 2>/dev/null || command -v clang++-14 2>/dev/null)
FUZZ_FLAGS   ?=

fuzz:
	@test -n "$(FUZZ_CXX)" || { echo "make fuzz: needs clang++ with libFuzzer (apt-get install clang)"; exit 1; }
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=$(FUZZ_CXX) -DURPE_FUZZ=ON -DURPE_CUDA=OFF \
	  -DURPE_CUDA_SIM=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE)) >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	@status=0; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t tests/fuzz/crashes/$$t; \
	  dict=""; if [ -f tests/fuzz/$$t.dict ]; then dict="-dict=tests/fuzz/$$t.dict"; fi; \
	  echo "== fuzz_$$t: $(SECONDS) s"; \
	  ./$(FUZZ_BUILD)/fuzz_$$t $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t tests/fuzz/crashes/$$t \
	    -max_total_time=$(SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=tests/fuzz/crashes/$$t/ $$dict $(FUZZ_FLAGS) || status=1; \
	done; \
	if [ $$status -ne 0 ]; then echo "make fuzz: a fuzzer failed; its input is under tests/fuzz/crashes/"; fi; \
	exit $$status
