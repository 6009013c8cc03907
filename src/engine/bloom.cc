// The page hand-back of a retired filter; see bloom.h.
#include "engine/bloom.h"

#include <sys/mman.h>
#include <unistd.h>

namespace dptree::detail {

std::size_t drop_word_pages(u64* words, std::size_t n, std::size_t from, std::size_t bytes) {
  const std::size_t total = n * 8, want = std::min(total, from + bytes);
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<std::uintptr_t>(words);
  // Whole pages only: the words' first and last pages may be shared with the allocator's
  // neighbours. A part ends on a page boundary, so the next part starts its page.
  const std::uintptr_t lo = (base + from + page - 1) & ~(page - 1);
  const std::uintptr_t hi = (base + want) & ~(page - 1);
  // Advice: if refused, the pages stay until the free.
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  if (want == total || hi <= base + from) return want;
  return hi - base;
}

}  // namespace dptree::detail
