// The open's table of leaf words and the list walk over it (leaf_table.h).
#include "engine/leaf_table.h"

#include <sys/mman.h>

#include <atomic>
#include <new>

#include "engine/parallel_chunks.h"

namespace dptree::detail {

LeafTable::LeafTable(std::size_t leaves) {
  std::size_t cap = 16;
  while (cap < 2 * leaves) {
    cap *= 2;
    --shift_;
  }
  mask_ = cap - 1;
  bytes_ = cap * sizeof(Entry);
  // Fresh zero pages; huge ones where the kernel grants them on request: fewer faults while
  // the table fills, fewer TLB misses while the walk reads it.
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  (void)madvise(p, bytes_, MADV_HUGEPAGE);
  e_ = static_cast<Entry*>(p);
}

LeafTable::~LeafTable() {
  munmap(e_, bytes_);
}

void LeafTable::put(const Entry& e) {
  for (std::size_t i = slot_of(e.leaf);; i = (i + 1) & mask_) {
    u64 empty = 0;
    if (std::atomic_ref<u64>(e_[i].leaf)
            .compare_exchange_strong(empty, e.leaf, std::memory_order_relaxed)) {
      e_[i].next = e.next;
      e_[i].max = e.max;
      e_[i].rc = e.rc;
      return;
    }
  }
}

const LeafTable::Entry* LeafTable::find(u64 leaf) const {
  for (std::size_t i = slot_of(leaf);; i = (i + 1) & mask_) {
    const u64 k = std::atomic_ref<u64>(e_[i].leaf).load(std::memory_order_relaxed);
    if (k == leaf && k) return &e_[i];
    if (k == 0) return nullptr;
  }
}

namespace {

struct Stretch {
  std::uint64_t at, to;  // the next leaf to take, and the mark that ends the stretch
  std::vector<std::uint64_t> leaves;
  bool done = false;
};

// Advances every stretch of [lo, hi) one link per round until all reached their marks;
// false when one cannot (a link outside the table, the end before its mark) or the steps of
// this call pass `limit`.
bool walk_stretches(const LeafTable& t, std::vector<Stretch>& s, std::size_t lo, std::size_t hi,
                    std::size_t limit) {
  std::size_t steps = 0, open = hi - lo;
  for (std::size_t i = lo; i < hi; ++i) {
    if (s[i].at == s[i].to) {
      s[i].done = true;
      --open;
    } else {
      t.prefetch(s[i].at);
    }
  }
  while (open) {
    for (std::size_t i = lo; i < hi; ++i) {
      Stretch& x = s[i];
      if (x.done) continue;
      const LeafTable::Entry* e = t.find(x.at);
      if (!e || ++steps > limit) return false;
      x.leaves.push_back(x.at);
      x.at = e->next;
      if (x.at == x.to) {
        x.done = true;
        --open;
      } else if (x.at == 0) {
        return false;
      } else {
        t.prefetch(x.at);
      }
    }
  }
  return true;
}

}  // namespace

bool walk_in_stretches(const LeafTable& t, std::uint64_t head,
                       const std::vector<std::uint64_t>& marks, std::size_t limit, unsigned threads,
                       std::vector<std::uint64_t>& out) {
  std::vector<Stretch> s(marks.size() + 1);
  for (std::size_t i = 0; i <= marks.size(); ++i) {
    s[i].at = i == 0 ? head : marks[i - 1];
    s[i].to = i == marks.size() ? 0 : marks[i];
  }
  out.clear();
  if (head == 0) return marks.empty();
  std::atomic<bool> ok{true};
  for_chunks(s.size(), threads, [&](std::size_t lo, std::size_t hi) {
    if (!walk_stretches(t, s, lo, hi, limit)) ok = false;
  });
  if (!ok) return false;
  std::size_t n = 0;
  for (const Stretch& x : s) n += x.leaves.size();
  if (n > limit) return false;
  out.reserve(n);
  for (const Stretch& x : s) out.insert(out.end(), x.leaves.begin(), x.leaves.end());
  return true;
}

}  // namespace dptree::detail
