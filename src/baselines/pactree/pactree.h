// The PACTree engine over byte-string keys (layout.h); pactree_index.cc puts the integer and
// string interfaces over it.
//
// Concurrency, as PACTree's: lookups and scans take no lock, and read a data node again when
// its version moved while they read it (version_locks.h); a writer locks the one data node it
// changes, after checking it still covers the key (a split may have moved the key right).
// A split links its new node into the data layer at once, and hands the new anchor to the
// search layer asynchronously: a background thread (the paper's SMO updater) inserts it. Until
// then, readers reach the new node from its left neighbour's `next`. With one thread
// (IndexConfig::threads == 1), or with the option updater=inline, the anchor is inserted by the
// splitting writer, so the index uses no other thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "baselines/pactree/layout.h"
#include "baselines/pactree/version_locks.h"
#include "baselines/roart/arena_set.h"
#include "baselines/roart/epoch.h"
#include "baselines/roart/tree.h"
#include "baselines/slab/slab_arena.h"
#include "dptree/index.h"
#include "dptree/pm/pool.h"

namespace dptree::baselines::pactree {

const char* current_phase();

// A key as a data node compares it: its key word (Pair::key), its fingerprint and, for the
// string form, its bytes.
struct Probe {
  std::string_view k;
  u64 word;
  unsigned fp;
};

// The data nodes are the search layer's records: its bottom words name them, and it reads an
// anchor from its node's first line (roart::Records).
class PacTree final : private roart::Records {
 public:
  // `background`: a thread inserts split anchors into the search layer (else the splitting
  // writer does, inline).
  PacTree(pm::Pool& pool, u64 form, unsigned threads, bool background);
  ~PacTree() override;
  PacTree(const PacTree&) = delete;
  PacTree& operator=(const PacTree&) = delete;

  std::optional<Value> lookup(std::string_view k) const;
  bool put(std::string_view k, Value v, bool may_insert, bool may_update);
  bool remove(std::string_view k);
  std::size_t scan(std::string_view start, std::size_t count,
                   const std::function<void(std::string_view, Value)>& emit) const;
  void drain() const;  // waits until the search layer holds every anchor handed to it
  IndexStats stats() const;
  CheckReport check() const;

 private:
  using Emit = std::function<void(std::string_view, Value)>;
  using Arenas = roart::ArenaSet<kArenas>;

  // Node offsets here are never 0 (recovery checked them): no null case for the compiler to
  // see, as Pool::at has (GCC 12 warned of atomic loads at offsets from its null).
  DataNode* node(u64 off) const { return reinterpret_cast<DataNode*>(pool_.base() + off); }
  Probe probe(std::string_view k) const;
  const Leaf* leaf(u64 entry) const { return pool_.at<Leaf>(roart::entry_leaf(entry)); }
  int compare_anchor(const Probe& p, u64 n) const;  // <0, 0, >0: p against n's anchor
  bool covers_next(u64 n, const Probe& p, u64& next) const;
  u64 find_node(const Probe& p) const;
  void prefetch_probe_lines(u64 n) const;
  int find_pair(u64 n, const Probe& p) const;
  Value value_at(const Pair& pr) const;
  std::string anchor_key(u64 n) const;  // empty for the head
  std::string key_at(const Pair& pr) const;
  std::size_t gather(u64 n, const Probe& start, std::pair<std::string_view, Value>* kv,
                     char (*words)[8], u64& next) const;

  // roart::Records
  std::string_view key(u64 n) const override;
  bool valid(u64 n) const override;

  std::optional<bool> put_once(const Probe& p, Value v, bool may_insert, bool may_update);
  std::optional<bool> remove_once(const Probe& p);
  void update_value(u64 n, int i, Value v);
  void insert_pair(u64 n, const Probe& p, Value v);
  Pair new_pair(const Probe& p, Value v);
  void publish_bitmap(u64 n, u64 bitmap);
  void split(u64 n, const Probe& p, Value v);
  void hand_to_search_layer(std::string anchor, u64 n);
  void updater();
  u64 take(int arena);

  // recovery.cc
  void recover(unsigned threads);
  std::vector<u64> recover_list();
  void recover_pairs(const std::vector<u64>& nodes);
  u64 recover_node(u64 n, u64 next, bool head);
  void recover_search_layer(const std::vector<u64>& nodes);
  std::string_view checked_leaf(u64 e, bool mark);
  [[noreturn]] void problem(const std::string& what) const;

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  Arenas arenas_;
  bool ints_;
  bool concurrent_;
  bool background_;
  mutable VersionLocks versions_;
  std::unique_ptr<roart::Tree> search_;
  std::atomic<std::size_t> records_{0}, splits_{0}, anchors_inserted_{0};
  std::size_t leftovers_cleared_ = 0, anchors_recovered_ = 0;  // by the last recovery

  // The SMO queue of the background updater.
  mutable std::mutex q_mu_;
  mutable std::condition_variable q_cv_, idle_cv_;
  std::deque<std::pair<std::string, u64>> queue_;
  std::size_t in_flight_ = 0;
  bool stop_ = false;
  std::thread updater_;
};

}  // namespace dptree::baselines::pactree
