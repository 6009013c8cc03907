// A filter's words: where they come from, and the page hand-back of a retired one; see bloom.h.
#include "engine/bloom.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

namespace dptree::detail {

std::unique_ptr<u64, FreeWords> zeroed_words(std::size_t n) {
  const std::size_t bytes = n * sizeof(u64);
  if (bytes < kMappedWordsBytes) {
    auto* p = static_cast<u64*>(std::calloc(n, sizeof(u64)));
    if (!p) throw std::bad_alloc();
    return std::unique_ptr<u64, FreeWords>(p, FreeWords{});
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  return std::unique_ptr<u64, FreeWords>(static_cast<u64*>(m), FreeWords{bytes});
}

void FreeWords::operator()(u64* p) const {
  if (bytes)
    munmap(p, bytes);
  else
    std::free(p);
}

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
