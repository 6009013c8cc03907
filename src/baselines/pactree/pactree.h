// The PACTree engine over byte-string keys (layout.h); pactree_index.cc puts the integer and
// string interfaces over it.
//
// Concurrency, as PACTree's: lookups and scans take no lock; a writer locks the one data node
// it changes, after checking it still covers the key (a split may have moved the key right).
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

#include "baselines/pactree/layout.h"
#include "baselines/roart/arena_set.h"
#include "baselines/roart/epoch.h"
#include "baselines/roart/tree.h"
#include "baselines/roart/write_locks.h"
#include "baselines/slab/slab_arena.h"
#include "dptree/index.h"
#include "dptree/pm/pool.h"

namespace dptree::baselines::pactree {

const char* current_phase();

class PacTree {
 public:
  // `background`: a thread inserts split anchors into the search layer (else the splitting
  // writer does, inline).
  PacTree(pm::Pool& pool, u64 form, unsigned threads, bool background);
  ~PacTree();
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

  DataNode* node(u64 off) const { return pool_.at<DataNode>(off); }
  std::string_view key_of(u64 entry) const;
  std::string_view anchor_of(u64 n) const;  // empty for the head
  bool covers_next(u64 n, std::string_view k, u64& next) const;
  u64 find_node(std::string_view k) const;
  int find_entry(u64 n, std::string_view k, u64& e) const;

  std::optional<bool> put_once(std::string_view k, Value v, bool may_insert, bool may_update);
  std::optional<bool> remove_once(std::string_view k);
  u64 new_leaf(std::string_view k, Value v);
  void publish(u64* word, u64 v);
  void split(u64 n, std::string_view k, Value v);
  void hand_to_search_layer(std::string anchor, u64 n);
  void updater();
  u64 take(int arena);

  // recovery.cc
  void recover();
  std::vector<u64> recover_list();
  void recover_entries(const std::vector<u64>& nodes);
  void recover_search_layer(const std::vector<u64>& nodes);
  [[noreturn]] void problem(const std::string& what) const;

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  Arenas arenas_;
  bool concurrent_;
  bool background_;
  std::unique_ptr<roart::WriteLocks> locks_;
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
