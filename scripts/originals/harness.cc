// One tight loop that drives a published original and our port over the same keys
// (scripts/originals/compare; docs/peers.md, "Against the originals"). Built one of these ways:
//   -DIMPL_FASTFAIR  the original FAST_FAIR (its single/ or, for threads, concurrent/ btree.h)
//   -DIMPL_LBTREE    the original LB+-Tree (its lbtree.cc, whose main() is renamed)
//   -DIMPL_ROART     the original ROART (its Tree.h, linked with its ART and nvm_mgr sources)
//   -DIMPL_UTREE     the original uTree's single-threaded tree (its utree.h)
//   -DIMPL_UTREE_MT  the original uTree's concurrent tree (its multiThread/utree/utree.h)
//   -DIMPL_PACTREE   the original PACTree (its pactree.h, linked with its two libraries)
//   -DIMPL_DPTREE    the DPTree paper's authors' single-threaded DPTree (its dptree.hpp)
//   -DIMPL_OURS      our index named by argv[2], through the public Index interface
// usage: harness KEYS [INDEX]. Inserts KEYS distinct keys in one order, then looks every key
// up in another, uses every result, and prints one JSON line. THREADS=T (default 1) splits
// each phase over T threads, thread t taking every T-th key from the t-th: each original's
// concurrent form and ours with IndexConfig::threads = T.
// Environment (ours): PREFAULT=1 maps the pool's pages before the timed loop, as the original
// LB+-Tree's pool initialisation touches every page of its pool; POOL_GIB=N sizes the pool
// (default 2, the original LB+-Tree's; ROART needs more at 10M keys).
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
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

// The folder of every PM file of both sides: POOL_DIR, else /dev/shm (4 KiB pages here; a tmpfs
// mounted with huge=always gives 2 MiB pages, as DAX does).
std::string pool_dir() {
  const char* d = std::getenv("POOL_DIR");
  return d && *d ? d : "/dev/shm";
}

// A file in the pool folder named for this process, so that two runs at once keep apart.
std::string shm_file(const char* stem) {
  return pool_dir() + "/dptree-originals-" + std::string(stem) + "-" + std::to_string(getpid());
}

// A new file of `size` bytes (sparse) mapped shared: the PM the uTree originals take their list
// nodes from, as their own drivers map a DAX device.
char* map_pm_file(const std::string& path, std::size_t size) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ftruncate(fd, size) != 0) {
    std::fprintf(stderr, "harness: cannot create %s\n", path.c_str());
    std::exit(2);
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "harness: cannot map %s\n", path.c_str());
    std::exit(2);
  }
  return static_cast<char*>(p);
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

// THREADS from the environment: the threads each phase runs on.
unsigned threads() {
  const char* t = std::getenv("THREADS");
  const unsigned long v = t ? std::strtoul(t, nullptr, 10) : 1;
  if (v < 1 || v > 64) {
    std::fprintf(stderr, "harness: THREADS must be 1-64\n");
    std::exit(2);
  }
  return static_cast<unsigned>(v);
}

// What a thread does before its first operation and after its last (most originals: nothing).
struct NoThreadHooks {
  void thread_begin(unsigned) {}
  void thread_end() {}
};

}  // namespace

#if defined(IMPL_FASTFAIR)
#include "btree.h"
struct Impl : NoThreadHooks {
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
struct Impl : NoThreadHooks {
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
#include "threadinfo.h"
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
  // Every thread but the one that made the tree registers with its epoch and allocator.
  void thread_begin(unsigned) { NVMMgr_ns::register_threadinfo(); }
  void thread_end() { NVMMgr_ns::unregister_threadinfo(); }
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
#include "utree.h"
// Its list nodes come from a bump pointer over a PM mapping that the program provides (its own
// test maps /dev/dax0.0): here a shared mapping of a 2 GiB file in the pool folder, ours' pool
// size.
char* start_addr;
char* curr_addr;
struct Impl : NoThreadHooks {
  const char* name = "utree";
  const char* impl = "original";
  const std::string pool_file = shm_file("utree.pm");
  static constexpr std::size_t kSize = 2ull << 30;
  btree* t;
  Impl() {
    start_addr = curr_addr = map_pm_file(pool_file, kSize);
    t = new btree();
  }
  void insert(std::uint64_t k, std::uint64_t v) { t->insert((entry_key_t)k, (char*)v); }
  std::uint64_t lookup(std::uint64_t k) { return (std::uint64_t)t->search((entry_key_t)k); }
  void finish() {
    munmap(start_addr, kSize);
    std::filesystem::remove(pool_file);
  }
};
#elif defined(IMPL_UTREE_MT)
#include "utree.h"
// Its list nodes come from a bump pointer per thread over a PM mapping the program provides (its
// own driver maps /dev/dax0.0 and gives each thread a range): here a shared mapping of a sparse
// file in the pool folder, 2 GiB for the thread that makes the tree and 2 GiB for each worker.
__thread char* start_addr;
__thread char* curr_addr;
struct Impl {
  const char* name = "utree";
  const char* impl = "original";
  const std::string pool_file = shm_file("utree-mt.pm");
  static constexpr std::size_t kSlice = 2ull << 30;
  const std::size_t size = kSlice * (threads() + 1);
  char* base;
  btree* t;
  Impl() {
    base = start_addr = curr_addr = map_pm_file(pool_file, size);
    t = new btree();
  }
  void thread_begin(unsigned tid) { start_addr = curr_addr = base + kSlice * (tid + 1); }
  void thread_end() {}
  void insert(std::uint64_t k, std::uint64_t v) { t->insert((entry_key_t)k, (char*)v); }
  std::uint64_t lookup(std::uint64_t k) { return (std::uint64_t)t->search((entry_key_t)k); }
  void finish() {
    munmap(base, size);
    std::filesystem::remove(pool_file);
  }
};
#elif defined(IMPL_PACTREE)
#include "pactree.h"
// Its three pools (data layer, search layer, operation log) are PMDK pools in the pool folder,
// where the script's rewrite of its source puts them (the same POOL_DIR at build and run); the
// script runs it with PMEM_IS_PMEM_FORCE=1, as its README says for memory that is not PM, so
// that PMDK persists with clwb and sfence rather than msync. One NUMA node: pactree(1) starts
// its search-layer updater and its combiner thread beside this one.
struct Impl {
  const char* name = "pactree";
  const char* impl = "original";
  const std::string kPools[3] = {pool_dir() + "/dptree-originals-pactree-dl",
                                 pool_dir() + "/dptree-originals-pactree-sl",
                                 pool_dir() + "/dptree-originals-pactree-log"};
  pactree* t;
  Impl() {
    for (const auto& f : kPools) std::filesystem::remove(f);  // existing pools would be opened
    t = new pactree(1);
    t->registerThread();
  }
  void thread_begin(unsigned) { t->registerThread(); }
  void thread_end() { t->unregisterThread(); }
  void insert(std::uint64_t k, std::uint64_t v) { t->insert(k, v); }
  std::uint64_t lookup(std::uint64_t k) { return t->lookup(k); }
  void finish() {
    for (const auto& f : kPools) std::filesystem::remove(f);
  }
};
#elif defined(IMPL_DPTREE)
#include "dptree.hpp"
// The authors' DPTree as their benchmark drives it: leaves and log on the heap
// (posix_memalign), each flush a clwb, the log's and the merge's fences issued under their
// default COUNT_CLFLUSH build (without it their clflush_len fences nothing). A lookup's value
// comes back as the tree stores it, shifted left by the bit that marks a tombstone.
struct Impl : NoThreadHooks {
  const char* name = "dptree";
  const char* impl = "original";
  dtree::dpftree<std::uint64_t, std::uint64_t> t;
  void insert(std::uint64_t k, std::uint64_t v) { t.insert(k, v); }
  std::uint64_t lookup(std::uint64_t k) {
    std::uint64_t v = 0;
    return t.lookup(k, v) ? v >> 1 : 0;
  }
  void finish() {}
};
#elif defined(IMPL_OURS)
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
struct Impl : NoThreadHooks {
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
    cfg.threads = threads();
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

namespace {

struct Timed {
  double t0, t1, t2;  // start, inserts done, lookups done
  Usage u1;           // after the inserts
  std::uint64_t sum = 0, found = 0;
};

// One thread: the plain loops.
template <class I>
Timed run_one(I& impl, std::size_t n) {
  Timed r{};
  r.t0 = now();
  for (std::size_t i = 1; i < n; ++i) impl.insert(g_keys[i], g_keys[i]);
  r.t1 = now();
  r.u1 = usage();
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t v = impl.lookup(g_order[i]);
    r.sum += v;
    r.found += v == g_order[i];
  }
  r.t2 = now();
  return r;
}

// A phase's threads and the timing thread meet here: every thread starts a phase together, and
// a phase ends when its last thread arrives. The workers spin; the timing thread (`sleepy`)
// blocks until the last arrival wakes it, so it takes no CPU from them during a phase. (A
// yield loop shared a CPU with a worker whenever another process held the other one, and a
// 20 us sleep loop woke up to 50,000 times a second: beside it, the original FAST_FAIR's two
// threads inserted at 0.63-0.66x of their speed and looked up at 0.73-0.74x.)
class SpinBarrier {
 public:
  explicit SpinBarrier(unsigned parties) : parties_(parties) {}
  void wait(bool sleepy = false) {
    const unsigned gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
      arrived_.store(0, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> g(mu_);
        gen_.fetch_add(1, std::memory_order_release);
      }
      cv_.notify_all();
      return;
    }
    if (sleepy) {
      std::unique_lock<std::mutex> g(mu_);
      cv_.wait(g, [&] { return gen_.load(std::memory_order_acquire) != gen; });
      return;
    }
    while (gen_.load(std::memory_order_acquire) == gen) std::this_thread::yield();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const unsigned parties_;
  std::atomic<unsigned> arrived_{0}, gen_{0};
};

// Thread t runs on CPU t (mod the CPUs), as the originals' own drivers pin theirs: PACTree
// picks a split's log slot by the core it runs on, and two threads sharing a core reuse slots.
void pin_to_cpu(unsigned t) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(t % std::thread::hardware_concurrency(), &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    std::fprintf(stderr, "harness: cannot pin a thread to CPU %u\n", t);
    std::exit(2);
  }
}

// T threads: thread t inserts keys t+1, t+1+T, ... and looks up g_order[t], g_order[t+T], ...
template <class I>
Timed run_threads(I& impl, std::size_t n, unsigned nthreads) {
  SpinBarrier phase(nthreads + 1);
  std::vector<std::uint64_t> sums(nthreads), founds(nthreads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nthreads; ++t)
    pool.emplace_back([&, t] {
      pin_to_cpu(t);
      impl.thread_begin(t);
      phase.wait();
      for (std::size_t i = 1 + t; i < n; i += nthreads) impl.insert(g_keys[i], g_keys[i]);
      phase.wait();
      std::uint64_t sum = 0, found = 0;
      for (std::size_t i = t; i < n; i += nthreads) {
        const std::uint64_t v = impl.lookup(g_order[i]);
        sum += v;
        found += v == g_order[i];
      }
      sums[t] = sum;
      founds[t] = found;
      phase.wait();
      impl.thread_end();
    });
  Timed r{};
  phase.wait(true);
  r.t0 = now();
  phase.wait(true);
  r.t1 = now();
  r.u1 = usage();
  phase.wait(true);
  r.t2 = now();
  for (auto& th : pool) th.join();
  for (unsigned t = 0; t < nthreads; ++t) r.sum += sums[t], r.found += founds[t];
  return r;
}

}  // namespace

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
  const unsigned nthreads = threads();
  const Usage u0 = usage();
  const Timed r = nthreads == 1 ? run_one(impl, n) : run_threads(impl, n, nthreads);
  const double t0 = r.t0, t1 = r.t1, t2 = r.t2;
  const Usage u1 = r.u1;
  const std::uint64_t sum = r.sum, found = r.found;
  std::uint64_t expect = 0;
  for (auto k : g_keys) expect += k;
  // Whether the heap or the pool got huge pages moves both sides' figures: measured with the
  // index still mapped.
  const long anon_huge = huge_kib("AnonHugePages"), shmem_huge = huge_kib("ShmemPmdMapped");
  impl.finish();
  std::printf(
      "{\"index\": \"%s\", \"impl\": \"%s\", \"keys\": %zu, \"insert_mops\": %.4f, "
      "\"lookup_mops\": %.4f, \"found\": %llu, \"sum_ok\": %s, \"insert_sys_s\": %.3f, "
      "\"insert_page_faults\": %ld, \"anon_huge_kib\": %ld, \"shmem_pmd_kib\": %ld, "
      "\"threads\": %u}\n",
      std::string(impl.name).c_str(), impl.impl, n, (n - 1) / (t1 - t0) / 1e6, n / (t2 - t1) / 1e6,
      (unsigned long long)found, sum == expect ? "true" : "false", u1.sys_s - u0.sys_s,
      u1.faults - u0.faults, anon_huge, shmem_huge, nthreads);
  return found == n && sum == expect ? 0 : 1;
}
