# User commands. `make demo` and `make check` work as the first command on a
# fresh Debian 12 machine (as root they apt-get what is missing).
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_REL  ?= build-release
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
CTEST       = ctest --output-on-failure -j $(JOBS) --timeout 180

.PHONY: all build deps demo check check-unit check-python check-asan check-tsan check-format \
        check-gen check-release format gen bench bench-compare bench-mpi bench-noise install clean

all: build

deps:
	@scripts/deps.sh build

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo:
	@scripts/deps.sh demo
	@$(MAKE) --no-print-directory build
	@scripts/demo.sh $(BUILD)
	@examples/python/run.sh $(BUILD)

check:
	@scripts/deps.sh check
	@$(MAKE) --no-print-directory check-gen check-format check-release check-unit check-python \
	  check-asan check-tsan
	@echo "ushmem: all checks passed"

check-unit: build
	@cd $(BUILD) && $(CTEST)

check-python: build
	@python/check.sh $(BUILD)

check-asan:
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DUSHMEM_SANITIZE=address,undefined >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS)
	@cd $(BUILD_ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(CTEST) -E '^sh/|launcher|^device/'

# The installed products at -O3 (warnings are errors; inlining finds some -O2 does not),
# and with clang where it is installed (users build with either).
check-release:
	@cmake -S . -B $(BUILD_REL) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD_REL) -j $(JOBS) --target ushmem_products
	@if command -v clang >/dev/null; then \
	  CC=clang cmake -S . -B $(BUILD_REL)-clang -DCMAKE_BUILD_TYPE=Release >/dev/null && \
	  cmake --build $(BUILD_REL)-clang -j $(JOBS) --target ushmem_products; fi

check-tsan:
	@cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug -DUSHMEM_SANITIZE=thread >/dev/null
	@cmake --build $(BUILD_TSAN) -j $(JOBS)
	@cd $(BUILD_TSAN) && TSAN_OPTIONS=halt_on_error=1 setarch -R $(CTEST) -E '^sh/|launcher|^device/'

check-gen:
	@scripts/check_gen.sh

check-format:
	@scripts/format.sh --check

format:
	@scripts/format.sh

gen:
	@/usr/bin/python3 scripts/gen_api.py

bench: build
	@$(BUILD)/tools/ushrun -n 2 $(BUILD)/bench/shmem_bench
	@$(BUILD)/tools/ushrun -n 4 $(BUILD)/bench/shmem_coll_bench

bench-compare: build
	@scripts/deps.sh bench
	@USHCC=$(BUILD)/tools/ushcc USHRUN="$(BUILD)/tools/ushrun -n 2" scripts/bench_compare.sh
	@for n in 2 4; do \
	  BENCH_SRC=bench/shmem_coll_bench.c NPES=$$n USHCC=$(BUILD)/tools/ushcc \
	  USHRUN="$(BUILD)/tools/ushrun -n $$n" MAX_SIZE_MB=1 scripts/bench_compare.sh || exit 1; done

# waits under load: ping-pong and barrier with 0/1/2/4 busy processes and 4 PEs,
# ushmem and OSHMEM side by side (median, p99, max), and a stuck job's CPU cost
bench-noise: build
	@scripts/deps.sh bench
	@USHCC=$(BUILD)/tools/ushcc USHRUN_BIN=$(BUILD)/tools/ushrun scripts/bench_noise.sh

# mpi hook: bench/shmem_bench.c over shm, over the mpi transport and with OSHMEM
bench-mpi: build
	@BUILD=$(BUILD) scripts/bench_mpi.sh

install: build
	@cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN)
