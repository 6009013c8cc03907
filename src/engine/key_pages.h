// The key pages of DPTree's string forms (format/string_leaf.h): the slot of a key longer than
// 16 bytes names its log record (the key's bytes), so the log page holding that record outlives
// its log's release while a slot of a reachable version names it.
//
// Persistently a key page is an ordinary log page, owned by its owner-directory slot, whose
// flavor word says kKeyFlavor (set when its log is released: release_chain's `keep`), so that
// no freelist takes it. Which entries name it is volatile: a count per page, rebuilt at open by
// walking the leaves of the current version and changed by each merge after its flip (the
// records its new entries name counted, those of entries it removed uncounted). A key page no
// entry names is freed by the merge that removed its last entry or, after a crash, by
// recovery's sweep (a kKeyFlavor page it does not count). docs/dptree.md "String keys" says why.
#pragma once

#include <cstddef>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "format/layout.h"

namespace dptree::pm {
class Pool;
}

namespace dptree::detail {

class OwnerDir;
struct StringBase;

class KeyPages {
 public:
  explicit KeyPages(const pm::Pool& pool) : pool_(pool) {}
  // The log page holding the record at pool offset `rec` (0: none).
  u64 page_of(u64 rec) const;
  // Open: the counts of the live slots of the leaves of `base` (one version's list).
  void rebuild(const StringBase& base);
  // After a merge's flip: each of `recs` is named by one more entry.
  void name(std::span<const u64> recs);
  // After the flip's garbage collection: each of `recs` is named by one entry less. Returns
  // the pages no entry names any more.
  std::vector<u64> unname(std::span<const u64> recs);
  bool named(u64 page) const;
  std::size_t uses(u64 page) const;
  // Every named page (check(), sweeps) and how many there are.
  std::vector<u64> pages() const;
  std::size_t size() const;
  std::size_t dram_bytes() const;
  // Frees a key page no entry names (its directory slot's block).
  void free_page(OwnerDir& dir, u64 page) const;

 private:
  const pm::Pool& pool_;
  mutable std::mutex mu_;
  std::unordered_map<u64, std::size_t> uses_;
};

}  // namespace dptree::detail
