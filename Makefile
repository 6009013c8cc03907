# The front door. `make bench` runs the main job, `make test` runs every test; both install
# what they need first (scripts/setup.sh) and build what they use.
.PHONY: all setup build release test test-asan test-tsan format check-format bench yardstick install clean

SOURCES := $(shell git ls-files '*.h' '*.cc' 2>/dev/null || find include src tests tools examples -name '*.h' -o -name '*.cc')
JOBS ?= $(shell nproc)

all: build

setup:
	@bash scripts/setup.sh

build: setup
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

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

# Every registered index on three of the DPTree paper's mixes (about a minute on 2 cores);
# the table goes to stdout, results to build/bench.json, figures to build/plots/ (docs/bench.md).
bench: build
	./build/release/tools/dptree bench --workload insert_only,read_only,mixed --records 500000 \
		--seconds 1 --recovery --json build/bench.json
	@if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then \
		/usr/bin/python3 scripts/plot.py build/bench.json --out build/plots; fi

# DPTree, the concurrent DPTree, FAST_FAIR and LB+-Tree as ratios to absl::btree_map at 10M keys,
# 1 and 2 threads, beside the project's targets: docs/results/yardstick.md (a few minutes).
yardstick: build
	/usr/bin/python3 scripts/reproduce --keys $(or $(KEYS),10M) --only yardstick

install: build
	cmake --install build/release --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf build
