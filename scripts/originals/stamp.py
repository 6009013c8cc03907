#!/usr/bin/env python3
"""Stamps one harness JSON line (scripts/originals/compare): its round, the load before and
after, the commit of the code run, the start of the run, and the machine state that moves the
figures between runs (docs/peers.md, "Against the originals"), as `dptree bench` records it:
THP settings, the pool folder and its file system, the heap's malloc tunables, CPU model, kernel and whether a DAMON monitor runs."""
import json
import os
import platform
import sys


def first_line(path):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return ""


def selected(path):
    """A sysfs choice list ("always [madvise] never") reduced to its selected value."""
    line = first_line(path)
    if "[" in line and "]" in line:
        return line[line.index("[") + 1:line.index("]")]
    return line


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def shm_fs():
    """Type and huge= option of the mount that holds the pool folder (POOL_DIR, else /dev/shm),
    where both sides' PM files are."""
    where = os.path.realpath(os.environ.get("POOL_DIR") or "/dev/shm")
    best, out = "", {"pool_dir": where, "pool_fs": "", "pool_fs_huge": ""}
    try:
        with open("/proc/mounts") as f:
            for line in f:
                dev, mnt, typ, opts = line.split()[:4]
                inside = where == mnt or where.startswith(mnt.rstrip("/") + "/")
                if inside and len(mnt) >= len(best):
                    best = mnt
                    huge = [o[5:] for o in opts.split(",") if o.startswith("huge=")]
                    out.update(pool_fs=typ, pool_fs_huge=huge[0] if huge else "")
    except OSError:
        pass
    return out


def damon_running():
    for pid in os.listdir("/proc"):
        if pid.isdigit() and first_line(f"/proc/{pid}/comm").startswith("kdamond"):
            return True
    return False


def main():
    line, rnd, l0, l1, commit, run = sys.argv[1:7]
    d = json.loads(line)
    thp = "/sys/kernel/mm/transparent_hugepage/"
    d.update(round=int(rnd), load_before=float(l0), load_after=float(l1), commit=commit, run=run)
    d["machine"] = {
        "thp_enabled": selected(thp + "enabled"),
        "thp_defrag": selected(thp + "defrag"),
        "thp_shmem_enabled": selected(thp + "shmem_enabled"),
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""),
        **shm_fs(),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "damon_running": damon_running(),
    }
    print(json.dumps(d))


if __name__ == "__main__":
    main()
