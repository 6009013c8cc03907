#!/usr/bin/env python3
"""Runs the real PiBench over libdptree_pibench.so for every persistent index and absl-btree,
and checks each run from PiBench's own output and from the pool it leaves (docs/pibench.md,
Tests).

For each index: the DPTree paper's five mixes, at 1 thread and (concurrent indexes) 2, with
8-byte integer keys and (indexes with a string form) 16-byte string keys. A run passes when
PiBench exits 0, its load was verified, it ran exactly the operations asked for, of the kinds
the mix names and no others, every find and update found its key (but the one key PiBench
reads without loading it), no scan came back empty and, through the audit shim, every scan
returned its records in order and as many as the index holds. Then `dptree check` reopens the
pool: it must recover, pass the index's check() and hold the records loaded plus those
inserted. Nothing may be left in the pool folder.

Exit status: 0 all runs passed, 1 a run failed, 77 PiBench's source was not found (skipped).
"""
import argparse
import concurrent.futures
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
HERE = Path(__file__).resolve().parent

# The DPTree paper's workloads as PiBench ratios (dptree bench --workload names).
MIXES = {
    "read_only": {"r": 1.0},
    "insert_only": {"i": 1.0},
    "read_update": {"r": 0.5, "u": 0.5},
    "scan_insert": {"s": 0.95, "i": 0.05},
    "mixed": {"r": 0.5, "u": 0.2, "s": 0.1, "i": 0.2},
}
KINDS = {"r": "Read", "i": "Insert", "u": "Update", "d": "Remove", "s": "Scan"}
# The failure each planted bug must cause (--fault).
FAULTS = {"vtable": "the load was not verified",
          "short_scan": "scans returned records out of order or too few"}


def say(*a):
    print(*a, flush=True)


def find_source(explicit):
    """PiBench's source folder, or None: PIBENCH_SRC, else the default CMake passed."""
    for cand in (os.environ.get("PIBENCH_SRC"), explicit):
        if cand and (Path(cand) / "src" / "benchmark.cpp").is_file() and \
                (Path(cand) / "include" / "tree_api.hpp").is_file():
            return Path(cand).resolve()
    return None


def build_pibench(src, out):
    """Builds PiBench (and its do-nothing wrapper, which scripts/pibench_table times) from a
    copy of `src` under `out`, once per build tree; returns the binary. A checkout without PCM
    (pcm/ empty: cloned without submodules) gets our stand-in."""
    out.mkdir(parents=True, exist_ok=True)
    binary = out / "build" / "src" / "PiBench"
    stamp = out / "source.txt"
    with open(out / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file() and stamp.is_file() and stamp.read_text() == str(src):
            return binary
        say(f"building PiBench from {src} in {out} (once per build tree)")
        copy = out / "source"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns("build", ".git", "googletest"))
        if not (copy / "pcm" / "cpucounters.h").is_file():
            (copy / "pcm").mkdir(exist_ok=True)
            for f in ("cpucounters.h", "Makefile"):
                shutil.copy(HERE / "pcm_standin" / f, copy / "pcm" / f)
        cxx = shutil.which("g++")  # OpenMP: GCC has libgomp, Debian's clang lacks libomp
        cfg = ["cmake", "-S", str(copy), "-B", str(out / "build"), "-DCMAKE_BUILD_TYPE=Release",
               "-DBUILD_TESTING=OFF"] + ([f"-DCMAKE_CXX_COMPILER={cxx}"] if cxx else [])
        for cmd in (cfg, ["cmake", "--build", str(out / "build"), "-j", str(os.cpu_count() or 2),
                          "--target", "pibench-bin", "dummy_wrapper"]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"building PiBench failed: {' '.join(cmd)}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
        stamp.write_text(str(src))
        return binary


def list_indexes(dptree):
    """(name, persistent, concurrent, strings) of every index, from `dptree bench --list`."""
    out = subprocess.run([dptree, "bench", "--list"], capture_output=True, text=True, check=True)
    rows = []
    for line in out.stdout.splitlines()[1:]:
        f = line.split()
        if len(f) >= 4:
            rows.append((f[0], f[1] == "yes", f[2] == "yes", f[3] == "yes"))
    return rows



def parse(out):
    """PiBench's figures: run time, operations, and each kind's completed/succeeded counts."""
    f = {"load_verified": "Load verified; benchmark started." in out}
    m = re.search(r"Run time: ([0-9.]+) milliseconds", out)
    ops = re.search(r"\tOperations: (\d+)", out)
    f["ms"] = float(m.group(1)) if m else None
    f["ops"] = int(ops.group(1)) if ops else None
    for kind in KINDS.values():
        for what in ("completed", "succeeded"):
            r = re.search(rf"- {kind} {what}: ([0-9.]+|inf|nan) ops/s", out)
            if r and f["ms"]:
                f[(kind, what)] = round(float(r.group(1)) * f["ms"] / 1000.0)
    s = re.search(r"pibench shim: (\d+) scans checked, (\d+) wrong", out)
    if s:
        f["scans_checked"], f["scans_wrong"] = int(s.group(1)), int(s.group(2))
    miss = re.search(r"pibench shim: (\d+) finds or updates missed, (\d+) of loaded records:"
                     r"([0-9a-f ]*)", out)
    if miss:
        f["missed"], f["missed_loaded"] = int(miss.group(1)), int(miss.group(2))
        f["missed_keys"] = miss.group(3).split()
    return f


class Run:
    def __init__(self, a, index, threads, key_size, mix, persistent):
        self.a, self.index, self.threads, self.ks, self.mix = a, index, threads, key_size, mix
        self.persistent = persistent
        self.shim = mix != "insert_only"  # insert_only loads our library straight into PiBench
        self.name = f"{index} {mix} t{threads} k{key_size}"

    def command(self, pool):
        a = self.a
        cmd = [str(a.pibench), str(a.shim if self.shim or a.fault else a.lib),
               "-n", str(a.records), "-p", str(a.ops), "-t", str(self.threads),
               "-k", str(self.ks), "-v", "8", "--pcm=false", "--sampling_ms", "10"]
        ratios = {"r": 0.0, **MIXES[self.mix]}
        for flag, v in ratios.items():
            cmd += [f"-{flag}", repr(v)]
        if pool:
            cmd += ["--pool_path", str(pool),
                    "--pool_size", str((64 << 20) + 64 * (a.records + a.ops))]
        return cmd

    def env(self):
        e = dict(os.environ, OMP_NESTED="true", DPTREE_PIBENCH_INDEX=self.index,
                 DPTREE_PIBENCH_RECORDS=str(self.a.records),
                 PIBENCH_SHIM_TARGET=str(self.a.lib), PIBENCH_SHIM_FAULT=self.a.fault or "",
                 PIBENCH_SHIM_RECORDS=str(self.a.records))
        if self.a.preload:
            e["LD_PRELOAD"] = self.a.preload
        return e

    def check_output(self, rc, out):
        """What is wrong with PiBench's run, from its exit status and output."""
        a, f = self.a, parse(out)
        if not f["load_verified"]:
            return [f"the load was not verified (exit {rc}): a find missed a loaded key, or the "
                    "run stopped before"]
        errs = [] if rc == 0 else [f"PiBench exited {rc}"]
        if f["ops"] != a.ops or not f["ms"]:
            return errs + [f"ran {f['ops']} operations in {f['ms']} ms; asked for {a.ops}"]
        done = {k: f.get((KINDS[k], "completed"), -1) for k in KINDS}
        ok = {k: f.get((KINDS[k], "succeeded"), -1) for k in KINDS}
        if sum(done.values()) != a.ops:
            errs.append(f"the kinds' counts {done} do not add up to {a.ops}")
        for k, n in done.items():
            if (n > 0) != (k in MIXES[self.mix]):
                errs.append(f"{n} {KINDS[k]} operations in a mix of {MIXES[self.mix]}")
        if ok["s"] != done["s"]:
            errs.append(f"{done['s'] - ok['s']} of {done['s']} scans found nothing")
        if self.threads == 1 and ok["i"] != done["i"]:
            errs.append(f"{done['i'] - ok['i']} of {done['i']} inserts of new keys failed")
        misses = done["r"] - ok["r"] + done["u"] - ok["u"]
        if not self.shim:
            return errs
        # PiBench reads ids 1..N+I and loads 0..N-1: only a key it has not loaded may miss.
        if f.get("missed") != misses:
            errs.append(f"PiBench counts {misses} failed finds and updates, the shim "
                        f"{f.get('missed')}")
        if f.get("missed_loaded"):
            errs.append(f"{f['missed_loaded']} finds or updates missed a loaded record, keys "
                        f"{f['missed_keys']}")
        if f.get("scans_checked") != done["s"]:
            errs.append(f"the shim checked {f.get('scans_checked')} of {done['s']} scans")
        if f.get("scans_wrong"):
            errs.append(f"{f['scans_wrong']} scans returned records out of order or too few")
        return errs

    def check_pool(self, pool, out):
        """dptree check on the pool: recovered, check() passed, every record there."""
        f = parse(out)
        r = subprocess.run([str(self.a.dptree), "check", "--json", str(pool)],
                           capture_output=True, text=True)  # a sanitized binary: no preload
        try:
            j = json.loads(r.stdout)
        except json.JSONDecodeError:
            return [f"dptree check printed no JSON (exit {r.returncode}): {r.stderr.strip()[-500:]}"]
        if not j.get("ok"):
            return [f"dptree check: {j.get('violations') or j.get('error')}"]
        want = self.a.records + f.get(("Insert", "succeeded"), 0)
        have = j.get("stats", {}).get("records")
        return [] if have == want else [f"the pool holds {have} records; {want} were written"]

    def run_pibench(self, pool):
        """PiBench's exit status (or why it has none), its output, and its pid."""
        with subprocess.Popen(self.command(pool), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=self.env()) as proc:
            try:
                out, err = proc.communicate(timeout=120)
                return proc.returncode, out + err, proc.pid
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                return "a timeout (120 s)", out + err, proc.pid

    def go(self):
        """Runs it; returns (name, [problems])."""
        pool = self.a.pool_dir / f"pibench-test-{os.getpid()}-{self.index}-{self.mix}-" \
            f"t{self.threads}-k{self.ks}.pool" if self.persistent else None
        if pool:
            pool.unlink(missing_ok=True)
        rc, out, pid = self.run_pibench(pool)
        errs = self.check_output(rc, out)
        if pool and not errs:
            errs += self.check_pool(pool, out)
        if pool:
            pool.unlink(missing_ok=True)
        # The wrapper names a temporary pool after its process (docs/pibench.md): none may stay.
        # Other processes' pools (the wrapper's unit test may run beside this) are not ours.
        left = [*self.a.pool_dir.glob(f"dptree-pibench-{pid}.pool"),
                *self.a.pool_dir.glob(f"dptree-pibench-{pid}-*.pool")]
        if left:
            errs.append(f"left behind: {sorted(map(str, left))}")
            for x in left:
                x.unlink(missing_ok=True)
        if errs and self.a.verbose:
            errs.append("output:\n" + out[-4000:])
        return self.name, errs


def runs(a, indexes):
    for name, persistent, concurrent, strings in indexes:
        for ks in [8] + ([16] if strings else []):
            for threads in [1] + ([2] if concurrent else []):
                for mix in MIXES:
                    yield Run(a, name, threads, ks, mix, persistent)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pibench-src", help="PiBench's source (PIBENCH_SRC overrides it)")
    p.add_argument("--work", required=True, type=Path, help="where PiBench is built (kept)")
    p.add_argument("--lib", required=True, type=Path, help="libdptree_pibench.so")
    p.add_argument("--shim", required=True, type=Path, help="the audit shim library")
    p.add_argument("--dptree", required=True, type=Path, help="the dptree tool (for check)")
    p.add_argument("--preload", default="", help="LD_PRELOAD for PiBench (a sanitizer runtime)")
    p.add_argument("--records", type=int, default=20000)
    p.add_argument("--ops", type=int, default=20000)
    p.add_argument("--index", action="append", help="only these indexes (default: every "
                   "persistent index and absl-btree)")
    p.add_argument("--mix", action="append", choices=list(MIXES), help="only these mixes")
    p.add_argument("--threads", type=int, action="append", choices=[1, 2],
                   help="only these thread counts")
    p.add_argument("--fault", choices=list(FAULTS),
                   help="plant a wrapper bug through the shim: then every run must fail, for "
                   "that bug's reason, and the exit status is 0 only if they all did")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--verbose", action="store_true", help="print the output of failed runs")
    a = p.parse_args()

    src = find_source(a.pibench_src)
    if not src:
        say("SKIPPED: PiBench's source was not found. Set PIBENCH_SRC to a checkout of "
            "https://github.com/sfu-dis/pibench (docs/pibench.md says how to build it without "
            "Intel PCM).")
        return SKIP
    a.pibench = build_pibench(src, a.work)
    a.pool_dir = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else \
        Path(os.environ.get("TMPDIR", tempfile.gettempdir()))
    indexes = [i for i in list_indexes(a.dptree)
               if (i[1] or i[0] == "absl-btree") and (not a.index or i[0] in a.index)]
    if a.index and len(indexes) != len(set(a.index)):
        sys.exit(f"unknown or volatile index among {a.index}")
    todo = [r for r in runs(a, indexes)
            if (not a.mix or r.mix in a.mix) and (not a.threads or r.threads in a.threads)]
    failed = caught = 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for name, errs in ex.map(Run.go, todo):
            say(f"{'FAIL' if errs else 'ok  '} {name}" + "".join(f"\n     {e}" for e in errs))
            failed += bool(errs)
            caught += bool(a.fault) and any(FAULTS[a.fault] in e for e in errs)
    say(f"{len(todo) - failed} of {len(todo)} PiBench runs passed "
        f"({a.records} records, {a.ops} operations each)")
    if a.fault:
        say(f"planted bug '{a.fault}' caught in {caught} of {len(todo)} runs")
        return 0 if todo and caught == len(todo) else 1
    return 1 if failed or not todo else 0


if __name__ == "__main__":
    sys.exit(main())
