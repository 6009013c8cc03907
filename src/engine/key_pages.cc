// The key pages of the string forms (key_pages.h).
#include "engine/key_pages.h"

#include "dptree/pm/allocator.h"
#include "dptree/pm/pool.h"
#include "engine/owner_dir.h"
#include "engine/string_base.h"
#include "format/log_page.h"
#include "format/string_leaf.h"

namespace dptree::detail {

u64 KeyPages::page_of(u64 rec) const {
  return pool_.allocator().block_containing(rec);
}

void KeyPages::rebuild(const StringBase& base) {
  std::unordered_map<u64, std::size_t> uses;
  u64 last_page = 0, last_end = 0;  // records of one page tend to follow each other
  for (std::size_t li = 0; li < base.leaves.size(); ++li) {
    const StringLeaf lf = base.leaf(pool_, li);
    const int c = base.copy(li);
    for (std::size_t i = 0; i < lf.count(c); ++i) {
      const u64 rec = lf.entry_at(c, i).rec();
      if (rec == 0) continue;  // a key of up to 16 bytes: in its slot, no record
      if (!(rec >= last_page && rec < last_end)) {
        last_page = page_of(rec);
        last_end = last_page + pool_.allocator().block_size(last_page);
      }
      ++uses[last_page];
    }
  }
  std::lock_guard g(mu_);
  uses_ = std::move(uses);
}

void KeyPages::name(std::span<const u64> recs) {
  std::lock_guard g(mu_);
  for (u64 r : recs) ++uses_[page_of(r)];
}

std::vector<u64> KeyPages::unname(std::span<const u64> recs) {
  std::vector<u64> unnamed;
  std::lock_guard g(mu_);
  for (u64 r : recs) {
    auto it = uses_.find(page_of(r));
    if (it == uses_.end()) continue;  // not counted: check() reports such an entry
    if (--it->second == 0) {
      unnamed.push_back(it->first);
      uses_.erase(it);
    }
  }
  return unnamed;
}

bool KeyPages::named(u64 page) const {
  std::lock_guard g(mu_);
  return uses_.contains(page);
}

std::size_t KeyPages::uses(u64 page) const {
  std::lock_guard g(mu_);
  auto it = uses_.find(page);
  return it == uses_.end() ? 0 : it->second;
}

std::vector<u64> KeyPages::pages() const {
  std::lock_guard g(mu_);
  std::vector<u64> out;
  out.reserve(uses_.size());
  for (const auto& [pg, n] : uses_) out.push_back(pg);
  return out;
}

std::size_t KeyPages::size() const {
  std::lock_guard g(mu_);
  return uses_.size();
}

std::size_t KeyPages::dram_bytes() const {
  std::lock_guard g(mu_);
  return uses_.bucket_count() * 8 + uses_.size() * 32;
}

void KeyPages::free_page(OwnerDir& dir, u64 page) const {
  dir.free_owned(pool_.at<LogPageHeader>(page)->owner_slot.off);
}

}  // namespace dptree::detail
