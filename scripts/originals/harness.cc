// One tight loop that drives a published original and our port over the same keys
// (scripts/originals/compare; docs/peers.md, "Against the originals"). Built one of these ways:
//   -DIMPL_FASTFAIR  the original FAST_FAIR's single-threaded tree (its btree.h)
//   -DIMPL_LBTREE    the original LB+-Tree (its lbtree.cc, whose main() is renamed)
//   -DIMPL_ROART     the original ROART (its Tree.h, linked with its ART and nvm_mgr sources)
//   -DIMPL_UTREE     the original uTree's single-threaded tree (its utree.h)
//   -DIMPL_PACTREE   the original PACTree (its pactree.h, linked with its two libraries)
//   -DIMPL_OURS      our index named by argv[2], through the public Index interface
// usage: harness KEYS [INDEX]. Inserts KEYS distinct keys in one order, then looks every key
// up in another, uses every result, and prints one JSON line.
// Environment (ours): PREFAULT=1 maps the pool's pages before the timed loop, as the original
// LB+-Tree's pool initialisation touches every page of its pool; POOL_GIB=N sizes the pool
// (default 2, the original LB+-Tree's; ROART needs more at 10M keys).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace {

std::vector<std::uint64_t> g_keys, g_order;

// Keys in [2^20, 2^62): no 0, none near the originals' signed sentinels, and no overflow in
// LB+-Tree's signed `key - k` comparisons.
void make_keys(std::size_t n) {
  std::mt19937_64 rng(20240611);
  g_keys.resize(n);
  for (auto& k : g_keys) k = (rng() & ((1ull << 62) - 1)) | 1ull << 20;
  std::vector<std::uint64_t> s = g_keys;
  std::sort(s.begin(), s.end());
  if (std::adjacent_find(s.begin(), s.end()) != s.end()) {
    std::fprintf(stderr, "harness: duplicate keys, change the seed\n");
    std::exit(2);
  }
  g_order = g_keys;
  std::shuffle(g_order.begin(), g_order.end(), std::mt19937_64(777));
}

// A file in /dev/shm named for this process, so that two runs at once keep apart.
std::string shm_file(const char* stem) {
  return "/dev/shm/dptree-originals-" + std::string(stem) + "-" + std::to_string(getpid());
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Usage {
  double sys_s;
  long faults;
};
Usage usage() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return {r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6, r.ru_minflt + r.ru_majflt};
}

// KiB of this process's memory mapped by 2 MiB pages (`field`: AnonHugePages for the heap and
// anonymous chunks, ShmemPmdMapped for a pool file), from /proc/self/smaps_rollup; -1 where
// the kernel has no such line.
long huge_kib(const char* field) {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  const std::size_t len = std::strlen(field);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, field, len) == 0 && line[len] == ':') kib = std::atol(line + len + 1);
  std::fclose(f);
  return kib;
}

}  // namespace

#if defined(IMPL_FASTFAIR)
#include "btree.h"
struct Impl {
  const char* name = "fastfair";
  const char* impl = "original";
  btree* t = new btree();
  void insert(std::uint64_t k, std::uint64_t v) { t->btree_insert((entry_key_t)k, (char*)v); }
  std::uint64_t lookup(std::uint64_t k) { return (std::uint64_t)t->btree_search((entry_key_t)k); }
  void finish() {}
};
#elif defined(IMPL_LBTREE)
#define main lbtree_original_main
#include "lbtree.cc"
#undef main
struct KeyOne : keyInput {
  key_type k;
  Int64 get_key(Int64) override { return k; }
};
struct Impl {
  const char* name = "lbtree";
  const char* impl = "original";
  const std::string pool_file = shm_file("lbtree.nvm");
  tree* t;
  Impl() {
    worker_id = 0;
    worker_thread_num = 1;                           // what its driver's `thread 1` sets
    the_thread_mempools.init(1, 1024ll * MB, 4096);  // DRAM: inner nodes
    the_thread_nvmpools.init(1, pool_file.c_str(), 2048ll * MB);  // the PM pool: leaves
    t = initTree((char*)nvmpool_alloc(4 * KB), false);
    nvmLogInit(1);
    initUseful();
  }
  // It cannot insert into an empty tree: its own driver bulkloads the first key.
  void first(std::uint64_t k) {
    KeyOne in;
    in.k = (key_type)k;
    t->bulkload(1, &in, 1.0);
  }
  void insert(std::uint64_t k, std::uint64_t v) { t->insert((key_type)k, (void*)v); }
  std::uint64_t lookup(std::uint64_t k) {
    int pos;
    void* p = t->lookup((key_type)k, &pos);
    return pos >= 0 ? (std::uint64_t)t->get_recptr(p, pos) : 0;
  }
  void finish() { std::filesystem::remove(pool_file); }
};
#elif defined(IMPL_ROART)
#include "Tree.h"
// Its keys are byte strings: an integer key goes in as its 8 bytes big-endian, as ours does,
// so that the trie is ordered by value. The value is 8 bytes stored in the leaf.
struct Impl {
  const char* name = "roart";
  const char* impl = "original";
  const std::string dir = shm_file("roart") + "-";  // its file is nvm_dir + "part.data"
  const std::string pool_file = dir + "part.data";
  PART_ns::Tree* t;
  Impl() {
    nvm_dir = dir.c_str();               // read once, when the tree maps its file
    std::filesystem::remove(pool_file);  // an existing file would be recovered
    t = new PART_ns::Tree();
  }
  void insert(std::uint64_t k, std::uint64_t v) {
    std::uint64_t be = __builtin_bswap64(k);
    PART_ns::Key key;
    key.Init(reinterpret_cast<char*>(&be), sizeof be, reinterpret_cast<char*>(&v), sizeof v);
    t->insert(&key);
  }
  std::uint64_t lookup(std::uint64_t k) {
    std::uint64_t be = __builtin_bswap64(k), none = 0;
    PART_ns::Key key;
    key.Init(reinterpret_cast<char*>(&be), sizeof be, reinterpret_cast<char*>(&none), sizeof none);
    PART_ns::Leaf* leaf = t->lookup(&key);
    if (leaf == nullptr) return 0;
    std::uint64_t v;
    std::memcpy(&v, leaf->GetValue(), sizeof v);
    return v;
  }
  void finish() {
    delete t;
    std::filesystem::remove(pool_file);
  }
};
#elif defined(IMPL_UTREE)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "utree.h"
// Its list nodes come from a bump pointer over a PM mapping that the program provides (its own
// test maps /dev/dax0.0): here a shared mapping of a 2 GiB /dev/shm file, ours' pool size.
char* start_addr;
char* curr_addr;
struct Impl {
  const char* name = "utree";
  const char* impl = "original";
  const std::string pool_file = shm_file("utree.pm");
  static constexpr std::size_t kSize = 2ull << 30;
  btree* t;
  Impl() {
    const int fd = open(pool_file.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, kSize) != 0) {
      std::fprintf(stderr, "harness: cannot create %s\n", pool_file.c_str());
      std::exit(2);
    }
    void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "harness: cannot map %s\n", pool_file.c_str());
      std::exit(2);
    }
    start_addr = curr_addr = static_cast<char*>(p);
    t = new btree();
  }
  void insert(std::uint64_t k, std::uint64_t v) { t->insert((entry_key_t)k, (char*)v); }
  std::uint64_t lookup(std::uint64_t k) { return (std::uint64_t)t->search((entry_key_t)k); }
  void finish() {
    munmap(start_addr, kSize);
    std::filesystem::remove(pool_file);
  }
};
#elif defined(IMPL_PACTREE)
#include "pactree.h"
// Its three pools (data layer, search layer, operation log) are PMDK pools in /dev/shm; the
// script runs it with PMEM_IS_PMEM_FORCE=1, as its README says for memory that is not PM, so
// that PMDK persists with clwb and sfence rather than msync. One NUMA node: pactree(1) starts
// its search-layer updater and its combiner thread beside this one.
struct Impl {
  const char* name = "pactree";
  const char* impl = "original";
  static constexpr const char* kPools[] = {"/dev/shm/dptree-originals-pactree-dl",
                                           "/dev/shm/dptree-originals-pactree-sl",
                                           "/dev/shm/dptree-originals-pactree-log"};
  pactree* t;
  Impl() {
    for (const char* f : kPools) std::filesystem::remove(f);  // existing pools would be opened
    t = new pactree(1);
    t->registerThread();
  }
  void insert(std::uint64_t k, std::uint64_t v) { t->insert(k, v); }
  std::uint64_t lookup(std::uint64_t k) { return t->lookup(k); }
  void finish() {
    for (const char* f : kPools) std::filesystem::remove(f);
  }
};
#elif defined(IMPL_OURS)
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
struct Impl {
  std::string name;
  const char* impl = "ours";
  const std::string pool_file = shm_file("ours.pool");
  std::unique_ptr<dptree::pm::Pool> pool;
  std::unique_ptr<dptree::Index> idx;
  explicit Impl(std::string index) : name(std::move(index)) {
    dptree::pm::set_mode(dptree::pm::Mode::pmem);
    std::filesystem::remove(pool_file);
    const char* gib = std::getenv("POOL_GIB");
    pool = dptree::pm::Pool::create(pool_file, (gib ? std::strtoull(gib, nullptr, 10) : 2) << 30);
    if (std::getenv("PREFAULT") && !pool->prefault()) {
      std::fprintf(stderr, "harness: cannot prefault the pool (Linux 5.14 or later)\n");
      std::exit(2);
    }
    dptree::IndexConfig cfg;
    cfg.pool = pool.get();
    cfg.threads = 1;
    idx = dptree::find_index(name).create(cfg);
  }
  void insert(std::uint64_t k, std::uint64_t v) { idx->upsert(k, v); }
  std::uint64_t lookup(std::uint64_t k) { return idx->lookup(k).value_or(0); }
  void finish() {
    idx.reset();
    pool.reset();
    std::filesystem::remove(pool_file);
  }
};
#endif

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
  if (n < 2) {
    std::fprintf(stderr, "usage: harness KEYS [INDEX] (KEYS >= 2)\n");
    return 2;
  }
  make_keys(n);
#if defined(IMPL_OURS)
  Impl impl(argc > 2 ? argv[2] : "fastfair");
#else
  Impl impl;
#endif
  // The first key goes in untimed in every build (LB+-Tree's bulkload).
#if defined(IMPL_LBTREE)
  impl.first(g_keys[0]);
#else
  impl.insert(g_keys[0], g_keys[0]);
#endif
  const Usage u0 = usage();
  const double t0 = now();
  for (std::size_t i = 1; i < n; ++i) impl.insert(g_keys[i], g_keys[i]);
  const double t1 = now();
  const Usage u1 = usage();
  std::uint64_t sum = 0, found = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t v = impl.lookup(g_order[i]);
    sum += v;
    found += v == g_order[i];
  }
  const double t2 = now();
  std::uint64_t expect = 0;
  for (auto k : g_keys) expect += k;
  // Whether the heap or the pool got huge pages moves both sides' figures: measured with the
  // index still mapped.
  const long anon_huge = huge_kib("AnonHugePages"), shmem_huge = huge_kib("ShmemPmdMapped");
  impl.finish();
  std::printf(
      "{\"index\": \"%s\", \"impl\": \"%s\", \"keys\": %zu, \"insert_mops\": %.4f, "
      "\"lookup_mops\": %.4f, \"found\": %llu, \"sum_ok\": %s, \"insert_sys_s\": %.3f, "
      "\"insert_page_faults\": %ld, \"anon_huge_kib\": %ld, \"shmem_pmd_kib\": %ld}\n",
      std::string(impl.name).c_str(), impl.impl, n, (n - 1) / (t1 - t0) / 1e6, n / (t2 - t1) / 1e6,
      (unsigned long long)found, sum == expect ? "true" : "false", u1.sys_s - u0.sys_s,
      u1.faults - u0.faults, anon_huge, shmem_huge);
  return found == n && sum == expect ? 0 : 1;
}
