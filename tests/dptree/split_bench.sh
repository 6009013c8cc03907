#!/bin/sh
# split=keep_last against split=rebuild (Algorithm 2) with `dptree bench`, alternating runs of
# the two in one script (the machine is shared: compare ratios, not absolute figures).
#   usage: tests/dptree/split_bench.sh [dptree binary] [records] [seconds] [reps] [bench flags...]
#   e.g. ... 1000000 2 2 --flush-delay-ns 100   (an emulated cost per flushed line)
# The raw JSON of every run stays in $SPLIT_BENCH_OUT (default: a new folder under /tmp,
# printed at the end) so that any figure quoted from the table can be traced to its runs.
set -eu
BIN=${1:-build/release/tools/dptree}
RECORDS=${2:-2000000}
SECONDS_PER_RUN=${3:-3}
REPS=${4:-2}
shift $(($# < 4 ? $# : 4))
OUT=${SPLIT_BENCH_OUT:-$(mktemp -d /tmp/split_bench.XXXXXX)}
mkdir -p "$OUT"
for rep in $(seq "$REPS"); do
  for split in rebuild keep_last; do
    "$BIN" bench --index dptree --workload insert_only,read_only,read_absent,scan_insert \
      --records "$RECORDS" --seconds "$SECONDS_PER_RUN" --option split=$split \
      --json "$OUT/$split.$rep.json" "$@" >/dev/null
  done
done
/usr/bin/python3 - "$OUT" <<'PY'
import glob, json, statistics, sys
runs = {}
for f in glob.glob(sys.argv[1] + "/*.json"):
    split = f.split("/")[-1].split(".")[0]
    for r in json.load(open(f)):
        runs.setdefault((r["workload"], split), []).append(r)
print(f"{'workload':12} {'rebuild Mops/s':>15} {'keep_last Mops/s':>17} {'ratio':>6} "
      f"{'flush/op r/k':>14} {'PM B/rec r/k':>14}")
for w in ["insert_only", "read_only", "read_absent", "scan_insert"]:
    a, b = runs[(w, "rebuild")], runs[(w, "keep_last")]
    ta = statistics.median(r["throughput_mops"] for r in a)
    tb = statistics.median(r["throughput_mops"] for r in b)
    fa = statistics.median(r["flushes_per_op"] for r in a)
    fb = statistics.median(r["flushes_per_op"] for r in b)
    pa = statistics.median(r["pm_bytes_per_record"] for r in a)
    pb = statistics.median(r["pm_bytes_per_record"] for r in b)
    print(f"{w:12} {ta:15.3f} {tb:17.3f} {tb / ta:6.2f} {fa:6.2f}/{fb:<7.2f} {pa:6.1f}/{pb:<7.1f}")
PY
echo "raw JSON of every run: $OUT"
