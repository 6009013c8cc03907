// The TIPS engine behind dptree/tips.h: frontend (cache.cc), backend replay with UNO logging
// (backend.cc), creation, recovery and checks (recovery.cc). docs/tips.md explains the design.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dptree/index.h"
#include "dptree/pm/pool.h"
#include "dptree/tips.h"
#include "tips/layout.h"

namespace dptree::tips::detail {

// A cache entry: the newest acknowledged write of `key` (a value or, absent, a removal) and
// its timestamp; clean once the backend has applied it.
struct CacheEntry {
  Key key;
  Value value;
  std::uint64_t ts;
  bool absent;
  CacheEntry* next;
};

struct Partition {
  unsigned id = 0;
  layout::PartitionHeader* hdr = nullptr;
  void* header = nullptr;  // the adapter's index
  std::uint64_t* mlog = nullptr;
  layout::UndoEntry* ulog = nullptr;
  mutable std::shared_mutex mu;  // adapter reads shared, replay exclusive
  // Epoch state, touched only by the thread replaying this partition.
  std::uint64_t tag = 0;  // hdr->applied when the epoch began
  std::size_t ulog_used = 0, mlog_used = 0;
  std::unordered_set<std::uintptr_t> dirty;        // lines to write back at commit
  std::map<std::uintptr_t, std::uintptr_t> fresh;  // blocks allocated in this epoch
  std::vector<std::uint64_t> deferred;             // slots to free after commit
  std::vector<layout::Record> batch;               // records of the current round
  // The ranges the index announced (will_write) in its current write call, in `sim` mode:
  // the plain stores it made there since are logged with the crash simulator
  // (pm::note_stores) at each announcement, allocation and free, and when the call returns.
  std::vector<std::pair<const void*, std::size_t>> announced;
  bool in_write = false;      // inside an adapter write call
  bool plain_stores = false;  // inside pm::begin_plain_stores (sim mode, between two hooks)
  // Counters (read by stats under the replay lock).
  std::uint64_t undo_lines = 0, undo_skipped = 0, epochs = 0, records = 0;
};

struct Lane {
  std::mutex mu;
  layout::LaneHeader* hdr = nullptr;
  layout::Record* rec = nullptr;
  std::uint64_t head = 0, tail = 0;  // volatile copies, under mu
};

class Engine {
 public:
  enum class Kind { upsert, insert, update, remove };

  Engine(pm::Pool& pool, std::shared_ptr<const Adapter> adapter, const Options& opt);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Frontend (cache.cc).
  bool write(Kind kind, Key k, Value v);
  std::optional<Value> lookup(Key k);
  std::size_t scan(Key start, std::size_t n, std::vector<KV>& out);
  // Applies every acknowledged write to the backend (replays on the calling thread).
  void sync();

  IndexStats stats();
  CheckReport check();
  const Adapter& adapter() const { return *adapter_; }

  // Backend hooks for the adapter, through tips::alloc / release / will_write (backend.cc).
  void* alloc(Partition& p, std::size_t bytes);
  void release(Partition& p, void* node);
  void will_write(Partition& p, const void* addr, std::size_t len);
  static void note_announced(Partition& p);
  // Around an adapter write call: its stretches of plain stores between two hooks are
  // bracketed for the crash simulator (pm::begin_plain_stores), and at its end its stores
  // are noted and its ranges forgotten.
  static void begin_write(Partition& p);
  static void end_write(Partition& p);
  // A hook (alloc, release, will_write) starts: the index's stores so far are noted, and the
  // bracket closed (the hook may flush and fence); when it ends, one opens again.
  class Hook {
   public:
    explicit Hook(Partition& p);
    ~Hook();
    Hook(const Hook&) = delete;
    Hook& operator=(const Hook&) = delete;

   private:
    Partition& p_;
  };

 private:
  // cache.cc
  std::size_t bucket_of(Key k) const;
  std::mutex& stripe_of(std::size_t bucket) const;
  CacheEntry* find_entry(std::size_t bucket, Key k) const;
  std::optional<Value> backend_lookup(Key k) const;
  void help_if_behind();
  void evict();
  unsigned my_lane() const;
  void count_read();

  // backend.cc
  void replay_round();  // caller holds replay_mu_
  std::vector<std::uint64_t> gather_batches(std::uint64_t G);
  void apply_batches(const std::vector<Partition*>& busy, unsigned writers);
  void advance_heads(const std::vector<std::uint64_t>& new_head);
  void replay_until(std::uint64_t ts);
  void apply_partition(Partition& p);
  void begin_epoch(Partition& p);
  void commit_epoch(Partition& p, std::uint64_t ts);
  void mlog_append(Partition& p, std::uint64_t word);
  std::uint64_t take_slot();
  std::uint64_t* slot_word(std::uint64_t slot) const;
  unsigned choose_writers(std::size_t busy_partitions);
  void background_loop();

  // recovery.cc
  void create_layout();
  void open_layout();
  void read_root();
  void open_partition(std::size_t i);
  void open_lane(std::size_t i);
  void require_block(std::uint64_t off, const std::uint64_t* owner, std::size_t bytes,
                     const std::string& what) const;
  void recover_partition(Partition& p);
  // Open: each partition's index proves its structure safe (Adapter::validate) with
  // owns_node as the test of a node pointer.
  void validate_partitions() const;
  bool owns_node(const void* p, std::size_t bytes) const;
  void rebuild_slots();
  void replay_logs_at_open();
  Partition& partition_of(Key k) const;

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  std::shared_ptr<const Adapter> adapter_;
  Options opt_;
  layout::Root* root_ = nullptr;
  std::vector<std::unique_ptr<Partition>> parts_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  layout::PartitionLayout playout_{0, 0, 0};

  // Frontend: the cache.
  std::vector<CacheEntry*> buckets_;
  std::size_t bucket_mask_ = 0;
  mutable std::vector<std::mutex> stripes_;
  std::atomic<std::size_t> cache_size_{0};
  std::size_t evict_hand_ = 0;  // under replay_mu_
  std::atomic<std::uint64_t> global_ts_{0};
  std::atomic<std::uint64_t> applied_all_{0};  // every write with ts <= this is in the backend
  std::atomic<std::uint64_t> writes_since_replay_{0};
  struct alignas(64) PaddedCounter {
    std::atomic<std::uint64_t> n{0};
  };
  mutable PaddedCounter reads_[16];

  // Backend.
  std::mutex replay_mu_;  // one replay round at a time
  std::mutex slot_mu_;
  std::vector<std::uint64_t> free_slots_;
  std::uint64_t* dir_ = nullptr;
  std::uint64_t round_reads_ = 0, round_ts_ = 0;  // under replay_mu_
  std::uint64_t rounds_ = 0, writer_sum_ = 0;     // under replay_mu_
  unsigned last_writers_ = 1;

  // Background writers.
  std::thread bg_;
  std::atomic<bool> stop_{false};
  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  std::exception_ptr bg_error_;  // under replay_mu_: a replay that failed (e.g. pool full)
};

// Sets this thread's TIPS context (the partition being replayed) and phase for a scope,
// restoring the previous ones (a crash test may recover another instance inside a hook).
class ReplayScope {
 public:
  ReplayScope(Engine* e, Partition* p);
  ~ReplayScope();
  ReplayScope(const ReplayScope&) = delete;
  ReplayScope& operator=(const ReplayScope&) = delete;

 private:
  Engine* saved_e_;
  Partition* saved_p_;
};

class PhaseScope {
 public:
  explicit PhaseScope(const char* phase);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  const char* saved_;
};

std::uint64_t mix(std::uint64_t k);

}  // namespace dptree::tips::detail
