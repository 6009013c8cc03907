// The state of the machine a run saw, recorded beside its figures: the things that have moved
// our throughput by a third between runs of the same code (docs/bench.md, "Machine state").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace dptree::bench {

struct MachineState {
  std::string cpu_model, kernel;
  unsigned cores = 0;
  // Transparent huge pages: the selected value of each setting ("madvise", "never", ...).
  std::string thp_enabled, thp_defrag, thp_shmem_enabled;
  // The pool's folder and its file system as /proc/mounts names them: type ("tmpfs",
  // "hugetlbfs", "ext4", ...), tmpfs's huge= option ("" when not set), and whether it is
  // mounted with dax.
  std::string pool_dir, pool_fs, pool_fs_huge;
  bool pool_dax = false;
  // 1-minute load average before and after the run (-1: not readable).
  double load1_before = -1, load1_after = -1;
  // This process's memory on 2 MiB pages at the run's end, from /proc/self/smaps_rollup:
  // the heap's (AnonHugePages) and the shared mappings' (ShmemPmdMapped + FilePmdMapped,
  // where a pool file's pages are counted).
  std::uint64_t heap_huge_kib = 0, pool_huge_kib = 0;
};

// What does not change during a run: the CPU, the kernel, the THP settings and the pool's
// file system. `pool_dir`: the folder pool files go to.
MachineState machine_state(const std::filesystem::path& pool_dir);
// The 1-minute load average, or -1.
double load1();
// Fills heap_huge_kib and pool_huge_kib from this process's current mappings.
void measure_huge_pages(MachineState& m);
// This process's peak resident memory in bytes (VmHWM of /proc/self/status; 0 if unreadable).
std::uint64_t peak_rss_bytes();

}  // namespace dptree::bench
