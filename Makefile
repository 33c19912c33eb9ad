# hal: the two commands of the README's Quick start, and a few more.
#   make demo        set up, build what the main job needs (library, hal, plugins), run it
#   make test        set up, build, run the whole test suite through CTest
#   make test-asan   a representative subset under AddressSanitizer + UndefinedBehaviorSanitizer
#   make test-tsan   the concurrent parts under ThreadSanitizer
#   make bench       build and run the benchmarks
#   make install     install the release build (PREFIX=/usr/local)
#   make format      clang-format every source file
#   make fuzz        build the libFuzzer targets with Clang and run each FUZZ_SECONDS

PREFIX ?= /usr/local
FUZZ_SECONDS ?= 30
JOBS ?= $(shell nproc)

PRESETS := dev release asan tsan
.PHONY: demo test test-asan test-tsan bench install format fuzz setup dev $(addprefix build-,$(PRESETS))

setup:
	@scripts/install-deps.sh

# Phony targets skip pattern rules, so each preset gets its own rule.
define build_preset
build-$(1): setup
	@cmake --preset $(1) >/dev/null
	@cmake --build --preset $(1) -j $(JOBS)
endef
$(foreach preset,$(PRESETS),$(eval $(call build_preset,$(preset))))

# The demo needs only the library, the hal command and the plugins: a first run does not wait
# for the test tree.
DEMO_TARGETS := hal_cli hal_plugin_sim
demo: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target $(DEMO_TARGETS)
	build/release/bin/hal demo

test: build-release
	ctest --preset release -j $(JOBS)

# The sanitizer presets build and run a representative subset (tests/CMakeLists.txt says which);
# `make build-asan` still builds everything.
test-asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS) --target hal_asan_subset
	ctest --preset asan -j $(JOBS)

test-tsan: setup
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS) --target hal_tsan_subset
	ctest --preset tsan -j $(JOBS)

dev: build-dev

bench: build-release
	build/release/bin/hal_bench_stream
	build/release/bin/hal_bench_thread_pool
	build/release/bin/hal_bench_memory
	# opencl:0 is PoCL here; the dispatch and copy suites say so and stop where there is none.
	-build/release/bin/hal_bench_dispatch --device=opencl:0
	-build/release/bin/hal_bench_copy --device=opencl:0
	build/release/bin/hal_bench_ops --device=cpu:0
	-build/release/bin/hal_bench_ops --device=opencl:0
	-build/release/bin/hal_bench_models
	build/release/bin/hal_bench_select
	build/release/bin/hal_bench_pipeline
	# A tiny op from Python against torch.add (needs python3-torch; says so without it).
	-PYTHONPATH=build/release/python /usr/bin/python3 bench/python_op_bench.py
	-PYTHONPATH=build/release/python /usr/bin/python3 bench/numpy_peer.py
	build/release/bin/hal_bench_mesh
	# Four ranks on loopback (as root in CI); absent where hal was built without MPI.
	-OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 4 --oversubscribe \
	  build/release/bin/hal_bench_collectives

# libFuzzer targets (fuzz/), each run for FUZZ_SECONDS from a copy of its seed corpus
# (fuzz/corpus/NAME), JOBS at a time (scripts/run-fuzzers.sh says how).
FUZZERS := selector plugin_table tensor_view kernel_signature cli_args model_bytes
# fuzz/ is a project of its own: Clang compiles the code under fuzzing and links the release
# build's libraries (fuzz/CMakeLists.txt says why).
FUZZ_LIBRARIES := hal hal_model hal_train hal_dist hal_evidence hal_serve hal_cts
fuzz: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target $(FUZZ_LIBRARIES)
	@cmake -S fuzz -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
	  -DHAL_BUILD_DIR=$(CURDIR)/build/release >/dev/null
	@cmake --build build/fuzz --target $(FUZZERS:%=%_fuzz) -j $(JOBS)
	@scripts/run-fuzzers.sh $(FUZZ_SECONDS) $(JOBS) $(FUZZERS)

install: build-release
	cmake --install build/release --prefix $(PREFIX)

format:
	@git ls-files '*.cpp' '*.hpp' '*.h' | xargs clang-format -i
	@git ls-files '*.kernel' | xargs clang-format -i --assume-filename=kernel.c
