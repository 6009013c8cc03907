// Loops for the passes of an open that read every leaf or directory slot of a large pool
// (validate.cc, the inner index's rebuild from a known leaf list). Their reads are
// independent, so threads overlap their misses and first-touch page faults (for_chunks), and
// one thread requests a few leaves' lines ahead of reading them (for_each_prefetched), where a
// walk of the chain pays one miss after another.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace dptree::detail {

// Calls f(lo, hi) for contiguous chunks covering [0, n) in order, on `threads` threads (the
// caller's among them; 0 or 1: one call on the caller's). If chunks throw, the exception of
// the lowest one is rethrown once all have returned: a check that stops at the first damage
// names the same one as a single pass would.
template <class F>
void for_chunks(std::size_t n, unsigned threads, F&& f) {
  const std::size_t k = std::min<std::size_t>(std::max(threads, 1U), std::max<std::size_t>(n, 1));
  if (k == 1) {
    f(std::size_t{0}, n);
    return;
  }
  std::vector<std::exception_ptr> failed(k);
  auto run = [&](std::size_t c) {
    try {
      f(n * c / k, n * (c + 1) / k);
    } catch (...) {
      failed[c] = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(k - 1);
  for (std::size_t c = 1; c < k; ++c) helpers.emplace_back(run, c);
  run(0);
  for (auto& t : helpers) t.join();
  for (auto& e : failed)
    if (e) std::rethrow_exception(e);
}

// Calls f(i) for i in [lo, hi) in order, having requested the line at addr(i + kAhead) first
// (and the first kAhead lines before the loop).
template <class Addr, class F>
void for_each_prefetched(std::size_t lo, std::size_t hi, Addr&& addr, F&& f) {
  constexpr std::size_t kAhead = 8;
  for (std::size_t i = lo; i < std::min(hi, lo + kAhead); ++i) __builtin_prefetch(addr(i));
  for (std::size_t i = lo; i < hi; ++i) {
    if (i + kAhead < hi) __builtin_prefetch(addr(i + kAhead));
    f(i);
  }
}

}  // namespace dptree::detail
