// FPTree's string key form (key_forms.h): key blobs in slab slots, their fingerprints, and how
// a slot's key word names its blob.
#include "baselines/fptree/key_forms.h"

#include <cstring>
#include <map>
#include <set>

#include "dptree/pm/persist.h"
#include "dptree/pm/store.h"

namespace dptree::baselines::fptree {

StringKeys::StringKeys(pm::Pool& pool, Root* root, bool shared) : pool_(pool) {
  mu_.set_on(shared);
  for (int c = 0; c < kBlobClasses; ++c)
    arenas_[c] =
        std::make_unique<SlabArena>(pool, &root->blob_dir[c], slot_bytes(c), root->slab_size);
}

std::uint8_t StringKeys::fingerprint(std::string_view k) {
  std::uint64_t h = k.size() * 0x9E3779B97F4A7C15ull;
  std::size_t i = 0;
  for (; i + 8 <= k.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, k.data() + i, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  }
  std::uint64_t w = 0;
  std::memcpy(&w, k.data() + i, k.size() - i);
  h = (h ^ w) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::uint8_t>(h >> 56);
}

std::string_view StringKeys::view(u64 word) const {
  if (!word) return {};
  const auto* b = pool_.at<u64>(word & ~kClassMask);
  return {reinterpret_cast<const char*>(b + 1), b[0]};
}

u64 StringKeys::make(std::string_view k) {
  u64 c = 0;
  while (slot_bytes(c) < 8 + k.size()) ++c;
  u64 off;
  {
    std::lock_guard g(mu_);
    off = arenas_[c]->alloc();  // throws pool_full with nothing written
  }
  auto* b = pool_.at<u64>(off);
  pm::store(b, u64(k.size()));
  pm::store_bytes(b + 1, k.data(), k.size());
  pm::flush(b, 8 + k.size());  // ordered by the fence before the slot is published
  return off | c;
}

void StringKeys::drop(u64 word) {
  std::lock_guard g(mu_);
  arenas_[word & kClassMask]->release(word & ~kClassMask);
}

std::string StringKeys::show(std::string_view k) {
  std::string s = "'";
  for (unsigned char ch : k.substr(0, 40)) {
    if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
      s += char(ch);
    } else {
      static const char* hex = "0123456789abcdef";
      s += {'\\', 'x', hex[ch >> 4], hex[ch & 15]};
    }
  }
  return s + (k.size() > 40 ? "...'" : "'") + " (" + std::to_string(k.size()) + " bytes)";
}

void StringKeys::open() {
  for (auto& a : arenas_) a->open();
}

const SlabArena* StringKeys::arena_of(u64 word) const {
  const u64 c = word & kClassMask;
  if (c >= kBlobClasses || !arenas_[c]->is_slot(word & ~kClassMask)) return nullptr;
  return arenas_[c].get();
}

void StringKeys::validate(u64 word, bool empty_ok,
                          const std::function<void(const std::string&)>& corrupt) const {
  if (!word && empty_ok) return;
  if (!arena_of(word))
    corrupt("names key blob " + std::to_string(word) + ", not a slot of a blob arena");
  if (!length_fits(word))
    corrupt("names key blob " + std::to_string(word) + " of length " +
            std::to_string(*pool_.at<u64>(word & ~kClassMask)) + ", which its slot cannot hold");
}

bool StringKeys::length_fits(u64 word) const {
  const u64 len = *pool_.at<u64>(word & ~kClassMask);
  return len > 0 && len <= kMaxKeyBytes && 8 + len <= slot_bytes(word & kClassMask);
}

bool StringKeys::mark(u64 word) {
  return arena_of(word) && arenas_[word & kClassMask]->mark_used(word & ~kClassMask);
}

void StringKeys::finish() {
  for (auto& a : arenas_) a->finish();
}

std::size_t StringKeys::pm_bytes() const {
  std::size_t n = 0;
  for (const auto& a : arenas_) n += a->pm_bytes();
  return n;
}

void StringKeys::for_each_block(const std::function<void(u64)>& fn) const {
  for (const auto& a : arenas_) a->for_each_block(fn);
}

void StringKeys::check(const std::vector<u64>& reached, CheckReport& r) const {
  std::set<u64> seen;
  std::map<const SlabArena*, std::size_t> per_arena;
  for (u64 w : reached) {
    const SlabArena* a = arena_of(w);
    if (!a || !a->is_used(w & ~kClassMask)) {
      r.fail("key blob " + std::to_string(w) + " is not a used blob slot");
      continue;
    }
    if (!seen.insert(w & ~kClassMask).second)
      r.fail("key blob " + std::to_string(w) + " is reached twice");
    if (!length_fits(w)) r.fail("key blob " + std::to_string(w) + " holds a length out of bounds");
    ++per_arena[a];
  }
  for (int c = 0; c < kBlobClasses; ++c)
    check_arena_slots(*arenas_[c], per_arena[arenas_[c].get()],
                      "key blob arena of " + std::to_string(slot_bytes(c)) + "-byte slots",
                      "the leaves", r);
}

}  // namespace dptree::baselines::fptree
