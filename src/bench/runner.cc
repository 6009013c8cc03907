// The benchmark runner (runner.h): the workers, their batches of pre-drawn operations and
// sampled latencies, preload, recovery measurement and the check of each run's spec.
#include "bench/runner.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "bench/histogram.h"
#include "bench/reference_indexes.h"
#include "dptree/error.h"
#include "dptree/pm/pool.h"

namespace dptree::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string concurrent_names() {
  std::string s;
  for (const auto& i : registered_indexes())
    if (i.concurrent) s += (s.empty() ? "" : ", ") + i.name;
  return s.empty() ? "none yet" : s;
}

bool string_run(const RunSpec& spec) {
  return spec.key.type == KeyType::string;
}

// Removes the pool file when the run ends (also on an exception), unless it is to be kept.
struct PoolFileGuard {
  std::filesystem::path path;
  bool armed = false;
  ~PoolFileGuard() {
    std::error_code ec;
    if (armed) std::filesystem::remove(path, ec);
  }
};

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // Best effort: a refused pin leaves the thread unpinned, which only costs stability.
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct alignas(64) WorkerState {
  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> finished{false};
  Clock::time_point end{};  // when this worker finished its share
  Histogram hist;
  std::uint64_t by_kind[kOpKinds] = {};
  std::uint64_t found = 0;
  double stream_seconds = 0;  // drawing operations from the stream, left out of the timing
  std::exception_ptr error;
};

void validate(const RunSpec& spec, const IndexInfo& info) {
  if (spec.threads == 0) throw Error(Errc::invalid_argument, "--threads must be at least 1");
  if (spec.threads > 1 && !info.concurrent)
    throw Error(Errc::invalid_argument,
                "index '" + info.name + "' is not safe for concurrent use: run it with " +
                    "--threads 1, or pick a concurrent index (" + concurrent_names() + ")");
  if (!(spec.sample_rate >= 0 && spec.sample_rate <= 1))
    throw Error(Errc::invalid_argument, "--sample-rate must be in [0, 1] (e.g. 0.1)");
  if (spec.ops == 0 && !(spec.seconds > 0))
    throw Error(Errc::invalid_argument, "give a positive --ops count or --seconds duration");
  if (string_run(spec) && !info.create_string)
    throw Error(Errc::invalid_argument, "index '" + info.name +
                                            "' takes 8-byte integer keys only: run it with "
                                            "--key-type u64, or pick an index that takes "
                                            "strings (" +
                                            string_index_names() + ")");
  if (info.persistent && spec.pool_path.empty())
    throw Error(Errc::invalid_argument,
                "index '" + info.name + "' is persistent and needs a pool path (--pool PATH)");
  spec.workload.mix.validate();
}

}  // namespace

void request_stop() {
  g_stop.store(true, std::memory_order_relaxed);
}
bool stop_requested() {
  return g_stop.load(std::memory_order_relaxed);
}

struct LoadedIndex::State {
  const IndexInfo* info = nullptr;
  RunSpec spec;  // the spec the index was loaded for
  // Declaration order matters: the index goes first, then the pool, then the file.
  PoolFileGuard file;
  std::unique_ptr<pm::Pool> pool;
  IndexConfig cfg;
  std::unique_ptr<Index> index;                     // integer keys, or
  std::unique_ptr<StringIndex> sindex;              // string keys, made by
  std::unique_ptr<const StringKeyMaker> key_maker;  // from the integer keys of the stream
  Value max_value = 0;
  double preload_seconds = 0;
  std::uint64_t next_id = 0;   // the first id no insert has used yet
  std::uint64_t inserted = 0;  // inserts of the runs so far
  unsigned runs = 0;
};

LoadedIndex::LoadedIndex(std::unique_ptr<State> s) : s_(std::move(s)) {}
LoadedIndex::~LoadedIndex() = default;

std::size_t default_pool_size(const std::vector<RunSpec>& runs) {
  if (runs.empty()) return pm::kMinPoolSize;
  double records = static_cast<double>(runs.front().records);
  for (const auto& spec : runs) {
    // Time-bound runs: assume at most 4 M inserts per second per thread.
    const double run_ops = spec.ops ? static_cast<double>(spec.ops)
                                    : spec.seconds * 4e6 * static_cast<double>(spec.threads);
    records += run_ops * spec.workload.mix.insert / 100.0;
  }
  // 512 B per record is generous for 16-byte records; string keys add twice their longest
  // (a key blob and its allocator block's rounding). The pool reserves all of it
  // (posix_fallocate), hence the cap at half the free space.
  const KeyFormat& key = runs.front().key;
  const double per_record = 512.0 + (key.type == KeyType::string ? 2.0 * key.max_bytes : 0);
  double want = 64.0 * 1024 * 1024 + records * per_record;
  const auto& path = runs.front().pool_path;
  std::error_code ec;
  auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  auto space = std::filesystem::space(dir, ec);
  if (!ec && space.available > 0) want = std::min(want, static_cast<double>(space.available) / 2);
  return std::max<std::size_t>(static_cast<std::size_t>(want), pm::kMinPoolSize);
}

std::size_t default_pool_size(const RunSpec& spec) {
  return default_pool_size(std::vector<RunSpec>{spec});
}

namespace {

// Creates (or, on an opened pool, recovers) the index in the form the spec's keys need.
void open_index(LoadedIndex::State& st, Distribution dist) {
  if (string_run(st.spec)) {
    if (!st.key_maker) st.key_maker = std::make_unique<StringKeyMaker>(st.spec.key, dist);
    st.sindex = st.info->create_string(st.cfg);
    st.max_value = st.sindex->max_value();
  } else {
    st.index = st.info->create(st.cfg);
    st.max_value = st.index->max_value();
  }
}

void drain(LoadedIndex::State& st) {
  if (st.sindex)
    st.sindex->drain();
  else
    st.index->drain();
}

// Upserts ids 0 .. records-1 in id order through `put(key, value)`.
template <class Report, class Put>
void preload(const LoadedIndex::State& st, Distribution dist, const Report& report, Put&& put) {
  const RunSpec& spec = st.spec;
  for (std::uint64_t id = 0; id < spec.records; ++id) {
    put(KeyGenerator::key_of(id, dist), preload_value(spec.seed, id, st.max_value));
    if ((id & 0xffff) == 0) {
      report("preload", static_cast<double>(id) / static_cast<double>(spec.records));
      if (stop_requested()) break;
    }
  }
}

// --prefault: a kernel or pool that cannot populate is named, not ignored.
void prefault(pm::Pool& pool) {
  if (!pool.prefault())
    throw Error(Errc::invalid_argument,
                "--prefault: cannot map the pages of pool '" + pool.name() +
                    "' ahead (needs Linux 5.14 or later): run without --prefault");
}

}  // namespace

std::unique_ptr<LoadedIndex> load(const RunSpec& spec, const std::vector<RunSpec>& runs,
                                  Progress* progress) {
  register_reference_indexes();
  auto st = std::make_unique<LoadedIndex::State>();
  st->info = &find_index(spec.index);
  st->spec = spec;
  validate(spec, *st->info);
  const Distribution dist = spec.distribution.value_or(spec.workload.distribution);
  pm::set_mode(spec.pm_mode);
  pm::set_delays(spec.flush_delay_ns, spec.fence_delay_ns);
  auto report = [&](std::string_view phase, double f) {
    if (progress) progress->update(phase, std::clamp(f, 0.0, 1.0));
  };
  if (st->info->persistent) {
    const std::size_t size = spec.pool_size ? spec.pool_size : default_pool_size(runs);
    st->pool = pm::Pool::create(spec.pool_path, size);  // refuses an existing file
    st->file.path = spec.pool_path;
    st->file.armed = !spec.keep_pool;
    if (spec.prefault) prefault(*st->pool);  // after the file is armed for removal
  }
  st->cfg = IndexConfig{st->pool.get(), static_cast<std::size_t>(spec.records), spec.threads,
                        spec.options};
  open_index(*st, dist);

  // Preload: ids 0 .. records-1 in id order, single-threaded (deterministic structure).
  report("preload", 0);
  auto t0 = Clock::now();
  if (st->sindex)
    preload(*st, dist, report,
            [&](Key k, Value v) { st->sindex->upsert(st->key_maker->make(k), v); });
  else
    preload(*st, dist, report, [&](Key k, Value v) { st->index->upsert(k, v); });
  drain(*st);  // no merge of the preload spills into the first timed run
  st->preload_seconds = seconds_since(t0);
  st->next_id = spec.records;
  return std::make_unique<LoadedIndex>(std::move(st));
}

RunResult run(const RunSpec& spec, Progress* progress) {
  auto loaded = load(spec, {spec}, progress);
  return run_on(*loaded, spec, progress);
}

namespace {

// A run on a shared load must measure the index the load built.
void check_shared_load(const RunSpec& spec, const RunSpec& load, Distribution dist) {
  const Distribution load_dist = load.distribution.value_or(load.workload.distribution);
  if (spec.index != load.index || spec.threads != load.threads || spec.records != load.records ||
      spec.pm_mode != load.pm_mode ||
      (dist == Distribution::sequential) != (load_dist == Distribution::sequential))
    throw Error(Errc::invalid_argument,
                "a run on a shared load must use the load's index, thread count, records, PM "
                "mode and key mapping (sequential or scattered): run it on a load of its own");
}

ScanLength scan_length(const RunSpec& spec) {
  const ScanLength scan =
      spec.workload.scan_length_uniform_1_to_100 ? ScanLength{1, 100} : spec.scan;
  if (scan.min == 0 || scan.min > scan.max)
    throw Error(Errc::invalid_argument, "scan length must be at least 1 (--scan-length N)");
  return scan;
}

// What the result says about the run before it starts.
RunResult describe(const RunSpec& spec, const LoadedIndex::State& st, Distribution dist) {
  RunResult r;
  r.index = st.info->name;
  r.persistent = st.info->persistent;
  r.workload = spec.workload.name;
  r.mix = spec.workload.mix;
  r.distribution = dist;
  r.theta = spec.theta;
  r.threads = spec.threads;
  r.pinned = spec.pin;
  r.seed = spec.seed;
  r.records = spec.records + st.inserted;
  r.shared_load = st.runs > 0;
  r.prefault = st.spec.prefault && st.pool;
  r.preload_seconds = st.runs == 0 ? st.preload_seconds : 0;
  r.pm_mode = std::string(pm::to_string(spec.pm_mode));
  r.key_type = spec.key.type;
  if (st.key_maker) {
    r.key_set = spec.key.set;
    r.key_min_bytes = st.key_maker->min_bytes();
    r.key_max_bytes = st.key_maker->max_bytes();
  }
  r.flush_delay_ns = spec.flush_delay_ns;
  r.fence_delay_ns = spec.fence_delay_ns;
  if (st.pool) r.pool = st.spec.pool_path.string();
  return r;
}

StreamParams stream_params(const RunSpec& spec, const LoadedIndex::State& st, Distribution dist,
                           ScanLength scan) {
  StreamParams sp;
  sp.mix = spec.workload.mix;
  sp.keys = {spec.records, spec.threads, dist, spec.theta, -1, st.next_id};
  if (dist == Distribution::zipfian || dist == Distribution::latest)
    sp.keys.zeta_records = Zipfian::zeta(spec.records, spec.theta);  // once, for all threads
  sp.scan = scan;
  sp.seed = spec.seed;
  sp.max_value = st.max_value;
  return sp;
}

// What the workers share: set up before they start, read by all of them.
struct RunControl {
  const RunSpec& spec;
  const StreamParams& sp;
  Index* index;                     // integer keys, or
  StringIndex* sindex;              // string keys, made by
  const StringKeyMaker* key_maker;  // from the integer keys of the stream
  std::vector<int> cpus;            // pinning: the CPUs this process may use (empty: no pinning)
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false}, stop{false};
};

// One operation of kind K on the index, with `key` for the operation's key (op.key, or the
// string key made from it). Returns whether a lookup (read, rmw) found its key.
template <OpKind K, class IndexT, class KeyT, class Buf>
inline bool apply_kind(IndexT* index, const Op& op, const KeyT& key, Value max_value, Buf& buf) {
  if constexpr (K == OpKind::read) {
    return index->lookup(key).has_value();
  } else if constexpr (K == OpKind::insert) {  // index.h: blind writes, of new and present keys
    index->upsert(key, op.value);
  } else if constexpr (K == OpKind::update) {
    index->overwrite(key, op.value);
  } else if constexpr (K == OpKind::remove) {
    index->remove(key);
  } else if constexpr (K == OpKind::scan) {
    buf.clear();
    index->scan(key, op.length, buf);
  } else {
    static_assert(K == OpKind::rmw);
    const auto v = index->lookup(key);
    index->upsert(key,
                  v ? (*v + 1) % (max_value == ~Value{0} ? ~Value{0} : max_value + 1) : op.value);
    return v.has_value();
  }
  return false;
}

// The same for an operation of any kind.
template <class IndexT, class KeyT, class Buf>
inline bool apply(IndexT* index, const Op& op, const KeyT& key, Value max_value, Buf& buf) {
  switch (op.kind) {
    case OpKind::read:
      return apply_kind<OpKind::read>(index, op, key, max_value, buf);
    case OpKind::insert:
      return apply_kind<OpKind::insert>(index, op, key, max_value, buf);
    case OpKind::update:
      return apply_kind<OpKind::update>(index, op, key, max_value, buf);
    case OpKind::remove:
      return apply_kind<OpKind::remove>(index, op, key, max_value, buf);
    case OpKind::scan:
      return apply_kind<OpKind::scan>(index, op, key, max_value, buf);
    case OpKind::rmw:
      return apply_kind<OpKind::rmw>(index, op, key, max_value, buf);
  }
  return false;
}

// A worker's way to its index: integer keys go as they are.
class IntKeys {
 public:
  explicit IntKeys(const RunControl& rc) : index_(rc.index) { buf_.reserve(rc.sp.scan.max); }
  bool operator()(const Op& op, Value max_value) {
    return apply(index_, op, op.key, max_value, buf_);
  }
  template <OpKind K>
  bool only(const Op& op, Value max_value) {
    return apply_kind<K>(index_, op, op.key, max_value, buf_);
  }

 private:
  Index* const index_;
  std::vector<KV> buf_;
};

// String keys: each integer key becomes its string key first, inside the timed operation
// (as drawing the integer key is).
class StringKeys {
 public:
  explicit StringKeys(const RunControl& rc) : index_(rc.sindex), maker_(rc.key_maker) {
    buf_.reserve(rc.sp.scan.max);
  }
  bool operator()(const Op& op, Value max_value) {
    maker_->make(op.key, key_);
    return apply(index_, op, std::string_view(key_), max_value, buf_);
  }
  template <OpKind K>
  bool only(const Op& op, Value max_value) {
    maker_->make(op.key, key_);
    return apply_kind<K>(index_, op, std::string_view(key_), max_value, buf_);
  }

 private:
  StringIndex* const index_;
  const StringKeyMaker* const maker_;
  std::string key_;
  std::vector<StringKV> buf_;
};

constexpr unsigned kind_bit(OpKind k) {
  return 1u << static_cast<unsigned>(k);
}

// Operations a worker draws from its stream at a time, before it applies them: the loop that
// applies them then does nothing else, so consecutive operations of an index overlap in the
// CPU as they would in the index's own loop (docs/bench.md, "What the harness costs"). 256
// operations are 6 KiB: a batch of 1,024 (32-byte operations then) filled the core's 32 KiB
// first-level cache and pushed out the index's upper nodes.
constexpr std::size_t kBatch = 256;

// Applies ops[from, to) with no per-operation test; returns how many lookups found their key.
// `kinds`: a bit per kind drawn in the batch. A batch of reads or of inserts alone (every
// read-only and insert-only run) runs a loop of that kind with no dispatch on each
// operation's kind, as the index's own loop would.
template <class Keys>
inline std::uint64_t apply_span(Keys& keys, unsigned kinds, const Op* ops, std::size_t from,
                                std::size_t to, Value max_value) {
  std::uint64_t found = 0;
  if (kinds == kind_bit(OpKind::read)) {
    for (std::size_t j = from; j < to; ++j)
      found += keys.template only<OpKind::read>(ops[j], max_value);
  } else if (kinds == kind_bit(OpKind::insert)) {
    for (std::size_t j = from; j < to; ++j) keys.template only<OpKind::insert>(ops[j], max_value);
  } else {
    for (std::size_t j = from; j < to; ++j) found += keys(ops[j], max_value);
  }
  return found;
}

// Worker t: waits for the start, then runs its share of the operations (or until stopped) a
// batch at a time, timing how long it draws each batch. One operation in every `stride` (1 /
// --sample-rate, from a random first one per batch) has its latency timed: a fixed stride keeps the
// loop's branches predictable.
template <class Keys>
void work(RunControl& rc, unsigned t, WorkerState& w) {
  try {
    if (!rc.cpus.empty()) pin_to(rc.cpus[t % rc.cpus.size()]);
    OpStream stream(rc.sp, t);
    // Sampling draws from its own generator so the operations do not depend on the rate.
    Rng sampler(stream_seed(rc.spec.seed, 0x5a5a0000ULL + t));
    Keys keys(rc);
    const unsigned n = rc.spec.threads;
    const std::uint64_t ops = rc.spec.ops;
    const std::uint64_t quota = ops ? ops / n + (t < ops % n ? 1 : 0) : ~std::uint64_t{0};
    const double rate = rc.spec.sample_rate;
    const std::uint64_t stride =
        rate > 0 ? std::max<std::uint64_t>(1, static_cast<std::uint64_t>(1.0 / rate + 0.5)) : 0;
    const Value max_value = rc.sp.max_value;
    std::vector<Op> batch(kBatch);
    rc.ready.fetch_add(1);
    while (!rc.go.load(std::memory_order_acquire)) std::this_thread::yield();
    std::uint64_t i = 0;
    while (i < quota && !rc.stop.load(std::memory_order_relaxed)) {
      const std::size_t m = static_cast<std::size_t>(std::min<std::uint64_t>(kBatch, quota - i));
      const auto drawn = Clock::now();
      unsigned kinds = 0;
      for (std::size_t j = 0; j < m; ++j) {
        batch[j] = stream.next();
        ++w.by_kind[static_cast<std::size_t>(batch[j].kind)];
        kinds |= kind_bit(batch[j].kind);
      }
      w.stream_seconds += seconds_since(drawn);
      std::size_t done = 0;
      std::uint64_t found = 0;
      for (std::uint64_t s = stride ? sampler.below(stride) : m; s < m; s += stride) {
        found += apply_span(keys, kinds, batch.data(), done, s, max_value);
        const auto start = Clock::now();
        found += keys(batch[s], max_value);
        w.hist.record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
        done = s + 1;
      }
      found += apply_span(keys, kinds, batch.data(), done, m, max_value);
      w.found += found;
      i += m;
      w.done.store(i, std::memory_order_relaxed);
    }
  } catch (...) {
    w.error = std::current_exception();
    rc.stop.store(true);
    rc.ready.fetch_add(1);  // harmless if already counted: the main thread only waits for >= n
  }
  w.end = Clock::now();
  w.finished.store(true, std::memory_order_release);
}

// Starts the workers together, stops them at the time limit (or the user's interrupt),
// reporting progress; returns the start and the last worker's end. `c0` gets the PM counters
// at the start.
std::pair<Clock::time_point, Clock::time_point> drive(RunControl& rc, WorkerState* workers,
                                                      const std::function<void(double)>& report,
                                                      pm::CounterSnapshot& c0) {
  const RunSpec& spec = rc.spec;
  const unsigned n = spec.threads;
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (unsigned t = 0; t < n; ++t)
    threads.emplace_back(rc.sindex ? work<StringKeys> : work<IntKeys>, std::ref(rc), t,
                         std::ref(workers[t]));
  while (rc.ready.load() < n) std::this_thread::yield();
  c0 = pm::counters();
  const auto start = Clock::now();
  rc.go.store(true, std::memory_order_release);
  report(0);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    bool all = true;
    std::uint64_t done = 0;
    for (unsigned t = 0; t < n; ++t) {
      all = all && workers[t].finished.load(std::memory_order_acquire);
      done += workers[t].done.load(std::memory_order_relaxed);
    }
    if (all) break;
    const double elapsed = seconds_since(start);
    if ((!spec.ops && elapsed >= spec.seconds) || stop_requested()) rc.stop.store(true);
    report(spec.ops ? static_cast<double>(done) / static_cast<double>(spec.ops)
                    : elapsed / spec.seconds);
  }
  for (auto& th : threads) th.join();
  // The run lasts until the last worker finished (not until the polling loop noticed).
  Clock::time_point end = start;
  for (unsigned t = 0; t < n; ++t) end = std::max(end, workers[t].end);
  return {start, end};
}

// Operation counts and latency percentiles of all workers; the load's next insert id.
void count_ops(RunResult& r, const WorkerState* workers, unsigned n, LoadedIndex::State& st) {
  Histogram hist;
  for (unsigned t = 0; t < n; ++t) {
    hist.merge(workers[t].hist);
    for (std::size_t k = 0; k < kOpKinds; ++k) r.ops_by_kind[k] += workers[t].by_kind[k];
    r.reads_found += workers[t].found;
  }
  for (auto c : r.ops_by_kind) r.ops += c;
  // The next run on this load inserts past every id this run's threads used.
  std::uint64_t most_inserts = 0;
  for (unsigned t = 0; t < n; ++t)
    most_inserts =
        std::max(most_inserts, workers[t].by_kind[static_cast<std::size_t>(OpKind::insert)]);
  st.next_id += most_inserts * n;
  st.inserted += r.ops_by_kind[static_cast<std::size_t>(OpKind::insert)];
  ++st.runs;
  r.throughput_mops = r.seconds > 0 ? static_cast<double>(r.ops) / r.seconds / 1e6 : 0;
  r.latency_ns = {hist.percentile(50),   hist.percentile(90),    hist.percentile(99),
                  hist.percentile(99.9), hist.percentile(99.99), hist.max(),
                  hist.count()};
}

// Flushes, fences and bytes written per operation; the index's size and figures.
void count_costs(RunResult& r, const pm::CounterSnapshot& delta, const IndexStats& stats) {
  const double ops = r.ops ? static_cast<double>(r.ops) : 1.0;
  const pm::Counters total = delta.total();
  r.flushes_per_op = static_cast<double>(total.lines) / ops;
  r.fences_per_op = static_cast<double>(total.fences) / ops;
  r.pm_bytes_written_per_op = static_cast<double>(total.bytes) / ops;
  for (std::size_t c = 0; c < pm::kCategories; ++c)
    r.flushes_per_op_by_category.emplace_back(
        std::string(pm::to_string(static_cast<pm::Category>(c))),
        static_cast<double>(delta.by_category[c].lines) / ops);
  r.final_records = stats.records;
  r.dram_bytes = stats.dram_bytes;
  r.pm_bytes = stats.pm_bytes;
  const double recs = stats.records ? static_cast<double>(stats.records) : 1.0;
  r.dram_bytes_per_record = static_cast<double>(stats.dram_bytes) / recs;
  r.pm_bytes_per_record = static_cast<double>(stats.pm_bytes) / recs;
  r.index_stats = stats.extra;
}

// Closes everything, then times apart: opening the pool (mapping, header, the allocator's
// owner-word scan: the same for every index) and recovering the index until one lookup
// completes. The reopened index stays loaded for the next run on a shared load.
void time_recovery(RunResult& r, LoadedIndex::State& st, Distribution dist) {
  st.index.reset();
  st.sindex.reset();
  st.pool.reset();
  const auto ot0 = Clock::now();
  st.pool = pm::Pool::open(st.spec.pool_path);
  r.pool_open_seconds = seconds_since(ot0);
  const auto rt0 = Clock::now();
  st.cfg.pool = st.pool.get();
  open_index(st, dist);
  if (st.sindex)
    (void)st.sindex->lookup(st.key_maker->make(KeyGenerator::key_of(0, dist)));
  else
    (void)st.index->lookup(KeyGenerator::key_of(0, dist));
  r.recovery_seconds = seconds_since(rt0);
  if (st.spec.prefault) prefault(*st.pool);  // after the timing: recovery pays its own faults
}

}  // namespace

RunResult run_on(LoadedIndex& loaded, const RunSpec& spec, Progress* progress) {
  LoadedIndex::State& st = loaded.state();
  validate(spec, *st.info);
  const Distribution dist = spec.distribution.value_or(spec.workload.distribution);
  check_shared_load(spec, st.spec, dist);
  const ScanLength scan = scan_length(spec);
  pm::set_mode(spec.pm_mode);
  pm::set_delays(spec.flush_delay_ns, spec.fence_delay_ns);
  auto report = [&](std::string_view phase, double f) {
    if (progress) progress->update(phase, std::clamp(f, 0.0, 1.0));
  };

  RunResult r = describe(spec, st, dist);
  const StreamParams sp = stream_params(spec, st, dist, scan);
  RunControl rc{spec,
                sp,
                st.index.get(),
                st.sindex.get(),
                st.key_maker.get(),
                spec.pin ? allowed_cpus() : std::vector<int>{}};
  const unsigned n = spec.threads;
  auto workers = std::make_unique<WorkerState[]>(n);
  r.machine = machine_state(st.pool ? st.spec.pool_path.parent_path() : pm::default_pool_dir());
  r.machine.load1_before = load1();
  pm::CounterSnapshot c0;
  const double cpu0 = process_cpu_seconds();
  auto [start, end] = drive(
      rc, workers.get(), [&](double f) { report("run", f); }, c0);
  const Mix& mix = spec.workload.mix;
  if (mix.insert + mix.update + mix.remove + mix.rmw > 0 && !stop_requested()) {
    // The merges the run's writes made necessary are part of its cost (index.h, drain).
    // Timed on its own and added to the workers' end: the polling loop notices their end up to
    // 10 ms late, and that wait is neither the index's nor the drain's.
    report("drain", 0);
    const Clock::time_point drain_start = Clock::now();
    drain(st);
    const Clock::duration drained = Clock::now() - drain_start;
    r.drain_seconds = std::chrono::duration<double>(drained).count();
    end += drained;
  }
  // The workers' time drawing operations is the harness's, not the index's: their mean is
  // left out (docs/bench.md, "What the harness costs").
  for (unsigned t = 0; t < n; ++t) r.stream_seconds += workers[t].stream_seconds / n;
  r.seconds = std::chrono::duration<double>(end - start).count() - r.stream_seconds;
  r.cpu_seconds = process_cpu_seconds() - cpu0;
  const pm::CounterSnapshot delta = pm::counters() - c0;
  for (unsigned t = 0; t < n; ++t)
    if (workers[t].error) std::rethrow_exception(workers[t].error);
  count_ops(r, workers.get(), n, st);
  count_costs(r, delta, st.sindex ? st.sindex->stats() : st.index->stats());
  r.machine.load1_after = load1();
  measure_huge_pages(r.machine);  // while the run's index and pool are still mapped
  if (st.pool) r.pm_peak_bytes = st.pool->allocator().peak_used_bytes();
  r.peak_rss_bytes = peak_rss_bytes();
  if (spec.recovery && st.info->persistent && !stop_requested()) {
    report("recovery", 0);
    time_recovery(r, st, dist);
  }
  report("done", 1);
  return r;
}

TightResult run_tight(LoadedIndex& loaded, const RunSpec& spec) {
  LoadedIndex::State& st = loaded.state();
  validate(spec, *st.info);
  const Distribution dist = spec.distribution.value_or(spec.workload.distribution);
  check_shared_load(spec, st.spec, dist);
  const Mix& mix = spec.workload.mix;
  const bool reads = mix.read == 100, inserts = mix.insert == 100;
  if (spec.threads != 1 || !st.index || !spec.ops || !(reads || inserts))
    throw Error(Errc::invalid_argument,
                "a tight loop runs one thread over integer keys, a given number of operations, "
                "and lookups only or inserts only");
  pm::set_mode(spec.pm_mode);
  const StreamParams sp = stream_params(spec, st, dist, scan_length(spec));
  OpStream stream(sp, 0);
  std::vector<Key> keys(spec.ops);
  std::vector<Value> values(spec.ops);
  for (std::uint64_t i = 0; i < spec.ops; ++i) {
    const Op op = stream.next();
    keys[i] = op.key;
    values[i] = op.value;
  }
  Index& index = *st.index;
  TightResult t;
  const auto start = Clock::now();
  if (reads) {
    for (const Key k : keys) t.checksum += index.lookup(k).value_or(0);
  } else {
    for (std::uint64_t i = 0; i < spec.ops; ++i) index.upsert(keys[i], values[i]);
    drain(st);
  }
  t.seconds = seconds_since(start);
  t.ops = spec.ops;
  t.throughput_mops = static_cast<double>(t.ops) / t.seconds / 1e6;
  if (inserts) {  // as count_ops: the next run inserts past these ids
    st.next_id += spec.ops;
    st.inserted += spec.ops;
  }
  ++st.runs;
  return t;
}

}  // namespace dptree::bench
