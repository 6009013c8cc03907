#!/usr/bin/python3
"""Plots `dptree bench --json` results (docs/bench.md).

    scripts/plot.py results.json [more.json ...] [--out DIR]

Writes into DIR (default: plots/):
  throughput.png  throughput bars, one group per workload (and thread count), one bar per index
  latency.png     latency percentiles (p50 .. max, log scale), one panel per workload,
                  one line per index: the tail of the latency distribution, CDF-style
Uses only python3 and matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import os
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot.py: matplotlib is missing: install Debian's python3-matplotlib "
             "(scripts/setup.sh does) and run this script with /usr/bin/python3")

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

PERCENTILES = [("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9), ("p9999", 99.99), ("max", 100)]
REQUIRED = ["index", "workload", "threads", "throughput_mops", "latency_ns"]


def load(paths):
    runs = []
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"plot.py: cannot read {path}: {e}; give JSON files written by "
                     "`dptree bench --json FILE`")
        if isinstance(data, dict):
            data = [data]
        for run in data:
            missing = [k for k in REQUIRED if k not in run]
            if missing:
                sys.exit(f"plot.py: {path}: a run lacks {', '.join(missing)}; is this the output "
                         "of `dptree bench --json`?")
            runs.append(run)
    if not runs:
        sys.exit("plot.py: the JSON files hold no runs")
    return runs


def group_key(run):
    return f"{run['workload']} t={run['threads']}"


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def plot_throughput(runs, out):
    groups = ordered(group_key(r) for r in runs)
    indexes = ordered(r["index"] for r in runs)
    width = 0.8 / len(indexes)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(groups) * max(1, len(indexes) / 2)), 4))
    for i, index in enumerate(indexes):
        xs, ys = [], []
        for g, group in enumerate(groups):
            match = [r for r in runs if r["index"] == index and group_key(r) == group]
            if match:
                xs.append(g + (i - (len(indexes) - 1) / 2) * width)
                ys.append(sum(r["throughput_mops"] for r in match) / len(match))
        ax.bar(xs, ys, width, label=index)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylabel("throughput (Mops/s)")
    ax.set_title("dptree bench: throughput")
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out, "throughput.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_latency(runs, out):
    groups = ordered(group_key(r) for r in runs)
    cols = min(3, len(groups))
    rows = (len(groups) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.5 * rows), squeeze=False)
    labels = [name for name, _ in PERCENTILES]
    for n, group in enumerate(groups):
        ax = axes[n // cols][n % cols]
        for run in (r for r in runs if group_key(r) == group):
            ys = [max(run["latency_ns"].get(name, 0), 1) for name in labels]
            ax.plot(range(len(labels)), ys, marker="o", label=run["index"])
        ax.set_yscale("log")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels)
        ax.set_ylabel("latency (ns)")
        ax.set_title(group)
        ax.legend(fontsize="small")
    for n in range(len(groups), rows * cols):
        axes[n // cols][n % cols].axis("off")
    fig.suptitle("dptree bench: latency percentiles")
    fig.tight_layout()
    path = os.path.join(out, "latency.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description="Plot `dptree bench --json` results as PNG files.")
    ap.add_argument("json", nargs="+", help="JSON files written by dptree bench --json")
    ap.add_argument("--out", default="plots", help="output directory (default: plots)")
    args = ap.parse_args()
    runs = load(args.json)
    os.makedirs(args.out, exist_ok=True)
    for path in (plot_throughput(runs, args.out), plot_latency(runs, args.out)):
        print(path)


if __name__ == "__main__":
    main()
