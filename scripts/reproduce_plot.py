"""The figures of scripts/reproduce (PNG, matplotlib; Debian's python3-matplotlib).
Each plotter takes an experiment's data, the run configuration and the PNG path, and returns
the path. Importing this module fails with ImportError when matplotlib is missing."""
import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

import reproduce_pages as P  # noqa: E402

COLORS = {"dptree": "tab:blue", "cdptree": "tab:blue", "fastfair": "tab:orange",
          "fptree": "tab:green", "lbtree": "tab:red", "utree": "tab:purple", "cawbt": "tab:brown",
          "btree": "tab:gray"}


def save(fig, path, title):
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def bars(ax, groups, series, ylabel):
    """series: [(label, [value per group], color)]"""
    width = 0.8 / max(1, len(series))
    for k, (label, ys, color) in enumerate(series):
        xs = [g + (k - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [y or 0 for y in ys], width, label=label, color=color)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="small")


def plot_table1(d, cfg, path):
    runs = d["runs"]
    mode = P.modes_of(d)[0]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    cats = ["log", "alloc", "node", "other"]
    for ax, source in zip(axes, ("here", "paper")):
        bottom = [0.0] * len(P.PEERS)
        for c, cat in enumerate(cats):
            vals = []
            for i in P.PEERS:
                if source == "paper":
                    p = P.PAPER_TABLE1[i]
                    vals.append({"log": p[1], "alloc": p[2], "node": p[3], "other": 0}[cat])
                else:
                    r = P.one(runs, index=i, pm_mode=mode)
                    vals.append(r["flushes_per_op_by_category"].get(cat, 0) if r else 0)
            ax.bar([P.NAMES[i] for i in P.PEERS], vals, bottom=bottom, label=cat)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_title(f"{source}" + (f" ({P.human(cfg.keys)} inserts)" if source == "here"
                                    else " (50M inserts, Optane)"))
        ax.set_ylabel("flushed lines per insert")
        ax.legend(fontsize="small")
    return save(fig, path, "Table 1: flushes per insert by category")


def plot_fig8ab(d, cfg, path):
    runs = d["runs"]
    modes = P.modes_of(d)
    fig, axes = plt.subplots(len(modes), 2, figsize=(10, 3.6 * len(modes)), squeeze=False)
    for m, mode in enumerate(modes):
        for col, (fn, what) in enumerate(((P.insert_ns, "insert"), (P.lookup_ns, "lookup"))):
            ax = axes[m][col]
            for i in P.PEERS:
                rs = sorted(P.pick(runs, index=i, pm_mode=mode), key=lambda r: r["records"])
                ax.plot([r["records"] / 1e6 for r in rs], [fn(r) for r in rs], marker="o",
                        label=P.NAMES[i], color=COLORS[i])
            ax.set_xlabel("keys (millions)")
            ax.set_ylabel(f"mean {what} latency (ns)")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{'8a' if col == 0 else '8b'}: {what}, {mode} mode")
            ax.legend(fontsize="small")
    return save(fig, path, "Figure 8a/8b: latency against data size")


def plot_fig8c(d, cfg, path):
    runs = d["runs"]
    modes = P.modes_of(d)
    fig, axes = plt.subplots(1, len(modes), figsize=(5 * len(modes), 3.8), squeeze=False)
    for m, mode in enumerate(modes):
        ax = axes[0][m]
        series = []
        for i in P.PEERS:
            ys = []
            for s in P.SELECTIVITIES:
                r = [x for x in P.pick(runs, index=i, pm_mode=mode)
                     if P.sel_of(x, d["records"]) == s]
                ys.append(r[0]["throughput_mops"] * 1e3 if r else None)
            series.append((P.NAMES[i], ys, COLORS[i]))
        bars(ax, [f"{s}%" for s in P.SELECTIVITIES], series, "thousand scans / s")
        ax.set_yscale("log")
        ax.set_xlabel("selectivity")
        ax.set_title(f"{mode} mode, {P.human(d['records'])} keys")
    return save(fig, path, "Figure 8c: scan throughput against selectivity")


def plot_fig8d(d, cfg, path):
    runs = d["runs"]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    series = []
    for merge, color in (("in_place", "tab:blue"), ("out_of_place", "tab:red")):
        ys = []
        for e in P.ENTRY_BYTES:
            r = [x for x in runs if P.entry_of(x) == e and P.opt_of(x, "merge_mode") == merge]
            ys.append(r[0]["flushes_per_op"] if r else None)
        series.append((merge.replace("_", "-"), ys, color))
    bars(ax, [f"{e} B" for e in P.ENTRY_BYTES], series, "flushed lines per entry")
    ax.set_xlabel("entry size")
    return save(fig, path, f"Figure 8d: merge flushes, {P.human(d['records'])} inserts")


def plot_fig11(d, cfg, path):
    rows = P.fig11_rows(d)
    bm = [r for r in rows if r[1] is not None]
    dp = [r for r in rows if r[1] is None]
    xs = [r[1] for r in bm]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for workload, k, style in (("insert", 2, "-o"), ("lookup", 3, "--s")):
        axes[0].plot(xs, [P.lookup_ns(r[k]) if r[k] else None for r in bm], style,
                     color="tab:red", label=f"2-Tier-BM {workload}")
        if dp and dp[0][k]:
            axes[0].axhline(P.lookup_ns(dp[0][k]), color="tab:blue",
                            linestyle=style[:-1], label=f"DPTree {workload}")
    axes[0].set_xlabel("leaves in DRAM (%)")
    axes[0].set_ylabel("ns per operation")
    axes[0].legend(fontsize="small")
    for field, style, name in (("flushes_per_op", "-o", "flushes"), ("fences_per_op", "--s", "fences")):
        axes[1].plot(xs, [r[2][field] if r[2] else None for r in bm], style, color="tab:red",
                     label=f"2-Tier-BM {name}")
        if dp and dp[0][2]:
            axes[1].axhline(dp[0][2][field], color="tab:blue", linestyle=style[:-1],
                            label=f"DPTree {name}")
    axes[1].set_xlabel("leaves in DRAM (%)")
    axes[1].set_ylabel("per insert")
    axes[1].legend(fontsize="small")
    return save(fig, path, f"Figure 11: DPTree vs. 2-Tier-BM, {P.human(d['records'])} keys")


def plot_fig10(d, cfg, path):
    runs = d["runs"]
    modes = P.modes_of(d)
    entries = sorted({P.entry_of(r) for r in runs})
    kinds = [w for w in ("read_only", "read_absent") if P.pick(runs, workload=w)]
    fig, axes = plt.subplots(len(modes), len(kinds), figsize=(5 * len(kinds), 3.6 * len(modes)),
                             squeeze=False)
    colors = {"linear": "tab:purple", "fingerprint": "tab:green", "both": "tab:blue"}
    for m, mode in enumerate(modes):
        for k, w in enumerate(kinds):
            series = []
            for p in P.PROBES:
                ys = []
                for e in entries:
                    r = [x for x in P.pick(runs, pm_mode=mode, workload=w)
                         if P.entry_of(x) == e and P.opt_of(x, "probe") == p]
                    ys.append(P.lookup_ns(r[0]) if r else None)
                series.append(({"linear": "lp", "fingerprint": "fp", "both": "lp+fp"}[p], ys,
                               colors[p]))
            bars(axes[m][k], [f"{e} B" for e in entries], series, "mean lookup latency (ns)")
            axes[m][k].set_title(f"{'successful' if w == 'read_only' else 'unsuccessful'}, "
                                 f"{mode} mode")
    return save(fig, path, f"Figure 10: leaf probing, DPTree {P.human(d['records'])} keys")


def plot_space(d, cfg, path):
    runs = d["runs"]
    n = max(r["records"] for r in runs)
    mode = P.modes_of(d)[0]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    labels = [P.NAMES[i] for i in P.PEERS]
    dram, pm = [], []
    for i in P.PEERS:
        r = P.one(runs, index=i, records=n, pm_mode=mode)
        dram.append(r["dram_bytes_per_record"] if r else 0)
        pm.append(r["pm_bytes_per_record"] if r else 0)
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], pm, 0.4, label="PM (here)")
    ax.bar([x - 0.2 for x in xs], dram, 0.4, bottom=pm, label="DRAM (here)")
    ax.bar([x + 0.2 for x in xs], [P.PAPER_SPACE_GB[i] * 1e9 / P.PAPER_SPACE_KEYS
                                   for i in P.PEERS], 0.4, label="paper (total)", color="grey")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels)
    ax.set_ylabel("bytes per record")
    ax.legend(fontsize="small")
    return save(fig, path, f"Space per record, {P.human(n)} records")


def plot_fig12(d, cfg, path):
    runs = d["runs"]
    modes = P.modes_of(d)
    indexes = [i for i in ["cdptree", "fastfair", "fptree"] if P.pick(runs, index=i)]
    fig, axes = plt.subplots(len(modes), len(P.MIXES), figsize=(3.2 * len(P.MIXES),
                                                                3.2 * len(modes)), squeeze=False)
    for m, mode in enumerate(modes):
        for k, w in enumerate(P.MIXES):
            ax = axes[m][k]
            for i in indexes:
                rs = sorted(P.pick(runs, index=i, workload=w, pm_mode=mode),
                            key=lambda r: r["threads"])
                ax.plot([r["threads"] for r in rs], [r["throughput_mops"] for r in rs],
                        marker="o", label=P.NAMES[i], color=COLORS[i])
            ax.set_xticks([1, 2])
            ax.set_ylim(bottom=0)
            ax.set_title(f"{w}, {mode}", fontsize="small")
            ax.set_xlabel("threads")
            if k == 0:
                ax.set_ylabel("Mops/s")
            ax.legend(fontsize="x-small")
    return save(fig, path, "Figure 12: the section 4.4 mixes")


def plot_fig13(d, cfg, path):
    runs = d["runs"]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    one_thread = [r for r in runs if "recovery_threads" not in r]
    for i in P.PEERS:
        rs = sorted(P.pick(one_thread, index=i), key=lambda r: r["records"])
        if rs:
            ax.plot([r["records"] / 1e6 for r in rs], [r["recovery_seconds"] * 1e3 for r in rs],
                    marker="o", label=f"{P.NAMES[i]} (1 thread)", color=COLORS[i])
    for i in d.get("parallel", []):
        for t, style in ((1, ":"), (2, "--")):
            rs = sorted([r for r in runs if r.get("recovery_threads") == t and r["index"] == i],
                        key=lambda r: r["records"])
            ax.plot([r["records"] / 1e6 for r in rs], [r["recovery_seconds"] * 1e3 for r in rs],
                    style, marker="s", label=f"{P.NAMES.get(i, i)}, recovery_threads={t}",
                    color=COLORS.get(i))
    ax.set_xlabel("keys (millions)")
    ax.set_ylabel("recovery time (ms)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="x-small")
    return save(fig, path, "Figure 13: recovery time against size")


def plot_peers(d, cfg, path):
    runs = d["runs"]
    order = d.get("order", P.MIXES)
    panels = [(m, t) for m in P.modes_of(d) for t in (1, 2)
              if P.pick(runs, pm_mode=m, threads=t)]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 3.4 * len(panels)), squeeze=False)
    for k, (mode, t) in enumerate(panels):
        rs = P.pick(runs, pm_mode=mode, threads=t)
        ref = "dptree" if t == 1 else "cdptree"
        indexes = [i for i in P.ALL_PEERS if P.pick(rs, index=i)]
        series = []
        for i in indexes:
            ys = []
            for w in order:
                a, b = P.one(rs, index=i, workload=w), P.one(rs, index=ref, workload=w)
                ys.append(P.ratio(a and a["throughput_mops"], b and b["throughput_mops"]))
            series.append((P.NAMES.get(i, i), ys, COLORS.get(i)))
        ax = axes[k][0]
        bars(ax, order, series, f"throughput / {P.NAMES[ref]}")
        ax.axhline(1, color="black", linewidth=0.6)
        ax.set_title(f"{mode} mode, {t} thread{'s' if t > 1 else ''}", fontsize="small")
    return save(fig, path, "Every index, relative to DPTree")


def plot_recovery(d, cfg, path):
    runs = d["runs"]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    lines = [(i, 1) for i in ("dptree", "fptree", "fastfair")] + [("cdptree", 1), ("cdptree", 2)]
    for i, t in lines:
        rs = sorted(P.pick(runs, index=i, recovery_threads=t), key=lambda r: r["records"])
        if not rs:
            continue
        label = P.NAMES.get(i, i) + (f", {t} recovery threads" if i == "cdptree" else "")
        ax.plot([r["records"] for r in rs], [r["recovery_seconds"] * 1e3 for r in rs],
                "--" if t == 2 else "-", marker="o", label=label, color=COLORS.get(i))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("keys")
    ax.set_ylabel("recovery time (ms)")
    ax.legend(fontsize="x-small")
    return save(fig, path, "Recovery time at 2^k keys")


def plot_scale(d, cfg, path):
    runs = d["runs"]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    panels = (("insert_only", "throughput_mops", "insert Mops/s"),
              ("insert_only", "flushes_per_op", "flushes per insert"),
              ("insert_only", "pm_bytes_per_record", "PM bytes per record"))
    for ax, (w, field, label) in zip(axes, panels):
        for i in P.SCALE_ROWS:
            for t in sorted({r["threads"] for r in runs if r["index"] == i}):
                rs = sorted(P.pick(runs, index=i, threads=t, workload=w), key=lambda r: r["size"])
                if not rs or (field != "throughput_mops" and not rs[0].get("persistent", True)):
                    continue
                # the concurrent DPTree apart from DPTree; absl-btree in black (the reference)
                color = {"cdptree": "tab:cyan", P.SCALE_STEPS: "tab:cyan",
                         "absl-btree": "black"}.get(i, COLORS.get(i))
                ax.plot([r["size"] for r in rs], [r.get(field, 0) for r in rs],
                        "--" if t > 1 else ":" if i == P.SCALE_STEPS else "-", marker="o",
                        color=color,
                        label=P.NAMES.get(i, i) + (f", {t} threads" if t > 1 else ""))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("keys")
        ax.set_ylabel(label)
    axes[0].legend(fontsize="x-small")
    return save(fig, path, "The yardstick indexes against the number of keys")


PLOTTERS = {"table1": plot_table1, "fig8ab": plot_fig8ab, "fig8c": plot_fig8c,
            "fig8d": plot_fig8d, "fig10": plot_fig10, "fig11": plot_fig11, "space": plot_space, "fig12": plot_fig12,
            "fig13": plot_fig13, "peers": plot_peers, "recovery": plot_recovery,
            "scale": plot_scale}
