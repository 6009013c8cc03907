"""The markdown pages of scripts/reproduce: our numbers beside the DPTree paper's (PVLDB 13(4),
2019, section 4). The paper's numbers are quoted from its text and Table 1; its figures are
plots without printed values, so where the text gives only ratios we compare ratios."""

import json
import os
import statistics

SELECTIVITIES = [0.001, 0.01, 0.1]  # percent of the records per scan (Fig. 8c)
ENTRY_BYTES = [16, 32, 64]  # 8-byte key + 8/24/56-byte value (Fig. 8d, Fig. 10)
PROBES = ["linear", "fingerprint", "both"]  # Fig. 10: lp, fp, lp+fp
PEERS = ["dptree", "fastfair", "fptree"]
# Each index's display name on the pages and plots ("FAST_FAIR" for fastfair): its registry
# entry's, from `dptree bench --list --json` (set_display_names).
NAMES = {}
DRAM_PCTS = [10, 25, 50, 75, 100]  # Fig. 11: the share of 2-Tier-BM's leaves in DRAM
# The `peers` experiment: every persistent index of the project, then the volatile B+-trees
# (ours and the absl::btree_map yardstick).
ALL_PEERS = ["dptree", "cdptree", "fastfair", "fptree", "lbtree", "utree", "cawbt", "wort",
             "bm-btree", "tips-btree", "btree", "absl-btree"]
MIXES = ["insert_only", "read_only", "read_update", "scan_insert", "mixed"]

# Table 1: PM flush stats per op of the 50M insert workload (Sum, Log, Alloc, Node, Fence).
PAPER_TABLE1 = {
    "dptree": (2.26, 1.1, 0.06, 1.1, 1.06),
    "fastfair": (4.35, 0, 0.15, 4.2, 4),
    "fptree": (3.64, 0.05, 0.07, 3.51, 3.6),
}
# §4.2 "Impact of Flush and Fence": latency x flush-only, then x adding fences (50M inserts).
PAPER_FLUSH_FENCE = {"dptree": (1.59, 1.10), "fastfair": (1.34, 1.12), "fptree": (1.83, 1.10)}
# §4.2 "Space Consumption": GB after 50M inserts.
PAPER_SPACE_GB = {"dptree": 1.7, "fastfair": 1.26, "fptree": 1.28}
PAPER_SPACE_KEYS = 50e6

TITLES = {
    "table1": "Table 1: PM flushes and fences per insert",
    "fig8ab": "Figure 8a/8b: insert and lookup latency against data size",
    "fig8c": "Figure 8c: range scan throughput against selectivity",
    "fig8d": "Figure 8d: in-place against out-of-place merge",
    "fig10": "Figure 10: leaf probing schemes",
    "fig11": "Figure 11: DPTree against 2-Tier-BM (a B-tree over a DRAM/PM buffer manager)",
    "space": "Space per record",
    "fig12": "Figure 12: the section 4.4 mixes at 1 and 2 threads",
    "fig13": "Figure 13: recovery time against size",
    "peers": "Beyond the paper: every persistent index side by side",
    "recovery": "Beyond the paper: recovery time at 2^k keys, 1 and 2 recovery threads",
    "yardstick": "The yardstick: our indexes as ratios to absl::btree_map",
    "tries": "Beyond the paper: the tries against the B+-trees, integer and string keys",
    "strings": "Beyond the paper: the B+-trees over byte-string keys",
    "scale": "Beyond the paper: the yardstick indexes from 2^20 keys to N",
}

YARDSTICK = ["absl-btree", "dptree", "cdptree", "fastfair", "lbtree"]
SCALE = YARDSTICK  # the `scale` experiment's indexes (absl-btree first: the reference)
# Its rows: those, and the concurrent DPTree at one thread with its merges run in steps by the
# writer (`--option merge_steps=1`; its runs are labelled with this name in place of cdptree).
SCALE_STEPS = "cdptree-steps"
SCALE_ROWS = SCALE + [SCALE_STEPS]
STEPS_NAME = "concurrent DPTree, merge in steps"
# Its targets: from the smallest size to the largest, a ratio to absl-btree falls and flushes
# per insert rise by at most 10%; the concurrent DPTree (2 recovery threads) recovers 2^27
# records in under 0.5 s and DPTree in at most 20 ns a record; no insert waits over 10 ms.
SCALE_DRIFT, SCALE_CDP_RECOVERY_S, SCALE_DP_RECOVERY_NS, SCALE_MAX_WAIT_MS = 0.10, 0.5, 20, 10
HISTORY_FILE = "yardstick_history.jsonl"  # beside the pages: one line per yardstick run
# Run in the yardstick's 2-thread processes only, with no target: the concurrent DPTree's
# volatile OLC buffer tree alone (no PM, no merge), the floor of a 2-thread insert tail here.
YARDSTICK_FLOOR = ["olc-btree"]
# The `tries` experiment: the survey's B+-trees and tries, WORT (the DPTree paper's third peer)
# and the yardstick.
TRIES = ["dptree", "cdptree", "lbtree", "fptree", "roart", "pactree", "wort", "absl-btree"]
BTREES, TRIE_NAMES = ("dptree", "cdptree", "lbtree", "fptree"), ("roart", "pactree", "wort")
# The `strings` experiment: the B+-trees with a string form, and the yardstick; the key kinds
# with the bench flags that make them.
STRINGS = ["absl-btree", "dptree", "cdptree", "fptree"]
STRING_KINDS = [("u64", []),
                ("u64be", ["--key-type", "string", "--key-set", "u64be"])] + [
                (f"random {n} B", ["--key-type", "string", "--key-set", "random",
                                   "--key-length", str(n)]) for n in (16, 64, 256)]
# The DPTrees against ROART at random string keys, in alternating processes, this many rounds
# by default; the target: at least ROART's speed on inserts and lookups at these key lengths.
STRINGS_ROART = ["dptree", "cdptree", "roart"]
STRINGS_ROART_ROUNDS = 5
ROART_GOAL, ROART_GOAL_KINDS = 1.0, ("random 16 B", "random 64 B")
# The share of its integer-key speed DPTree aims for on 8-byte big-endian string keys.
STRING_GOAL = 0.7
# The DPTree paper's Table 1 (flushes, fences per insert, 50M inserts) and Figure 8: DPTree's
# lookups up to 2.19x and its scans up to 10.98x WORT's.
PAPER_TABLE1_FF = {"dptree": (2.26, 1.06), "fptree": (3.64, 3.6), "wort": (6.8, 6.5)}
PAPER_WORT = {"lookup": 2.19, "scan": 10.98}
# (index, threads) -> (insert, lookup) ratio to absl-btree at 1 thread that the project aims
# for: about 1.2x what the DPTree authors' code, the original FAST_FAIR and the original
# LB+-Tree reached against absl::btree_map on this machine.
YARDSTICK_TARGETS = {("dptree", 1): (1.2, 1.7), ("cdptree", 1): (1.2, 1.2),
                     ("cdptree", 2): (2.0, 3.1), ("fastfair", 1): (0.65, 0.85),
                     ("lbtree", 1): (1.0, 1.3)}
# (index, threads) -> the insert p99.9 it aims for, in ns (the single-threaded DPTree's tail
# is about 1 us; two threads on two cores share them with the merge workers).
YARDSTICK_P999 = {("cdptree", 2): 5000}

MODE_NOTE = ("Modes: `pmem` issues the real flush instruction and `sfence` for every persist "
             "(on this machine's DRAM: there is no Optane here), `dram` issues neither; "
             "flushes and fences are counted in every mode.")


def set_display_names(listed):
    """Takes the display names from the tool's registry: `listed` maps each index's name to its
    entry of `dptree bench --list --json`."""
    NAMES.clear()
    NAMES.update({name: entry["display_name"] for name, entry in listed.items()})
    NAMES[SCALE_STEPS] = STEPS_NAME


def human(n):
    n = int(n)
    if n >= 1e6 and n % 100_000 == 0:
        return f"{n / 1e6:g}M"
    if n >= 1e3 and n % 100 == 0:
        return f"{n / 1e3:g}k"
    return str(n)


def f2(x):
    return "-" if x is None else f"{x:.2f}"


def ratio(a, b):
    return None if not a or not b else a / b


def rx(x):
    return "-" if x is None else f"{x:.2f}x"


def lookup_ns(r):
    """Mean latency of a one-thread run: run time / operations (every operation, not a sample)."""
    return 1e3 / r["throughput_mops"] if r["throughput_mops"] else None


def insert_ns(r):
    """Mean insert latency of the preload (single-threaded, random keys, empty index to N)."""
    return r["preload_seconds"] / r["records"] * 1e9 if r["records"] else None


def pick(runs, **kw):
    return [r for r in runs if all(r.get(k) == v for k, v in kw.items())]


def one(runs, **kw):
    m = pick(runs, **kw)
    return m[0] if m else None


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def commands(d):
    """Every process the page's rows come from, with the 1-minute load before and after it."""
    procs = {}  # (command, round) -> the load around that process (its rows share it)
    for r in d.get("runs", []) + d.get("roart_rounds", []):
        if "command" in r:
            procs.setdefault((r["command"], r.get("round")), r.get("load"))
    if not procs:
        return ""
    loads = {}  # command -> the loads of its processes
    for (c, _), lo in procs.items():
        loads.setdefault(c, []).extend([lo] if lo else [])

    def note(los):
        if len(los) == 1:
            return f"    # load {los[0][0]:.2f} / {los[0][1]:.2f}"
        xs = [x for lo in los for x in lo]
        return f"    # {len(los)} processes, load {min(xs):.2f}-{max(xs):.2f}" if xs else ""
    lines = [c + note(los) if los else c for c, los in sorted(loads.items())]
    return ("The runs (`dptree bench`, one process each, with the 1-minute load average before / "
            "after it; the raw JSON has every row's):\n\n```\n" + "\n".join(lines) + "\n```\n")


def modes_of(d):
    seen = []
    for r in d.get("runs", []):
        if r["pm_mode"] not in seen:
            seen.append(r["pm_mode"])
    return seen


# --- one function per page: returns (markdown body, one-line headline) ---------------------

def body_table1(d, cfg):
    runs = d["runs"]
    rows = []
    for index in PEERS:
        r = one(runs, index=index, pm_mode=modes_of(d)[0])
        if not r:
            continue
        c = r["flushes_per_op_by_category"]
        p = PAPER_TABLE1[index]
        rows.append([NAMES[index], f2(r["flushes_per_op"]), f2(c.get("log")), f2(c.get("alloc")),
                     f2(c.get("node")), f2(c.get("other")), f2(r["fences_per_op"]),
                     f"{p[0]} / {p[1]} / {p[2]} / {p[3]} / {p[4]}"])
    text = (f"{human(cfg.keys)} inserts of random 8-byte keys with 8-byte values into an empty "
            "index, one thread (the paper: 50M). Flushed cache lines and fences per insert, by "
            "the category the code charges them to.\n\n")
    text += table(["index", "sum", "log", "alloc", "node", "other", "fence",
                   "paper: sum / log / alloc / node / fence"], rows)
    # Flush + fence cost: latency in pmem mode over dram mode.
    lat_rows = []
    for index in PEERS:
        by_mode = {m: one(runs, index=index, pm_mode=m) for m in modes_of(d)}
        cells = [f"{lookup_ns(r):.0f}" if r else "-" for r in by_mode.values()]
        pm, dr = by_mode.get("pmem"), by_mode.get("dram")
        ff = PAPER_FLUSH_FENCE[index]
        lat_rows.append([NAMES[index], *cells,
                         rx(ratio(pm and lookup_ns(pm), dr and lookup_ns(dr))),
                         f"{ff[0] * ff[1]:.2f}x ({ff[0]}x flushes, then {ff[1]}x fences)"])
    text += ("\nMean insert latency (ns; run time / inserts) per mode, and what flushes and "
             "fences cost: pmem over dram. The paper measured the same step on Optane "
             "(§4.2, \"Impact of Flush and Fence\").\n\n")
    text += table(["index", *[f"{m} ns" for m in modes_of(d)], "pmem / dram", "paper"], lat_rows)
    dp = one(runs, index="dptree")
    others = [one(runs, index=i) for i in ("fastfair", "fptree")]
    head = ""
    if dp and all(others):
        head = (f"flushes per insert: DPTree {dp['flushes_per_op']:.2f}, FAST_FAIR "
                f"{others[0]['flushes_per_op']:.2f}, FPTree {others[1]['flushes_per_op']:.2f} "
                "(paper 2.26 / 4.35 / 3.64)")
    return text, head


def body_fig8ab(d, cfg):
    runs = d["runs"]
    text = ("Each point: one run that preloads N random keys into an empty index (one thread; "
            "the mean insert latency is preload time / N: 8a) and then looks up "
            f"min(N, {human(cfg.lookups)}) random existing keys (mean latency = run time / "
            "lookups: 8b). The paper: 25M to 100M keys; here N/4, N/2, N.\n\n")
    heads = []
    for mode in modes_of(d):
        rows = []
        for n in sorted({r["records"] for r in runs}):
            rs = {i: one(runs, index=i, records=n, pm_mode=mode) for i in PEERS}
            ins = {i: rs[i] and insert_ns(rs[i]) for i in PEERS}
            lk = {i: rs[i] and lookup_ns(rs[i]) for i in PEERS}
            rows.append([human(n), *[f"{ins[i]:.0f}" if ins[i] else "-" for i in PEERS],
                         rx(ratio(ins["fastfair"], ins["dptree"])),
                         rx(ratio(ins["fptree"], ins["dptree"])),
                         *[f"{lk[i]:.0f}" if lk[i] else "-" for i in PEERS],
                         rx(ratio(lk["fastfair"], lk["dptree"])),
                         rx(ratio(lk["fptree"], lk["dptree"]))])
        text += f"### {mode} mode\n\n"
        text += table(["keys", "insert ns DPTree", "FAST_FAIR", "FPTree", "FF / DP", "FP / DP",
                       "lookup ns DPTree", "FAST_FAIR", "FPTree", "FF / DP", "FP / DP"], rows)
        text += "\n"
        if rows:
            last = rows[-1]
            heads.append(f"{mode} at {last[0]}: insert FF/DP {last[4]}, FP/DP {last[5]}; "
                         f"lookup FF/DP {last[9]}, FP/DP {last[10]}")
    text += ("The paper (Optane DC PMM): DPTree has **1.27-1.43x** lower insert latency than "
             "FAST_FAIR and **1.76-1.78x** than FPTree (8a), and up to **1.82x / 1.85x** faster "
             "lookups than FAST_FAIR / FPTree (8b). Lookups issue no flushes, so pmem and dram "
             "mode differ there only by noise; PM reads on this machine are DRAM reads, which "
             "favours the PM-only FAST_FAIR.\n")
    return text, "; ".join(heads) + " (paper: insert 1.27-1.43x / 1.76-1.78x, lookup up to 1.82x / 1.85x)"


def body_fig8c(d, cfg):
    runs = d["runs"]
    n = d["records"]
    text = (f"{human(n)} keys (the paper: 50M); scans only, one thread; each scan starts at a "
            "random existing key and reads a uniformly drawn number of records with mean "
            "selectivity x N (`--scan-selectivity`). Throughput in thousand scans per "
            "second.\n\n")
    heads = []
    for mode in modes_of(d):
        rows = []
        for sel in SELECTIVITIES:
            rs = {}
            for i in PEERS:
                m = [r for r in pick(runs, index=i, pm_mode=mode) if sel_of(r, n) == sel]
                rs[i] = m[0]["throughput_mops"] * 1e3 if m else None
            rows.append([f"{sel}%", f"{sel / 100 * n:.0f}",
                         *[f"{rs[i]:.1f}" if rs[i] else "-" for i in PEERS],
                         rx(ratio(rs["dptree"], rs["fptree"])),
                         rx(ratio(rs["fastfair"], rs["dptree"]))])
        text += f"### {mode} mode\n\n"
        text += table(["selectivity", "records/scan", "DPTree kscans/s", "FAST_FAIR", "FPTree",
                       "DP / FP", "FF / DP"], rows) + "\n"
        if rows:
            dpfp = [r[5] for r in rows]
            ffdp = [r[6] for r in rows]
            heads.append(f"{mode}: DP/FP {dpfp[0]}..{dpfp[-1]}, FF/DP {ffdp[0]}..{ffdp[-1]}")
    text += ("The paper: DPTree is up to **3.0x** faster than FPTree (which sorts each leaf) and "
             "at most **1.1x** slower than FAST_FAIR (sorted leaves; DPTree goes through the "
             "order array).\n")
    return text, "; ".join(heads) + " (paper: DP/FP up to 3.0x, FF/DP up to 1.1x)"


def sel_of(r, n):
    for s in SELECTIVITIES:
        if f"--scan-selectivity {s}" in r.get("command", "") and r["records"] == n:
            return s
    return None


def entry_of(r):
    cmd = r.get("command", "")
    for e in ENTRY_BYTES:
        if f"value_bytes={e - 8}" in cmd:
            return e
    return 16


def opt_of(r, name):
    cmd = r.get("command", "")
    key = f"{name}="
    if key not in cmd:
        return None
    return cmd.split(key, 1)[1].split()[0]


def body_fig8d(d, cfg):
    runs = d["runs"]
    text = (f"{human(d['records'])} inserts of random keys into an empty DPTree (the paper: 5M), "
            "8-byte keys and 8/24/56-byte values, with the in-place merge (coarse-grained "
            "versioning, §2.3) or the out-of-place merge (the base tree's leaves replaced by one "
            "sorted PM array rewritten at each merge). Flushed lines per inserted entry, every "
            "category.\n\n")
    rows = []
    for e in ENTRY_BYTES:
        ip = [r for r in runs if entry_of(r) == e and opt_of(r, "merge_mode") == "in_place"]
        op = [r for r in runs if entry_of(r) == e and opt_of(r, "merge_mode") == "out_of_place"]
        a = ip[0]["flushes_per_op"] if ip else None
        b = op[0]["flushes_per_op"] if op else None
        rows.append([f"{e} B", f2(a), f2(b), rx(ratio(b, a))])
    text += table(["entry", "in-place flushes/entry", "out-of-place", "out / in"], rows)
    text += ("\nThe paper: the out-of-place merge costs **2.1x** (16-byte entries) up to "
             "**5.8x** (64-byte entries) more flushes per entry than the in-place merge.\n")
    head = f"out/in-place flushes {rows[0][3]} at 16 B .. {rows[-1][3]} at 64 B (paper 2.1x .. 5.8x)"
    return text, head


def body_fig10(d, cfg):
    runs = d["runs"]
    text = (f"DPTree with {human(d['records'])} keys (the paper: 50M), then "
            f"min(N, {human(cfg.lookups)}) lookups of existing keys (successful) or of keys "
            "never inserted (unsuccessful, workload `read_absent`), one thread; mean latency = "
            "run time / lookups. Probing inside a base-tree leaf: `linear` (linear probing from "
            "the key's hash slot), `fingerprint` (scan the one-byte fingerprints, FPTree style), "
            "`both` (DPTree: linear probing over the fingerprints).\n\n")
    if d.get("sizes_note"):
        text += f"Entry sizes other than 16 bytes were not measured: {d['sizes_note']}.\n\n"
    if d.get("absent_note"):
        text += f"Note: {d['absent_note']}.\n\n"
    heads = []
    entries = sorted({entry_of(r) for r in runs})
    for mode in modes_of(d):
        rows = []
        for e in entries:
            for w, what in (("read_only", "successful"), ("read_absent", "unsuccessful")):
                cells, found = [], []
                for p in PROBES:
                    m = [r for r in pick(runs, pm_mode=mode, workload=w)
                         if entry_of(r) == e and opt_of(r, "probe") == p]
                    cells.append(f"{lookup_ns(m[0]):.0f}" if m else "-")
                    if m:
                        found.append(m[0]["reads_found"] / max(1, m[0]["ops"]))
                if any(c != "-" for c in cells):
                    hit = f"{100 * min(found):.0f}-{100 * max(found):.0f}%" if found else "-"
                    rows.append([f"{e} B", what, *cells, hit])
        text += f"### {mode} mode\n\n"
        text += table(["entry", "lookups", "linear ns", "fingerprint ns", "both ns", "found"],
                      rows) + "\n"
        for row in rows:
            ns = {p: float(c) for p, c in zip(PROBES, row[2:5]) if c != "-"}
            if len(ns) == 3:
                best = min(ns, key=ns.get)
                heads.append(f"{mode} {row[0]} {row[1]}: fastest {best}")
    text += ("The paper (no printed values): for successful lookups linear probing with "
             "fingerprints is fastest and fingerprints-only slowest (it checks half the "
             "fingerprints on average); linear-only degrades as entries grow. For unsuccessful "
             "lookups the two fingerprint schemes win, and linear + fingerprints is fastest.\n")
    return text, "; ".join(heads[:4])


def fig11_rows(d):
    """(label, dram_pct or None, insert run, lookup run) per configuration, DPTree first."""
    runs = d["runs"]
    out = []
    for index, pct in [("dptree", None)] + [("bm-btree", p) for p in DRAM_PCTS]:
        mine = [r for r in runs if r["index"] == index and
                (pct is None or opt_of(r, "dram_pct") == str(pct))]
        ins = [r for r in mine if r["workload"] == "insert_only"]
        look = [r for r in mine if r["workload"] == "read_only"]
        if ins or look:
            label = NAMES[index] + ("" if pct is None else f" {pct}%")
            out.append((label, pct, ins[0] if ins else None, look[0] if look else None))
    return out


def body_fig11(d, cfg):
    text = (f"{human(d['records'])} inserts of random 8-byte keys with 8-byte values into an "
            "empty index, then lookups of existing keys on an index preloaded with as many, one "
            "thread (the paper: 50M and 50M). 2-Tier-BM is `bm-btree` (16 KiB pages, hash "
            "leaves, mini pages, log capacity 30% of the key-value set) at `dram_pct` = the share "
            "of its leaves whose pages fit in DRAM; DPTree runs with R = 0.1. Mean latency = run time / "
            "operations; flushed lines and fences per insert, the flushes split into the log "
            "and page write-backs (evictions and checkpoints; `node` in the counters).\n\n")
    rows = []
    for label, pct, ins, look in fig11_rows(d):
        c = ins["flushes_per_op_by_category"] if ins else {}
        rows.append([label, f"{lookup_ns(ins):.0f}" if ins else "-",
                     f"{lookup_ns(look):.0f}" if look else "-",
                     f2(ins and ins["flushes_per_op"]), f2(c.get("log")), f2(c.get("node")),
                     f2(ins and ins["fences_per_op"]), load_note(ins) if ins else "-"])
    text += table(["index", "insert ns", "lookup ns", "flushes/insert", "log", "write-back",
                   "fences/insert", "load (insert run)"], rows)
    text += ("\nThe paper (Figure 11 and Table 1, Optane): 2-Tier-BM needs **8.5 flushes** "
             "(4 for the log, 4.5 for page swaps) **and 2 fences per insert at 100%**, against "
             "DPTree's constant **2.2**; its insert latency rises as the buffer share falls; it "
             "looks up **50% faster than DPTree only when entirely in DRAM**, and its lookups "
             "slow down quickly below that.\n\n")
    text += ("Where ours differs, and why (docs/bm-btree.md): our log records carry 24-byte "
             "headers and the tail is a separate line, so the log flushes per insert depend on "
             "how the records fall across lines; a checkpoint writes back only dirty lines, one "
             "fence for all, so checkpoints add flushes but almost no fences; lookups spend most "
             "of their time probing hash leaves filled up to 7/8 (no fingerprints) through the "
             "buffer manager's frames; and this machine has no PM: a line loaded from \"PM\" is a DRAM read, so the lookup "
             "penalty of a small buffer is the cost of loading lines and evicting frames, not "
             "of Optane's latency.\n")
    rows_by = {pct: (ins, look) for _, pct, ins, look in fig11_rows(d)}
    dp = rows_by.get(None, (None, None))
    full = rows_by.get(100, (None, None))
    head = ""
    if dp[0] and full[0]:
        head = (f"flushes/insert: 2-Tier-BM {full[0]['flushes_per_op']:.2f} at 100% "
                f"(paper 8.5), DPTree {dp[0]['flushes_per_op']:.2f} (paper 2.2)")
        if dp[1] and full[1]:
            head += (f"; lookups at 100%: 2-Tier-BM {rx(ratio(lookup_ns(dp[1]), lookup_ns(full[1])))}"
                     " DPTree's speed (paper 1.5x)")
    return text, head


def body_space(d, cfg):
    runs = d["runs"]
    text = ("Bytes per record after the largest fig8ab preload (N random 16-byte records), as "
            "each index reports them: PM = blocks it holds in the pool, DRAM = its volatile "
            "structures. The paper: GB after 50M inserts, per record here as GB x 10^9 / 50M.\n\n")
    rows = []
    mode = modes_of(d)[0] if runs else None
    n = max((r["records"] for r in runs), default=0)
    tot = {}
    for i in PEERS:
        r = one(runs, index=i, records=n, pm_mode=mode)
        if not r:
            continue
        tot[i] = r["dram_bytes_per_record"] + r["pm_bytes_per_record"]
        paper = PAPER_SPACE_GB[i] * 1e9 / PAPER_SPACE_KEYS
        rows.append([NAMES[i], f"{r['dram_bytes_per_record']:.1f}",
                     f"{r['pm_bytes_per_record']:.1f}", f"{tot[i]:.1f}",
                     f"{tot[i] * n / 1e9:.3f} GB", f"{paper:.1f} ({PAPER_SPACE_GB[i]} GB)"])
    text += f"N = {human(n)}, {mode} mode.\n\n"
    text += table(["index", "DRAM B/record", "PM B/record", "total B/record", "total",
                   "paper B/record"], rows)
    text += ("\nThe paper: DPTree uses about **34%** more than FAST_FAIR and FPTree (two sets of "
             "metadata; fingerprints and order array).\n")
    head = ""
    if all(i in tot for i in PEERS):
        head = (f"DPTree {tot['dptree']:.1f} B/record, {ratio(tot['dptree'], tot['fastfair']):.2f}x "
                f"FAST_FAIR, {ratio(tot['dptree'], tot['fptree']):.2f}x FPTree (paper 1.35x / 1.33x)")
    return text, head


def body_fig12(d, cfg):
    runs = d["runs"]
    text = (f"{human(d['records'])} keys preloaded (the paper: 50M), then {cfg.seconds} s of "
            "each mix at 1 and 2 threads (the paper: 1 to 32); scans of mean selectivity "
            "0.001%. Throughput in Mops/s.\n\n")
    if d.get("not_concurrent"):
        text += ("Not measured at 2 threads (not registered as concurrent in this build): " +
                 ", ".join(NAMES[i] for i in d["not_concurrent"]) + ".\n\n")
    indexes = [i for i in ["cdptree", "fastfair", "fptree"] if pick(runs, index=i)]
    heads = []
    for mode in modes_of(d):
        rows = []
        for w in MIXES:
            for t in (1, 2):
                rs = {i: one(runs, index=i, workload=w, threads=t, pm_mode=mode) for i in indexes}
                v = {i: rs[i] and rs[i]["throughput_mops"] for i in indexes}
                rows.append([w, t, *[f"{v[i]:.3f}" if v[i] else "-" for i in indexes],
                             rx(ratio(v.get("cdptree"), v.get("fastfair"))),
                             rx(ratio(v.get("cdptree"), v.get("fptree")))])
        text += f"### {mode} mode\n\n"
        text += table(["mix", "threads", *[NAMES[i] for i in indexes], "DP / FF", "DP / FP"],
                      rows) + "\n"
        ro = [r for r in rows if r[0] == "read_only" and r[1] == 2]
        if ro:
            heads.append(f"{mode} read_only 2 threads: DP/FF {ro[0][-2]}, DP/FP {ro[0][-1]}")
    text += ("The paper (up to 32 threads): InsertOnly, DPTree highest at every thread count; "
             "ReadOnly, DPTree **1.32-1.58x** FAST_FAIR and **1.37-1.7x** FPTree; ReadUpdate, "
             "DPTree ahead by **1.7-5.07x**; ScanInsert, FAST_FAIR highest, DPTree close and "
             "**2-3x** over FPTree; Mixed, DPTree highest. With 2 cores shared by other work, "
             "the 2-thread column shows contention, not the paper's scalability.\n")
    return text, "; ".join(heads)


def body_fig13(d, cfg):
    runs = d["runs"]
    text = ("Recovery time: close the pool after N random inserts (and some lookups), reopen it, "
            "recover the index and complete the first lookup (`--recovery`). One thread from the "
            f"fig8ab runs ({d['mode']} mode). The paper: 2^23 to 2^27 keys.\n\n")
    sizes = sorted({r["records"] for r in runs if "recovery_threads" not in r})
    rows = []
    for n in sizes:
        rs = {i: one([r for r in runs if "recovery_threads" not in r], index=i, records=n)
              for i in PEERS}
        v = {i: rs[i] and rs[i]["recovery_seconds"] for i in PEERS}
        rows.append([human(n), *[f"{v[i] * 1e3:.1f}" if v[i] is not None else "-" for i in PEERS],
                     rx(ratio(v["fptree"], v["dptree"]))])
    text += table(["keys", "DPTree ms", "FAST_FAIR ms", "FPTree ms", "FP / DP"], rows)
    par = [r for r in runs if "recovery_threads" in r]
    if par:
        prow = []
        for i in d["parallel"]:
            for n in sizes:
                v = {t: one([r for r in par if r["recovery_threads"] == t], index=i, records=n)
                     for t in (1, 2)}
                s = {t: v[t] and v[t]["recovery_seconds"] for t in (1, 2)}
                prow.append([NAMES.get(i, i), human(n),
                             *[f"{s[t] * 1e3:.1f}" if s[t] else "-" for t in (1, 2)],
                             rx(ratio(s[1], s[2]))])
        text += "\nWith `--option recovery_threads=T`:\n\n"
        text += table(["index", "keys", "1 thread ms", "2 threads ms", "speed-up"], prow)
    else:
        text += ("\nNo index here takes `recovery_threads`, so parallel recovery is not "
                 "measured" + ("" if d.get("has_cdptree") else
                               " (the concurrent DPTree, whose recovery is parallel, is not "
                               "registered in this build)") + ".\n")
    text += ("\nThe paper: with one thread DPTree recovers **1.8-5.5x** faster than FPTree "
             "(DPTree replays only its log; FPTree reads every leaf's keys to rebuild its inner "
             "nodes); with 32 threads DPTree speeds up 8x, FPTree 2.6x. The paper's FAST_FAIR "
             "recovers instantly; ours replays nothing either, but before it follows a word "
             "of an untrusted pool its open validates every node (docs/peers.md), which the "
             "column above times. Our FPTree keeps each leaf's low key in the "
             "leaf's first line, so its recovery reads one word per leaf where the paper's "
             "FPTree reads each leaf's keys for the greatest: that favours FPTree here.\n")
    ratios = [r[-1] for r in rows]
    return text, f"FP/DP recovery time {ratios[0]} .. {ratios[-1]} (paper 1.8-5.5x)" if rows else ""


def body_peers(d, cfg):
    runs = d["runs"]
    order = d.get("order", MIXES)
    text = (f"{human(d['records'])} keys preloaded once per index, mode and thread count "
            "(`dptree bench --load-once`); then the mixes run one after another on that "
            f"preload for {cfg.seconds} s each, in the order {', '.join(order)} (inserts last, "
            "so every read mix starts from the preloaded keys; later mixes see the keys the "
            "earlier ones inserted, the same for every index as each run lasts the same time "
            "within a few percent of the keys). Scans read 100 records. Throughput in Mops/s, "
            "and in brackets relative to DPTree (1 thread) or the concurrent DPTree (2 "
            "threads), measured in the same script, one process per index.\n\n")
    if d.get("missing"):
        text += "Not registered in this build: " + ", ".join(d["missing"]) + ".\n\n"
    if d.get("redone"):
        text += ("Redone later (`--redo`, after a change to the index; the other indexes' runs "
                 "are from the first run): " + ", ".join(
                     f"{NAMES.get(x['index'], x['index'])} at {x['when']} (commit `{x['commit']}`)"
                     for x in d["redone"]) + ".\n\n")
    heads = []
    for mode in modes_of(d):
        for t in (1, 2):
            rs = [r for r in runs if r["pm_mode"] == mode and r["threads"] == t]
            if not rs:
                continue
            indexes = [i for i in ALL_PEERS if pick(rs, index=i)]
            ref = "dptree" if t == 1 else "cdptree"
            rows = []
            for w in order:
                v = {i: (one(rs, index=i, workload=w) or {}).get("throughput_mops") for i in indexes}
                rows.append([w, *[f"{v[i]:.3f} ({rx(ratio(v[i], v.get(ref)))})" if v[i] else "-"
                                  for i in indexes]])
            text += f"### {mode} mode, {t} thread{'s' if t > 1 else ''}\n\n"
            text += table(["mix", *[NAMES.get(i, i) for i in indexes]], rows) + "\n"
            irows = []
            for i in indexes:
                r = one(rs, index=i, workload="insert_only")
                rec = [x.get("recovery_seconds") for x in pick(rs, index=i, workload="insert_only")]
                if not r:
                    continue
                lat = r.get("latency_ns", {})
                irows.append([NAMES.get(i, i), f"{r['flushes_per_op']:.2f}",
                              f"{r['fences_per_op']:.2f}",
                              fmt_ns(lat.get("p99")), fmt_ns(lat.get("p999")),
                              f"{rec[0]:.3f}" if rec and rec[0] is not None else "-"])
            text += "InsertOnly: flushes and fences per insert, insert latency percentiles"
            text += (", recovery time after the five runs (s)" if t == 1 else "") + ":\n\n"
            text += table(["index", "flushes/insert", "fences/insert", "p99", "p99.9",
                           "recovery s"] if t == 1 else
                          ["index", "flushes/insert", "fences/insert", "p99", "p99.9"],
                          [row if t == 1 else row[:5] for row in irows]) + "\n"
            if mode == "pmem" and t == 1:
                ro = {i: (one(rs, index=i, workload="read_only") or {}).get("throughput_mops")
                      for i in indexes}
                best = max((i for i in indexes if i not in ("btree", "absl-btree") and ro.get(i)),
                           key=lambda i: ro[i], default=None)
                if best:
                    heads.append(f"pmem 1-thread ReadOnly fastest persistent: {NAMES.get(best, best)}")
    text += ("FAST_FAIR, FPTree, LB+-Tree, uTree, CAWBT, WORT, 2-Tier-BM and TIPS are our "
             "implementations from their papers on the same PM layer (docs/indexes.md, "
             "docs/peers.md, docs/bm-btree.md and docs/tips.md say where each departs; 2-Tier-BM "
             "runs with its defaults, every leaf in DRAM; TIPS over our B+-tree). CAWBT and LB+-Tree assume a flushed line reaches PM "
             "whole. B+-tree (DRAM) and absl::btree_map keep nothing in PM: they are the volatile "
             "references.\n")
    return text, "; ".join(heads)


def fmt_ns(ns):
    if ns is None:
        return "-"
    return f"{ns:.0f} ns" if ns < 1e3 else f"{ns / 1e3:.1f} us" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


def body_recovery(d, cfg):
    runs = d["runs"]
    text = ("Recovery time: N random keys preloaded, 1000 lookups, close the pool, reopen it, "
            "recover and complete the first lookup (`--recovery`), " + d["mode"] + " mode. "
            "The concurrent DPTree replays its log partitions with `recovery_threads` threads; "
            "the others recover on one thread.\n\n")
    rows = []
    for n in d["sizes"]:
        def ms(index, t=1):
            r = one(runs, index=index, records=n, recovery_threads=t)
            return r and r.get("recovery_seconds")
        c1, c2 = ms("cdptree", 1), ms("cdptree", 2)
        k = n.bit_length() - 1
        rows.append([f"2^{k} ({human(n)})",
                     *[f"{v * 1e3:.1f}" if v is not None else "-"
                       for v in (c1, c2, ms("dptree"), ms("fptree"), ms("fastfair"))],
                     rx(ratio(c1, c2))])
    text += table(["keys", "cDPTree 1 thr ms", "cDPTree 2 thr ms", "DPTree ms", "FPTree ms",
                   "FAST_FAIR ms", "2-thread speed-up"], rows)
    text += ("\nThe paper (Fig. 13, 2^23 to 2^27 keys, up to 32 threads): recovery time grows "
             "linearly with size, and parallel log replay speeds DPTree up 8x at 32 threads. "
             "The paper's FAST_FAIR recovers instantly by design; ours validates every node of the "
             "pool when it opens it, which its column times. This machine has 2 cores shared with "
             "other work, so the 2-thread column shows what 2 threads give here, not scaling.\n")
    last = rows[-1] if rows else None
    return text, (f"{last[0]}: cDPTree {last[1]} ms (1 thread), {last[2]} ms (2 threads)"
                  if last else "")


def load_note(r):
    lo = r.get("load")
    if not lo:
        return "-"
    flag = " **above cores**" if max(lo) > r.get("cores", 2) else ""
    return f"{lo[0]:.1f}/{lo[1]:.1f}{flag}"


def yardstick_rounds(runs):
    """The yardstick's pmem runs on pools not prefaulted, its rounds, and absl-btree's Mops/s
    in each (round, workload): every ratio is to the absl-btree run of its own round."""
    pmem = [r for r in runs if r.get("pm_mode", "pmem") == "pmem" and not r.get("prefault")]
    rounds = sorted({r.get("round", 0) for r in pmem})
    absl = {(k, w): (one(of_round(pmem, k), index="absl-btree", threads=1, workload=w) or {})
            .get("throughput_mops") for k in rounds for w in ("insert_only", "read_only")}
    return pmem, rounds, absl


def body_yardstick(d, cfg):
    runs = d["runs"]
    pmem, rounds, absl = yardstick_rounds(runs)
    text = (f"{human(d['records'])} random keys preloaded once per index and thread count "
            "(`dptree bench --load-once`), pmem mode; lookups (read_only) first, then inserts "
            f"of new keys (insert_only), {cfg.seconds} s each; an index that buffers writes "
            "drains them inside the insert run. Ratios are to absl-btree (absl::btree_map, "
            "single-threaded) at 1 thread in the same process round. Load: the 1-minute load "
            "average before/after the process that made the row.\n\n")
    if len(rounds) > 1:
        text += (f"The processes ran {len(rounds)} times (rounds). Each figure below is the "
                 "median over the rounds, each ratio the median of the rounds' own ratios; the "
                 "second table has every round.\n\n")
    history, over_runs = yardstick_history(d.get("history"))
    if history:
        text += history + "**This run** (its own rounds' medians):\n\n"
    rows, per_round, met, missed = [], [], 0, 0
    for t in (1, 2):
        for i in YARDSTICK + YARDSTICK_FLOOR:
            got = [yardstick_round(pmem, absl, i, t, k) for k in rounds]
            got = [g for g in got if g]
            if not got:
                continue
            med = {f: median_of([g[f] for g in got]) for f in got[0] if f != "load"}
            want = YARDSTICK_TARGETS.get((i, t))
            verdict = "-"
            if want and med["ri"] is not None and med["rr"] is not None:
                ok = med["ri"] >= want[0] and med["rr"] >= want[1]
                met, missed = met + ok, missed + (not ok)
                verdict = f"{want[0]}x / {want[1]}x: " + ("met" if ok else "missed")
                verdict += rounds_met(got, lambda g: g["ri"] is not None and g["rr"] is not None
                                      and g["ri"] >= want[0] and g["rr"] >= want[1])
            tail = fmt_ns(med["p999"])
            want_tail = YARDSTICK_P999.get((i, t))
            if want_tail and med["p999"] is not None:
                ok = med["p999"] <= want_tail
                met, missed = met + ok, missed + (not ok)
                tail += (f" (target {fmt_ns(want_tail)}: {'met' if ok else 'missed'}"
                         + rounds_met(got, lambda g: g["p999"] is not None
                                      and g["p999"] <= want_tail) + ")")
            load = ", ".join(g["load"] for g in got)
            rows.append([NAMES.get(i, i), t, f"{med['ins']:.3f}", rx(med["ri"]),
                         f"{med['rd']:.3f}", rx(med["rr"]), verdict, tail,
                         f"{med['fl']:.2f}", f"{med['pmb']:.1f}", load])
            if i != "absl-btree":
                per_round.append([NAMES.get(i, i), t] +
                                 [f"{rx(g['ri'])} / {rx(g['rr'])}" for g in got])
    text += table(["index", "threads", "insert Mops/s", "insert ratio", "lookup Mops/s",
                   "lookup ratio", "target (insert / lookup)", "insert p99.9",
                   "flushes/insert", "PM B/record", "load"], rows) + "\n"
    if any(r[0] == NAMES["olc-btree"] for r in rows):
        text += ("The OLC B+-tree row is the concurrent DPTree's buffer tree alone, in DRAM: no log, "
                 "no merge, no flush. Its insert p99.9 at 2 threads is what two threads sharing "
                 "this machine's two cores give without any persistence, the floor under the "
                 "concurrent DPTree's tail target.\n\n")
    if len(rounds) > 1:
        text += ("Each round's ratios (insert / lookup), and absl-btree's own Mops/s in it:\n\n"
                 + table(["index", "threads"] + [f"round {k + 1}" for k in rounds],
                         [["absl::btree_map (Mops/s)", 1] +
                          [f"{absl[(k, 'insert_only')] or 0:.3f} / "
                           f"{absl[(k, 'read_only')] or 0:.3f}" for k in rounds]] + per_round)
                 + "\n")
    first = {w: absl[(rounds[0], w)] for w in ("insert_only", "read_only")} if rounds else {}
    text += yardstick_prefault(runs, pmem, first)
    text += yardstick_dram(runs, d.get("persist_costs"))
    if not over_runs:
        return text, f"targets met in this run: {met} of {met + missed}"
    return text, f"targets met over every run at this code: {over_runs[0]} of {sum(over_runs)}"


def yardstick_history(history):
    """The targets over every run at this run's code (the history's last line names it): each
    ratio's median and range over all those runs' rounds; a target is met when that median
    meets it. A run with uncommitted code changes matches only itself. Returns the text and
    (met, missed)."""
    if not history:
        return "", None
    code = history[-1]["code"]
    same = [h for h in history if h["code"] == code] if "+dirty" not in code else history[-1:]
    text = (f"**Every run at this code** (`{code}`: the newest commit that changed src/, "
            f"include/, tools/ or the build), {len(same)} run(s) and "
            f"{sum(h['rounds'] for h in same)} rounds in all, from `{HISTORY_FILE}` (one line per "
            "`make yardstick`, never edited). Each ratio is to absl-btree in its own round; the "
            "median and the range are over every round of every run, and a target counts as met "
            "when that median meets it:\n\n")
    rows, met, missed = [], 0, 0
    for t in (1, 2):
        for i in YARDSTICK:
            key = f"{i}@{t}"
            vals = {f: [x for h in same for x in h["ratios"].get(key, {}).get(f, []) if x is not None]
                    for f in ("insert", "lookup", "p999")}
            if not vals["insert"] or not vals["lookup"]:
                continue
            mi, ml = statistics.median(vals["insert"]), statistics.median(vals["lookup"])
            want, verdict = YARDSTICK_TARGETS.get((i, t)), "-"
            if want:
                ok = mi >= want[0] and ml >= want[1]
                met, missed = met + ok, missed + (not ok)
                verdict = f"{want[0]}x / {want[1]}x: " + ("met" if ok else "missed")
            tail = "-"
            if vals["p999"]:
                p = statistics.median(vals["p999"])
                tail = f"{fmt_ns(p)} ({fmt_ns(min(vals['p999']))}-{fmt_ns(max(vals['p999']))})"
                want_tail = YARDSTICK_P999.get((i, t))
                if want_tail:
                    ok = p <= want_tail
                    met, missed = met + ok, missed + (not ok)
                    tail += f", target {fmt_ns(want_tail)}: {'met' if ok else 'missed'}"
            rows.append([NAMES.get(i, i), t, f"{rx(mi)} ({rx(min(vals['insert']))}-"
                         f"{rx(max(vals['insert']))})", f"{rx(ml)} ({rx(min(vals['lookup']))}-"
                         f"{rx(max(vals['lookup']))})", len(vals["insert"]), verdict, tail])
    text += table(["index", "threads", "insert ratio: median (range)",
                   "lookup ratio: median (range)", "rounds", "target (insert / lookup)",
                   "insert p99.9: median (range)"], rows) + "\n"
    runs = []
    for h in same:
        m = h.get("machine") or {}
        absl = h.get("absl_mops", {})
        span = lambda xs: (f"{min(x for x in xs if x):.3f}-{max(x for x in xs if x):.3f}"
                           if any(xs) else "-")
        runs.append([h["time"], h["commit"], h["rounds"],
                     "-" if not h.get("load") else f"{h['load'][0]:.1f}-{h['load'][1]:.1f}",
                     f"{span(absl.get('insert_only', []))} / {span(absl.get('read_only', []))}",
                     m.get("cpu_model", "-"), f"{m.get('thp_enabled', '-')}, "
                     f"{m.get('thp_shmem_enabled', '-')}",
                     f"{m.get('pool_fs', '-')}{' huge=' + m['pool_fs_huge'] if m.get('pool_fs_huge') else ''}"])
    text += ("The runs (absl-btree's own Mops/s, insert / lookup, over their rounds; THP: the "
             "heap's and the shared memory's setting):\n\n" +
             table(["when", "commit", "rounds", "load", "absl-btree Mops/s", "CPU", "THP",
                    "pool file system"], runs) + "\n")
    return text, (met, missed)


def rounds_met(got, ok):
    """", met in k of n rounds" when there were rounds: a median near its target is met in
    some rounds and missed in others, since absl-btree's own speed moves between rounds."""
    return f", {sum(1 for g in got if ok(g))} of {len(got)} rounds" if len(got) > 1 else ""


def of_round(runs, k):
    """The runs of round k (runs made before rounds existed count as round 0)."""
    return [r for r in runs if r.get("round", 0) == k]


def yardstick_round(pmem, absl, i, t, k):
    """Index i at t threads in round k: its figures and ratios to that round's absl-btree."""
    pick_k = of_round(pmem, k)
    ins = one(pick_k, index=i, threads=t, workload="insert_only")
    rd = one(pick_k, index=i, threads=t, workload="read_only")
    if not ins or not rd:
        return None
    return {"ins": ins["throughput_mops"], "rd": rd["throughput_mops"],
            "ri": ratio(ins["throughput_mops"], absl[(k, "insert_only")]),
            "rr": ratio(rd["throughput_mops"], absl[(k, "read_only")]),
            "p999": ins.get("latency_ns", {}).get("p999"), "fl": ins["flushes_per_op"],
            "pmb": ins.get("pm_bytes_per_record", 0), "load": load_note(rd)}


def median_of(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def yardstick_prefault(runs, plain, absl):
    """The persistent indexes on pools mapped ahead (--prefault), beside their rows above:
    what first-touch page faults cost. Ratios to the same absl-btree runs (its heap is not
    prefaulted)."""
    rows = []
    for r in runs:
        if not r.get("prefault") or r["workload"] != "insert_only":
            continue
        i, t = r["index"], r["threads"]
        rd = one(runs, index=i, threads=t, workload="read_only", prefault=True) or {}
        before = one(plain, index=i, threads=t, workload="insert_only") or {}
        lat = r.get("latency_ns", {})
        rows.append([NAMES.get(i, i), t, rx(ratio(r["throughput_mops"], absl["insert_only"])),
                     rx(ratio(rd.get("throughput_mops"), absl["read_only"])),
                     fmt_ns(lat.get("p999")),
                     fmt_ns(before.get("latency_ns", {}).get("p999")), load_note(r)])
    if not rows:
        return ""
    return ("The persistent indexes again, each pool's pages mapped before its preload "
            "(`--prefault`, docs/bench.md), so that no timed operation pays a first-touch "
            "page fault:\n\n" +
            table(["index", "threads", "insert ratio", "lookup ratio", "insert p99.9",
                   "insert p99.9 above", "load"], rows) + "\n")


def yardstick_dram(runs, costs):
    """What persisting costs: the same runs in dram mode (no flush, no fence), and the PM
    layer's microbenchmark."""
    dram = [r for r in runs if r.get("pm_mode") == "dram"]
    ref = {w: (one(dram, index="absl-btree", workload=w) or {}).get("throughput_mops")
           for w in ("insert_only", "read_only")}
    rows = []
    for r in dram:
        if r["index"] == "absl-btree" or r["workload"] != "insert_only":
            continue
        rd = one(dram, index=r["index"], workload="read_only") or {}
        rows.append([NAMES.get(r["index"], r["index"]), f"{r['throughput_mops']:.3f}",
                     rx(ratio(r["throughput_mops"], ref["insert_only"])),
                     rx(ratio(rd.get("throughput_mops"), ref["read_only"])),
                     f"{r['fences_per_op']:.2f}", load_note(r)])
    text = ""
    if rows:
        text += ("The same at 1 thread in `dram` mode, where a persist issues no flush and no "
                 "fence (ratios to absl-btree in that process):\n\n")
        text += table(["index", "insert Mops/s", "insert ratio", "lookup ratio",
                       "fences/insert", "load"], rows) + "\n"
    if costs:
        text += (f"`dptree microbench` in the same script (load {costs['load']:.1f}): a persist "
                 f"(flush + fence) of one line costs {costs['one_line']:.0f} ns and of four lines "
                 f"under one fence {costs['four_lines']:.0f} ns, but four lines persisted one "
                 f"after another, each fenced before the next is written, cost "
                 f"{costs['four_ordered']:.0f} ns. An index pays for each fence its ordering "
                 "needs (docs/peers.md, FAST_FAIR).\n\n")
    return text


def tries_rows(rs, absl, order, indexes):
    """Mops/s of each mix, and in brackets the ratio to absl::btree_map at 1 thread on the same
    keys and mix (its run in the same script)."""
    rows = []
    for w in order:
        v = {i: (one(rs, index=i, workload=w) or {}).get("throughput_mops") for i in indexes}
        ref = (one(absl, workload=w) or {}).get("throughput_mops")
        rows.append([w, *[f"{v[i]:.3f} ({rx(ratio(v[i], ref))})" if v[i] else "-"
                          for i in indexes]])
    return rows


def tries_kind(r):
    """A tries run's key kind: its `kind` (a STRING_KINDS name), or for runs written before it
    was recorded, u64 or u64be by its key type."""
    return r.get("kind") or ("u64" if r.get("key_type", "u64") == "u64" else "u64be")


def kind_title(kind):
    return {"u64": "integer", "u64be": "8-byte string"}.get(kind, kind)


def tries_reversal(runs, n):
    """The survey's finding, as this run has it: the best B+-tree and the best trie on lookups
    and inserts, 1 thread, for each key kind (integer keys, 8-byte string keys, then the
    random strings where the run has them)."""
    out = []
    for kind, _ in STRING_KINDS:
        for w in ("read_only", "insert_only"):
            rs = [r for r in runs if r["size"] == n and r["threads"] == 1 and
                  tries_kind(r) == kind and r["workload"] == w]
            best = lambda names: max(((r["throughput_mops"], r["index"]) for r in rs
                                      if r["index"] in names), default=None)
            b, t = best(BTREES), best(TRIE_NAMES)
            if b and t:
                lead = NAMES.get(b[1], b[1]) if b[0] >= t[0] else NAMES.get(t[1], t[1])
                out.append(f"{kind_title(kind)} keys, {w}: best "
                           f"B+-tree {NAMES.get(b[1], b[1])} {b[0]:.3f}, best trie "
                           f"{NAMES.get(t[1], t[1])} {t[0]:.3f} Mops/s: **{lead} ahead** "
                           f"({rx(max(b[0], t[0]) / min(b[0], t[0]))})")
    return out


def body_tries(d, cfg):
    runs, order = d["runs"], d["order"]
    text = ("Keys preloaded once per index, size, key kind and thread count (`dptree bench "
            f"--load-once`), pmem mode; then the mixes for {cfg.seconds} s each, in the order "
            f"{', '.join(order)} (scan_insert: 95% scans of 100 records). Integer keys, then the "
            "same keys as 8-byte big-endian strings (`--key-type string --key-set u64be`, the "
            "survey's \"8B string keys\"), and at the smaller size random strings of 16, 64 "
            "and 256 bytes (`--key-set random --key-length L`, the survey's variable-length "
            "keys). Throughput in Mops/s and, in brackets, relative to "
            "absl::btree_map at 1 thread on the same keys and mix, in the same script. Each "
            "table's heading gives the 1-minute load averages around its processes.\n\n")
    if d.get("no_strings"):
        text += ("No string form (left out of the string runs): " +
                 ", ".join(NAMES.get(i, i) for i in d["no_strings"]) + ".\n\n")
    heads = []
    for n in d["sizes"]:
        rev = tries_reversal(runs, n)
        text += f"## {human(n)} keys\n\nThe survey's reversal at 1 thread:\n\n"
        text += "".join(f"- {line}\n" for line in rev) + "\n"
        heads += [f"{human(n)}: " + "; ".join(line.split(": **")[1].rstrip("*)").split("** (")[0]
                                              for line in rev[:1] + rev[2:3])] if rev else []
        for kind, _ in STRING_KINDS:
            for t in (1, 2):
                rs = [r for r in runs if r["size"] == n and r["threads"] == t and
                      tries_kind(r) == kind]
                if not rs:
                    continue
                indexes = [i for i in TRIES if pick(rs, index=i)]
                absl = [r for r in runs if r["size"] == n and r["threads"] == 1 and
                        r["index"] == "absl-btree" and tries_kind(r) == kind]
                loads = sorted({load_note(r) for r in rs})
                text += (f"### {kind_title(kind)} keys, {t} "
                         f"thread{'s' if t > 1 else ''} (load {loads[0]} .. {loads[-1]})\n\n")
                text += table(["mix", *[NAMES.get(i, i) for i in indexes]],
                              tries_rows(rs, absl, order, indexes)) + "\n"
        rs = [r for r in runs if r["size"] == n and r["threads"] == 1 and
              r["workload"] == "insert_only" and r.get("key_type", "u64") == "u64"]
        rows = []
        for r in rs:
            p = PAPER_TABLE1_FF.get(r["index"])
            rows.append([NAMES.get(r["index"], r["index"]), f"{r['flushes_per_op']:.2f}",
                         f"{r['fences_per_op']:.2f}", f"{r.get('pm_bytes_per_record', 0):.1f}",
                         f"{p[0]} / {p[1]}" if p else "-"])
        text += ("Flushes and fences per insert (integer keys, 1 thread; the insert run drains "
                 "what it buffers), PM bytes per record, beside the DPTree paper's Table 1:\n\n")
        text += table(["index", "flushes/insert", "fences/insert", "PM B/record",
                       "paper (flushes / fences)"], rows) + "\n"
        one_t = [r for r in runs if r["size"] == n and r["threads"] == 1 and
                 r.get("key_type", "u64") == "u64"]
        dl, wl = (one(one_t, index=i, workload="read_only") for i in ("dptree", "wort"))
        ds, ws = (one(one_t, index=i, workload="scan_insert") for i in ("dptree", "wort"))
        if dl and wl and ds and ws:
            text += (f"DPTree against WORT: lookups "
                     f"{rx(ratio(dl['throughput_mops'], wl['throughput_mops']))} (Figure 8b: up "
                     f"to {PAPER_WORT['lookup']}x), scan_insert "
                     f"{rx(ratio(ds['throughput_mops'], ws['throughput_mops']))} (Figure 8c: "
                     f"scans up to {PAPER_WORT['scan']}x).\n\n")
    text += ("ROART, PACTree and WORT are our implementations from their papers "
             "(docs/indexes.md says where each departs); LB+-Tree and FPTree likewise. The survey "
             "ran the authors' code on Optane at 100M keys and up to 40 threads; this machine has "
             "2 cores and DRAM under `clwb`, so the comparison is of designs, not of their "
             "original numbers.\n")
    return text, "; ".join(heads)


def body_strings(d, cfg):
    runs = d["runs"]
    text = (f"{human(d['records'])} keys preloaded once per index and key kind (`dptree bench "
            "--load-once`), pmem mode, one thread; lookups (read_only) first, then inserts of "
            f"new keys (insert_only), {cfg.seconds} s each; an index that buffers writes drains "
            "them inside the insert run. `u64be` keys are the integer keys as 8 big-endian "
            "bytes, so both kinds hold the same keys in the same order. \"of u64\" is the "
            "index's speed as a share of its own speed on integer keys in the same script; "
            "the last column is the 1-minute load average before/after the process.\n\n")
    rows, head = [], ""
    for kind, _ in STRING_KINDS:
        for i in STRINGS:
            ins = one(runs, index=i, kind=kind, workload="insert_only")
            rd = one(runs, index=i, kind=kind, workload="read_only")
            if not ins or not rd:
                continue
            base_i = one(runs, index=i, kind="u64", workload="insert_only") or {}
            base_r = one(runs, index=i, kind="u64", workload="read_only") or {}
            ri = ratio(ins["throughput_mops"], base_i.get("throughput_mops"))
            rr = ratio(rd["throughput_mops"], base_r.get("throughput_mops"))
            rows.append([kind, NAMES.get(i, i), f"{ins['throughput_mops']:.3f}", rx(ri),
                         f"{rd['throughput_mops']:.3f}", rx(rr), f"{ins['flushes_per_op']:.2f}",
                         f"{ins.get('pm_bytes_per_record', 0):.1f}", load_note(rd)])
            if i == "dptree" and kind == "u64be" and ri is not None and rr is not None:
                ok = ri >= STRING_GOAL and rr >= STRING_GOAL
                head = (f"DPTree on 8-byte string keys: inserts {rx(ri)}, lookups {rx(rr)} of its "
                        f"integer speed (goal {STRING_GOAL}x: {'met' if ok else 'missed'})")
    text += table(["keys", "index", "insert Mops/s", "of u64", "lookup Mops/s", "of u64",
                   "flushes/insert", "PM B/record", "load"], rows) + "\n"
    if head:
        text += head + ".\n"
    long_keys, held = long_key_rows(runs)
    if long_keys:
        text += ("\nThe DPTrees' long-key targets: flushes per insert at most the key's lines + 3, "
                 "PM bytes per record at most 1.3x the key and value + 40, inserts at least "
                 "FPTree's and lookups at least 1.5x its (in the same process):\n\n" +
                 table(["keys", "index", "flushes/insert", "PM B/record", "inserts x FPTree",
                        "lookups x FPTree"], long_keys))
        head = "; ".join(x for x in (head, f"long keys: {sum(held)} of {len(held)} targets met")
                         if x)
    more, met = against_roart(d.get("roart_rounds") or [])
    text += more
    return text, "; ".join(x for x in (head, met) if x)


def key_bytes(kind):
    """The key length of a string kind (u64be: 8 bytes), or None for integer keys."""
    if kind == "u64be":
        return 8
    return int(kind.split()[1]) if kind.startswith("random") else None


def long_key_rows(runs):
    """The DPTrees' long-key targets at each string kind of the run: a row per index and kind,
    each cell a figure, its bound and whether it holds (a miss in bold); and whether each target
    checked held."""
    rows, held = [], []
    for kind, _ in STRING_KINDS:
        kb = key_bytes(kind)
        if kb is None:
            continue
        fp_i = one(runs, index="fptree", kind=kind, workload="insert_only") or {}
        fp_r = one(runs, index="fptree", kind=kind, workload="read_only") or {}
        for i in ("dptree", "cdptree"):
            ins = one(runs, index=i, kind=kind, workload="insert_only")
            rd = one(runs, index=i, kind=kind, workload="read_only")
            if not ins or not rd:
                continue
            checks = [(ins["flushes_per_op"], (kb + 63) // 64 + 3, True, ".2f"),
                      (ins.get("pm_bytes_per_record", 0), 1.3 * (kb + 8) + 40, True, ".1f"),
                      (ratio(ins["throughput_mops"], fp_i.get("throughput_mops")), 1.0, False,
                       ".2f"),
                      (ratio(rd["throughput_mops"], fp_r.get("throughput_mops")), 1.5, False,
                       ".2f")]
            cells = []
            for v, goal, at_most, f in checks:
                if v is None:
                    cells.append("-")
                    continue
                ok = v <= goal if at_most else v >= goal
                held.append(ok)
                cell = f"{v:{f}} ({'<=' if at_most else '>='} {goal:{f}}: {'met' if ok else 'missed'})"
                cells.append(cell if ok else f"**{cell}**")
            rows.append([kind, NAMES.get(i, i)] + cells)
    return rows, held


def median_range(xs, digits=2, unit="x"):
    """'median (low-high)' of the values given, or '-'."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m, lo, hi = statistics.median(xs), min(xs), max(xs)
    return f"{m:.{digits}f}{unit} ({lo:.{digits}f}-{hi:.{digits}f})"


def against_roart(runs):
    """The strings experiment's rounds against ROART: per key length and DPTree, the ratios of
    its lookups and inserts to ROART's in the same round, their median and range; and a line of
    how many targets the medians meet."""
    if not runs:
        return "", ""
    rounds = sorted({r["round"] for r in runs})
    loads = [x for r in runs for x in r.get("load", [])]
    text = (f"\n## Against ROART, {len(rounds)} rounds of alternating processes\n\n"
            "One process per index and key length, each on its own preload (`--load-once`), "
            "lookups then inserts as above; a round runs every index at 16, 64 and 256 bytes, "
            "in reverse order every other round. A ratio is to ROART's speed in the same round; "
            "the table gives their median and, in brackets, their range. One process per index "
            "can land either way on this machine, which is why there are rounds. 1-minute load "
            f"{min(loads):.1f}-{max(loads):.1f} over the rounds.\n\n" if loads else "\n")
    rows, verdicts, held = [], [], []
    kinds = [k for k, _ in STRING_KINDS if k.startswith("random")]
    for kind in kinds:
        for i in [x for x in STRINGS_ROART if x != "roart"]:
            got = {}
            for w in ("read_only", "insert_only"):
                got[w] = [ratio((one(runs, index=i, kind=kind, workload=w, round=n) or {})
                                .get("throughput_mops"),
                                (one(runs, index="roart", kind=kind, workload=w, round=n) or {})
                                .get("throughput_mops")) for n in rounds]
            if not any(x is not None for x in got["read_only"] + got["insert_only"]):
                continue
            rows.append([kind, NAMES.get(i, i), median_range(got["read_only"]),
                         median_range(got["insert_only"])])
            if kind not in ROART_GOAL_KINDS:
                continue
            for w, what in (("read_only", "lookups"), ("insert_only", "inserts")):
                m = median_of(got[w])
                if m is not None:
                    held.append(m >= ROART_GOAL)
                    verdicts.append(f"{NAMES.get(i, i)}, {kind} keys: {what} {rx(m)} ROART's "
                                    f"(median; target {ROART_GOAL:.1f}x: "
                                    f"**{'met' if held[-1] else 'missed'}**)")
    mops = []
    for kind in kinds:
        for w in ("read_only", "insert_only"):
            xs = [(one(runs, index="roart", kind=kind, workload=w, round=n) or {})
                  .get("throughput_mops") for n in rounds]
            mops.append(median_range(xs, 3, ""))
    text += table(["keys", "index", "lookups x ROART", "inserts x ROART"], rows) + "\n"
    text += ("ROART's own Mops/s, median (range), lookups and inserts at 16, 64 and 256 bytes: "
             + "; ".join(f"{mops[2 * k]}, {mops[2 * k + 1]}" for k in range(len(kinds))) +
             ".\n\n")
    text += "".join(f"- {v}\n" for v in verdicts)
    return text, (f"against ROART at {' and '.join(k.split()[1] for k in ROART_GOAL_KINDS)} "
                  f"bytes, {sum(held)} of {len(held)} targets met (medians of {len(rounds)} "
                  "rounds)" if held else "")


def size_name(n):
    """2^k (and its rounded count) for a power of two, else the count."""
    k = n.bit_length() - 1
    return f"2^{k} ({n / 1e6:.3g}M)" if n == 1 << k and k >= 17 else human(n)


def scale_row(rs, absl, n):
    """One index at one size: the build, the insert window, lookups, costs, memory."""
    ins, rd = one(rs, workload="insert_only"), one(rs, workload="read_only")
    a_ins, a_rd = one(absl, workload="insert_only"), one(absl, workload="read_only")
    if not ins or not rd:
        return None
    # --load-once: the first run (read_only) carries the preload's time, drain included
    build = n / rd["preload_seconds"] / 1e6 if rd.get("preload_seconds") else None
    a_build = (n / a_rd["preload_seconds"] / 1e6
               if a_rd and a_rd.get("preload_seconds") else None)
    rec = ins.get("recovery_seconds")
    lat = ins.get("latency_ns", {})
    return {"build": build, "build_x": ratio(build, a_build),
            "insert": ins["throughput_mops"],
            "insert_x": ratio(ins["throughput_mops"], a_ins and a_ins["throughput_mops"]),
            "lookup": rd["throughput_mops"],
            "lookup_x": ratio(rd["throughput_mops"], a_rd and a_rd["throughput_mops"]),
            "flushes": ins["flushes_per_op"], "pmb": ins.get("pm_bytes_per_record", 0),
            "p9999_us": lat.get("p9999", 0) / 1e3, "max_ms": lat.get("max", 0) / 1e6,
            # the longest a write waited for a merge (the DPTrees' own figure, over the index's
            # life): what of the longest insert a merge caused, the rest being time descheduled
            "merge_wait_ms": ins.get("index_stats", {}).get("merge_wait_max_ms"),
            "recovery_s": rec, "recovery_ns": rec * 1e9 / ins["final_records"]
            if rec is not None and ins.get("final_records") else None,
            "pm_peak_gib": ins.get("pm_peak_bytes", 0) / 2**30,
            "rss_gib": ins.get("peak_rss_bytes", 0) / 2**30, "load": load_note(ins)}


def fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def scale_verdicts(rows, sizes):
    """The targets against the smallest and the largest size of each line."""
    out = []
    lo, hi = sizes[0], sizes[-1]
    for (i, t), by in rows.items():
        if i == "absl-btree" or lo not in by or hi not in by or lo == hi:
            continue
        a, b = by[lo], by[hi]
        name = NAMES.get(i, i) + (f", {t} threads" if t > 1 else "")
        for what, key, worse in (("build ratio", "build_x", -1), ("insert ratio", "insert_x", -1),
                                 ("lookup ratio", "lookup_x", -1), ("flushes/insert", "flushes", 1)):
            if a[key] is None or b[key] is None or a[key] == 0:
                continue
            drift = (b[key] - a[key]) / a[key] * worse
            ok = drift <= SCALE_DRIFT
            change = f"{drift * 100:.0f}% worse" if drift >= 0 else f"{-drift * 100:.0f}% better"
            out.append(f"{name}: {what} {a[key]:.2f} at {size_name(lo)} -> {b[key]:.2f} at "
                       f"{size_name(hi)} ({change}; target at most {SCALE_DRIFT * 100:.0f}% "
                       f"worse: **{'met' if ok else 'missed'}**)")
        if b["max_ms"] is not None:
            ok = b["max_ms"] <= SCALE_MAX_WAIT_MS
            waited = ("" if b.get("merge_wait_ms") is None else
                      f"; the longest wait for a merge {b['merge_wait_ms']:.1f} ms")
            out.append(f"{name}: longest insert at {size_name(hi)} {b['max_ms']:.1f} ms (target <= "
                       f"{SCALE_MAX_WAIT_MS} ms: **{'met' if ok else 'missed'}**{waited})")
        if i == "dptree" and b["recovery_ns"] is not None:
            ok = b["recovery_ns"] <= SCALE_DP_RECOVERY_NS
            out.append(f"{name}: recovery {b['recovery_ns']:.1f} ns a record at {size_name(hi)} "
                       f"(target <= {SCALE_DP_RECOVERY_NS}: **{'met' if ok else 'missed'}**)")
        if i == "cdptree" and t == 2 and b["recovery_s"] is not None and hi >= 2**27:
            ok = b["recovery_s"] < SCALE_CDP_RECOVERY_S
            out.append(f"{name}: recovery {b['recovery_s']:.2f} s at {size_name(hi)} (target < "
                       f"{SCALE_CDP_RECOVERY_S} s at 2^27: **{'met' if ok else 'missed'}**)")
    return out


def scale_absolute(rows, sizes):
    """The ratio targets divide by absl-btree at each size, whose own speed falls with the
    size too: each line's absolute change beside them, so a rising ratio is read right."""
    lo, hi = sizes[0], sizes[-1]
    out = []
    for (i, t), by in rows.items():
        if lo not in by or hi not in by or lo == hi:
            continue
        a, b = by[lo], by[hi]
        parts = [f"{what} {a[key]:.3f} -> {b[key]:.3f} ({(b[key] / a[key] - 1) * 100:+.0f}%)"
                 for what, key in (("build", "build"), ("insert", "insert"), ("lookup", "lookup"))
                 if a[key] and b[key] is not None]
        out.append(f"{NAMES.get(i, i) + (f', {t} threads' if t > 1 else '')}: " +
                   ", ".join(parts))
    if not out:
        return ""
    return (f"Absolute Mops/s from {size_name(lo)} to {size_name(hi)} (every index slows as "
            "its working set leaves the caches and the TLB's reach; a ratio rises where the "
            "reference slows more):\n\n" + "".join(f"- {line}\n" for line in out) + "\n")


def body_scale(d, cfg):
    runs, sizes = d["runs"], d["sizes"]
    text = ("One `dptree bench` process per index and size, pmem mode: a preload of the size "
            "(inserts of random keys into an empty index: **build**), then on it lookups "
            "(read_only) and inserts of new keys (insert_only), a sixth of the size each "
            "(`--load-once`; the insert window is longer than what DPTree buffers before a merge "
            "at R = 0.1, so a merge falls inside it and its wait is in the latencies), every "
            "operation's latency measured (`--sample-rate 1`), then recovery (`--recovery`). "
            "Ratios (x) are to absl::btree_map at the same size in the same script. Flushes per "
            "insert and PM bytes per record are the insert window's; peak PM is the pool's "
            "high-water mark (`pm_peak_bytes`), peak RSS the process's (`peak_rss_bytes`, the "
            "generated keys included); recovery per record divides by the records held after "
            "the window. Merge wait is the DPTrees' own figure (`merge_wait_max_ms`): the "
            "longest a write waited for a merge over the index's life, the preload's merges "
            "included (a merge run inline, or the concurrent tree's Front hand-over); the rest "
            "of the longest insert is time the writer was descheduled. The concurrent DPTree "
            "runs at one thread twice: merging inline in its writer (the registry's default at "
            "one thread), and with `--option merge_steps=1` (**merge in steps**: the writer runs "
            "each merge a partition at a time between its writes, so a write waits for one "
            "step; docs/cdptree.md, \"A merge in steps\"). The last column is the 1-minute "
            "load before/after the process.\n\n")
    rows = {}
    absl = lambda n: [r for r in runs if r["size"] == n and r["index"] == "absl-btree"]
    lines = []
    for n in sizes:
        tab = []
        for i in SCALE_ROWS:
            for t in sorted({r["threads"] for r in runs if r["index"] == i}):
                rs = [r for r in runs if r["size"] == n and r["index"] == i and r["threads"] == t]
                row = scale_row(rs, absl(n), n)
                if not row:
                    continue
                rows.setdefault((i, t), {})[n] = row
                tab.append([NAMES.get(i, i) + (f" ({t} thr)" if t > 1 else ""),
                            f"{fmt(row['build'], '.3f')} ({rx(row['build_x'])})",
                            f"{row['insert']:.3f} ({rx(row['insert_x'])})",
                            f"{row['lookup']:.3f} ({rx(row['lookup_x'])})",
                            f"{row['flushes']:.2f}", f"{row['pmb']:.1f}",
                            f"{row['p9999_us']:.1f}", f"{row['max_ms']:.2f}",
                            fmt(row["merge_wait_ms"], ".2f"),
                            fmt(row["recovery_s"], ".3f"), fmt(row["recovery_ns"], ".1f"),
                            f"{row['pm_peak_gib']:.2f}", f"{row['rss_gib']:.2f}", row["load"]])
        if tab:
            text += f"## {size_name(n)} keys\n\n" + table(
                ["index", "build Mops/s", "insert Mops/s", "lookup Mops/s", "flushes/insert",
                 "PM B/record", "insert p99.99 us", "insert max ms", "merge wait max ms",
                 "recovery s",
                 "recovery ns/record", "peak PM GiB", "peak RSS GiB", "load"], tab) + "\n"
    lines = scale_verdicts(rows, sizes)
    if lines:
        text += ("## Targets, smallest size against largest\n\n" +
                 "".join(f"- {line}\n" for line in lines) + "\n" + scale_absolute(rows, sizes))
    missed = sum("missed" in line for line in lines)
    head = (f"{size_name(sizes[0])} to {size_name(sizes[-1])} keys: {len(lines) - missed} of "
            f"{len(lines)} targets met")
    return text, head


BODIES = {"table1": body_table1, "fig8ab": body_fig8ab, "fig8c": body_fig8c, "fig8d": body_fig8d,
          "fig10": body_fig10, "fig11": body_fig11, "space": body_space, "fig12": body_fig12, "fig13": body_fig13,
          "peers": body_peers, "recovery": body_recovery, "yardstick": body_yardstick,
          "tries": body_tries, "strings": body_strings, "scale": body_scale}

HEADLINES = {}


def page(exp, d, cfg, figure):
    out = f"# {TITLES[exp]}\n\n"
    if "skipped" in d:
        HEADLINES[exp] = "skipped: " + d["skipped"]
        return out + f"**Skipped**: {d['skipped']}.\n"
    if "failed" in d:
        HEADLINES[exp] = "failed: " + d["failed"]
        return out + f"**Failed**: {d['failed']}\n"
    if not d.get("runs"):
        HEADLINES[exp] = "no runs"
        return out + "No runs were made.\n"
    body, head = BODIES[exp](d, cfg)
    HEADLINES[exp] = head
    out += body + "\n"
    if figure:
        out += f"![{TITLES[exp]}]({figure})\n\n"
    out += MODE_NOTE + f" This experiment took {d['seconds']:.0f} s.\n\n" + commands(d)
    return out


def status(exp, d):
    return "failed" if "failed" in d else "skipped" if "skipped" in d else "ok"


def earlier(out, exp):
    """The index entry of a page an earlier run wrote (raw/<exp>.json), or None."""
    try:
        with open(os.path.join(out, "raw", f"{exp}.json")) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    if "status" not in d:
        return None
    return d


def readme(only, data, info, out_dir):
    out = "# Reproducing the DPTree paper's evaluation\n\n"
    out += ("`scripts/reproduce` re-runs §4 of the DPTree paper (Zhou et al., PVLDB 13(4), 2019) "
            "with `dptree bench` at sizes that fit this machine and writes one page per "
            "experiment, our numbers beside the paper's. The paper ran on two Xeon Platinum "
            "8263C with Optane DC PMM; this machine has no persistent memory: pools live in "
            "`/dev/shm` and `pmem` mode issues the real flush instruction and fence on DRAM, so "
            "the flush and fence *counts* are comparable, the latencies only in their "
            "ordering.\n\n")
    out += table(["", ""], [
        ["date", info["date"]],
        ["commit", f"`{info['commit']}`" + (" (with uncommitted changes)" if info["dirty"] else "")],
        ["command", f"`{info['command']}`"],
        ["machine", f"{info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB, Linux "
                    f"{info['kernel']}; flush instruction `{info['flush']}`; RTM "
                    f"{'yes' if info['rtm'] else 'no'}"],
        ["sizes", f"N = {human(info['keys'])} keys (figures: N/4, N/2, N); "
                  f"{info['seconds']} s per timed run; modes {', '.join(info['modes'])}"],
        ["time", f"{info['runs']} bench runs in {info['total_seconds'] / 60:.1f} min; load "
                 f"average {info['load'][0]:.1f} at the start, {info['load'][1]:.1f} at the end "
                 f"({info['cores']} cores: above that, other work shared the CPUs and the "
                 "timings are noisy; counts of flushes and fences are not affected)"],
    ] + ([["note", info["note"]]] if info.get("note") else []))
    out += "\n"
    rows = []
    for exp in TITLES:
        link = f"[{TITLES[exp]}]({exp}.md)"
        if exp in only:
            rows.append([link, status(exp, data.get(exp, {})), HEADLINES.get(exp, "")])
            continue
        d = earlier(out_dir, exp)  # a partial rerun keeps the pages it did not redo
        if d:
            rows.append([link, d["status"], d["headline"] + f" (run {d['when']}, "
                         f"commit `{d.get('commit', '?')}`: `{d['by']}`)"])
    out += table(["experiment", "status", "here (paper)"], rows)
    out += ("\nRaw `dptree bench --json` output of every run is in `raw/`. Run "
            "`scripts/reproduce --help` for the options (`--quick`, `--full`, `--keys`, "
            "`--only`).\n")
    return out
