# The front door. `make bench` runs the main job, `make test` runs every test; both install
# what they need first (scripts/setup.sh) and build what they use.
.PHONY: all setup build release test test-asan test-tsan format check-format bench yardstick install clean fuzz bugzoo

SOURCES := $(shell git ls-files '*.h' '*.cc' 2>/dev/null || find include src tests tools examples -name '*.h' -o -name '*.cc')
JOBS ?= $(shell nproc)

all: build

setup:
	@bash scripts/setup.sh

# The `dptree` tool and the PiBench library only: the tests build under `make test`.
build: setup
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS) --target dptree_cli dptree_pibench

release: build

check-format: setup
	@clang-format --dry-run -Werror $(SOURCES) && echo "format: ok"

format: setup
	clang-format -i $(SOURCES)

test-asan: setup
	cmake --preset test >/dev/null
	cmake --build --preset test -j $(JOBS)
	ctest --preset test

test-tsan: setup
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan

test: check-format test-tsan test-asan

# The libFuzzer pool fuzzers (docs/fuzzing.md), SECONDS per persistent index (default 60) or
# RUNS executions each (RUNS=1000000: the million-execution runs of docs/fuzzing.md). Each
# first replays the inputs that once failed (tests/fuzz/regressions/INDEX/), then starts from
# the seed pools it makes itself; failing inputs go to build/fuzz/crashes/INDEX/. The targets
# are the registry's (each persistent index's fuzz plan), as the fuzz binary lists them;
# INDEXES="a b" picks some.
FUZZ_SECONDS := $(or $(SECONDS),60)
FUZZ_LIMIT := $(if $(RUNS),-runs=$(RUNS),-max_total_time=$(FUZZ_SECONDS))
FUZZ_BIN := ./build/fuzz/tests/fuzz/fuzz_pool
fuzz: setup
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)
	@for i in $(or $(INDEXES),$$(DPTREE_FUZZ_LIST=1 $(FUZZ_BIN))); do \
	  mkdir -p build/fuzz/corpus/$$i build/fuzz/crashes/$$i; \
	  if [ -d tests/fuzz/regressions/$$i ]; then \
	    DPTREE_FUZZ_INDEX=$$i DPTREE_FUZZ_SEED_BYTES=1048576 $(FUZZ_BIN) tests/fuzz/regressions/$$i/* \
	    >build/fuzz/regress-$$i.log 2>&1 \
	    || { tail -20 build/fuzz/regress-$$i.log; exit 1; }; fi; \
	  echo "fuzz: $$i ($(FUZZ_LIMIT))"; \
	  DPTREE_FUZZ_INDEX=$$i DPTREE_FUZZ_SEED_DIR=build/fuzz/corpus/$$i $(FUZZ_BIN) \
	    build/fuzz/corpus/$$i -timeout=10 -rss_limit_mb=4096 \
	    $(FUZZ_LIMIT) -print_final_stats=1 \
	    -artifact_prefix=build/fuzz/crashes/$$i/ 2>&1 | grep -E 'stat::|ERROR|SUMMARY|Done' \
	    || true; \
	  if ls build/fuzz/crashes/$$i/* >/dev/null 2>&1; then \
	    echo "fuzz: $$i: inputs that failed are in build/fuzz/crashes/$$i/"; exit 1; fi; \
	done

# Every registered index on three of the DPTree paper's mixes (about a minute on 2 cores);
# the table goes to stdout, results to build/bench.json, figures to build/plots/ (docs/bench.md).
bench: build
	./build/release/tools/dptree bench --workload insert_only,read_only,mixed --records 500000 \
		--seconds 1 --recovery --json build/bench.json
	@if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then \
		/usr/bin/python3 scripts/plot.py build/bench.json --out build/plots; fi

# DPTree, the concurrent DPTree, FAST_FAIR and LB+-Tree as ratios to absl::btree_map at 10M keys,
# 1 and 2 threads, beside the project's targets, 5 rounds: docs/results/yardstick.md (about 20
# minutes). Each run appends a line to docs/results/yardstick_history.jsonl, and the page's
# verdict is the median over every run at the same code.
yardstick: build
	/usr/bin/python3 scripts/reproduce --keys $(or $(KEYS),10M) --seconds 4 --rounds 5 --only yardstick

# The bug zoo (docs/pm-layer.md): each patch of tests/bugzoo/ puts back one crash-consistency
# bug; its test must catch it. In a scratch clone (BUGZOO_WORK, default /tmp/dptree-bugzoo).
bugzoo: setup
	/usr/bin/python3 scripts/bugzoo --work $(or $(BUGZOO_WORK),/tmp/dptree-bugzoo)

install: build
	cmake --install build/release --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf build
