"""Ratios of ours to the original per round, from scripts/originals/compare's JSON lines, and
their median and range: one table, every round in it. A file may hold several runs of the
script (their `run` field, the time each started; lines without one are one run), and runs at
several thread counts (`threads`; lines without it ran one thread), and runs on 2 MiB pages
(a pool folder on a huge tmpfs) apart from the others. The medians span every commit in the
file: pass the lines of one code to get that code's."""
import json
import statistics
import sys


def main(path):
    runs = [json.loads(line) for line in open(path) if line.strip()]
    failed = [r for r in runs if "failed" in r]
    runs = [r for r in runs if "failed" not in r]
    bad = [r for r in runs if r["found"] != r["keys"] or not r["sum_ok"]]
    if bad:
        sys.exit(f"summary: {len(bad)} run(s) lost keys: {bad[0]}")
    print("| index | round | original insert / lookup Mops/s | ours insert / lookup Mops/s "
          "| ours / original insert | lookup | load |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ratios = {}
    for r in runs:
        t = r.get("threads", 1)
        r["label"] = r["index"] if t == 1 else f"{r['index']}, {t} threads"
        if r.get("machine", {}).get("pool_fs_huge") in ("always", "within_size"):
            r["label"] += ", 2 MiB pages"
    for index in dict.fromkeys(r["label"] for r in runs):
        mine = [r for r in runs if r["label"] == index]
        for key in sorted({(r.get("run", ""), r["round"]) for r in mine}):
            pair = {r["impl"]: r for r in mine if (r.get("run", ""), r["round"]) == key}
            if set(pair) != {"original", "ours"}:
                continue
            rnd = f"{key[0]} {key[1]}" if key[0] else key[1]
            o, u = pair["original"], pair["ours"]
            ins, look = u["insert_mops"] / o["insert_mops"], u["lookup_mops"] / o["lookup_mops"]
            ratios.setdefault(index, []).append((ins, look))
            loads = [o["load_before"], o["load_after"], u["load_before"], u["load_after"]]
            print(f"| {index} | {rnd} | {o['insert_mops']:.3f} / {o['lookup_mops']:.3f} "
                  f"| {u['insert_mops']:.3f} / {u['lookup_mops']:.3f} | {ins:.2f}x | {look:.2f}x "
                  f"| {min(loads):.2f}-{max(loads):.2f} |")
    print()
    for index, rs in ratios.items():
        for what, i in (("insert", 0), ("lookup", 1)):
            v = [r[i] for r in rs]
            print(f"{index} {what}: ours / original median {statistics.median(v):.2f}x "
                  f"(range {min(v):.2f}-{max(v):.2f}, {len(v)} rounds)")
    for r in failed:
        t = r.get("threads", 1)
        print(f"failed: {r['impl']} {r['index']} at {t} thread(s), round {r.get('round')} of run "
              f"{r.get('run', '')}, exit {r['failed']}: {r.get('output_tail', '')!r}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py RUNS.jsonl")
    main(sys.argv[1])
