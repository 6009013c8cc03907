#include "failure_log.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "dptree/error.h"

namespace dptree_pibench {
namespace {

// One slot per dptree::Errc (room for more kinds than there are), and a last one for any
// other exception.
constexpr int kKinds = 32;

struct Counts {
  std::atomic<unsigned long long> n[kKinds] = {};

  ~Counts() {
    unsigned long long total = 0;
    std::string by_kind;
    for (int i = 0; i < kKinds; ++i) {
      const unsigned long long c = n[i].load();
      if (!c) continue;
      total += c;
      by_kind += (by_kind.empty() ? "" : ", ") + std::to_string(c) + " " + name(i);
    }
    if (total)
      std::fprintf(stderr, "dptree pibench wrapper: %llu operations failed (%s)\n", total,
                   by_kind.c_str());
  }
  static std::string name(int kind) {
    return kind == kKinds - 1 ? "other" : std::string(to_string(static_cast<dptree::Errc>(kind)));
  }
} counts;

}  // namespace

void note_failure(const std::exception& e) {
  const auto* err = dynamic_cast<const dptree::Error*>(&e);
  const int code = err ? static_cast<int>(err->code()) : kKinds - 1;
  const int kind = code >= 0 && code < kKinds - 1 ? code : kKinds - 1;
  if (counts.n[kind].fetch_add(1) == 0)
    std::fprintf(stderr,
                 "dptree pibench wrapper: %s (later failures of this kind are counted and "
                 "reported at exit)\n",
                 e.what());
}

}  // namespace dptree_pibench
