// The base tree's inner index and searches of the string forms (string_base.h).
#include "st/string_base.h"

#include <algorithm>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "format/verify.h"
#include "st/validate.h"

namespace dptree::detail {

LeafNext string_next(const pm::Pool& pool) {
  return [&pool](u64 l, int v) { return pool.at<StringLeafHeader>(l)->next[v].off; };
}

std::size_t string_lower_bound(StringLeaf lf, std::string_view k, bool& equal) {
  const u64 p = key_prefix(k);
  const StringEntry* e = lf.entries();
  std::size_t lo = 0, hi = lf.count();
  equal = false;
  char buf[8];
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    bool below;
    if (e[mid].prefix != p) {
      below = e[mid].prefix < p;
    } else {
      const std::string_view mk = lf.key(mid, buf);
      if (mk == k) {
        equal = true;
        return mid;
      }
      below = mk < k;
    }
    if (below)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void StringBase::build(const pm::Pool& pool, LeafPtr head, int v, u64 keys) {
  leaves.clear();
  last.clear();
  last_prefix.clear();
  count = keys;
  char buf[8];
  for (u64 l = head.off; l; l = pool.at<StringLeafHeader>(l)->next[v].off) {
    leaves.push_back(l);
    StringLeaf lf{pool.at(l)};
    last.emplace_back(lf.key(lf.count() - 1, buf));
    last_prefix.push_back(lf.entries()[lf.count() - 1].prefix);
  }
}

std::size_t StringBase::index_of(std::string_view k) const {
  if (leaves.empty()) return 0;
  // The leaves whose last key shares k's prefix lie together: compare bytes only among them.
  const u64 p = key_prefix(k);
  const auto lo = std::lower_bound(last_prefix.begin(), last_prefix.end(), p);
  auto i = static_cast<std::size_t>(lo - last_prefix.begin());
  if (i < last_prefix.size() && last_prefix[i] == p) {
    const auto hi = std::upper_bound(lo, last_prefix.end(), p);
    const auto end = last.begin() + (hi - last_prefix.begin());
    i = static_cast<std::size_t>(
        std::lower_bound(last.begin() + static_cast<std::ptrdiff_t>(i), end, k,
                         [](const std::string& a, std::string_view b) { return a < b; }) -
        last.begin());
  }
  return std::min(i, leaves.size() - 1);
}

std::optional<u64> StringBase::lookup(const pm::Pool& pool, std::string_view k) const {
  if (leaves.empty()) return std::nullopt;
  StringLeaf lf{pool.at(leaves[index_of(k)])};
  bool equal;
  const std::size_t i = string_lower_bound(lf, k, equal);
  if (!equal) return std::nullopt;
  return lf.entries()[i].value;
}

bool StringBase::collect(const pm::Pool& pool, std::string_view start, std::size_t n,
                         StringEntries& out) const {
  if (leaves.empty()) return true;
  std::size_t li = index_of(start), got = 0;
  bool equal;
  auto leaf = [&](std::size_t i) { return StringLeaf{pool.at(leaves[i])}; };
  std::size_t pos = string_lower_bound(leaf(li), start, equal);
  char buf[8];
  for (; li < leaves.size(); ++li, pos = 0) {
    StringLeaf lf = leaf(li);
    for (; pos < lf.count(); ++pos) {
      if (got == n) return false;
      out.emplace_back(std::string(lf.key(pos, buf)), lf.entries()[pos].value);
      ++got;
    }
  }
  return true;
}

std::size_t StringBase::dram_bytes() const {
  std::size_t b = 16 * leaves.capacity();
  for (const auto& k : last) b += sizeof(std::string) + k.capacity();
  return b;
}

void* open_string_root(const TreeParts& t, u64 magic, std::size_t bytes, u64 integer_magic,
                       u64 gv_bits, const char* tree) {
  void* found = nullptr;
  try {
    found = t.existing_root(magic, bytes, std::string(tree) + " (string keys)");
  } catch (const Error& e) {
    if (e.code() != Errc::wrong_index) throw;
    if (root_if_ours(t.pool, integer_magic, sizeof(Root)))
      throw Error(Errc::wrong_index, "pool '" + t.pool.name() + "' holds a " + tree +
                                         " of integer keys, not of string keys: open it with "
                                         "--key-type u64 (IndexInfo::create), or use a new pool");
    throw;
  }
  for (const auto& p : verify_format(*static_cast<const Root*>(found), magic, gv_bits))
    throw Error(Errc::corrupt, "pool '" + t.pool.name() + "': " + tree + " (string keys) root: " +
                                   p + ": the pool is damaged; restore it from a copy");
  return found;
}

TreeShape string_tree_shape(const pm::Pool& pool, const char* tree, u64 gv_bits,
                            std::vector<u64> logs, std::size_t capacity) {
  return TreeShape{
      tree,
      gv_bits,
      0,
      std::move(logs),
      kStringLeafType,
      [&pool](u64 l, int v) { return pool.offset_of(&pool.at<StringLeafHeader>(l)->next[v]); },
      [&pool, capacity, tree](u64 l) {
        std::string p = string_leaf_problem(pool, l, capacity);
        if (!p.empty()) throw_corrupt(pool, tree, "leaf", l, p);
      }};
}

void require_page_for_longest_key(std::size_t page_bytes, const char* tree) {
  LogGeometry g;
  g.init(1, page_bytes);
  if (g.per_page < string_record_words(kStringTreeMaxKey))
    throw Error(Errc::invalid_argument,
                std::string(tree) + ": log_page_size " + std::to_string(page_bytes) +
                    " cannot hold the log record of a " + std::to_string(kStringTreeMaxKey) +
                    "-byte key: use 2048 or more");
}

std::size_t checked_record_words(const pm::Pool& pool, const char* tree, const u64* w,
                                 std::size_t room) {
  const std::size_t len = string_record_length(*w);
  const u64 off = pool.offset_of(w);
  if (len == 0) return 0;
  if (len > kStringTreeMaxKey)
    throw_corrupt(pool, tree, "log record", off,
                  "announces a key of " + std::to_string(len) + " bytes (at most " +
                      std::to_string(kStringTreeMaxKey) + ")");
  const std::size_t n = string_record_words(len);
  if (n > room) throw_corrupt(pool, tree, "log record", off, "runs past its page's end");
  return n;
}

}  // namespace dptree::detail
