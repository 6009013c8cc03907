// The libFuzzer target, over the persistent index or string form DPTREE_FUZZ_INDEX names (a
// fuzz target of pool_fuzz.h: every one the registry's test plans give; DPTREE_FUZZ_LIST=1
// prints their names and exits, for `make fuzz` to iterate). An input is not a whole pool (whole
// pools run at a few dozen executions a second) but damage to one: byte 0 picks a seed pool
// (pool_fuzz.h make_seeds, made once at start), then each 12 bytes are a patch: a word index (4
// bytes, taken modulo the pool's words) and the 8-byte value to store there. The patched pool is
// opened, recovered and checked (run_patched). The custom mutator adds patches aimed at non-zero
// words half the time.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "fuzz/pool_fuzz.h"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

constexpr std::size_t kPatch = 12;

std::string target_names() {
  std::string s;
  for (const auto& t : dptree::fuzz::targets()) s += t.name() + "\n";
  return s;
}

const dptree::fuzz::Target& the_target() {
  static const dptree::fuzz::Target& t = []() -> const dptree::fuzz::Target& {
    const char* name = std::getenv("DPTREE_FUZZ_INDEX");
    for (const auto& c : dptree::fuzz::targets())
      if (name && c.name() == name) return c;
    std::fprintf(stderr,
                 "fuzz_pool: DPTREE_FUZZ_INDEX=%s names no fuzz target; set it to one of:\n%s",
                 name ? name : "(unset)", target_names().c_str());
    std::exit(2);
  }();
  return t;
}

// DPTREE_FUZZ_SEED_BYTES: the seed pools' size (default the target's seed_pool_bytes);
// `make fuzz` replays tests/fuzz/regressions/ with kRegressionSeedBytes, the size those
// inputs were found with.
const std::vector<dptree::fuzz::Bytes>& seeds() {
  static const auto s = [] {
    const char* b = std::getenv("DPTREE_FUZZ_SEED_BYTES");
    return dptree::fuzz::make_seeds(the_target(), b ? std::strtoull(b, nullptr, 10) : 0);
  }();
  return s;
}

// Non-zero words of each seed past the header lines: where damage matters most.
const std::vector<std::vector<std::uint32_t>>& live_words() {
  static const auto w = [] {
    std::vector<std::vector<std::uint32_t>> out;
    for (const auto& s : seeds()) {
      out.emplace_back();
      for (std::uint32_t i = 16; i < s.size() / 8; ++i) {
        std::uint64_t x;
        std::memcpy(&x, s.data() + 8 * i, 8);
        if (x) out.back().push_back(i);
      }
    }
    return out;
  }();
  return w;
}

}  // namespace

// With DPTREE_FUZZ_SEED_DIR set, the starting corpus is written there: one input per seed
// pool, no patch (`make fuzz` starts from it).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (std::getenv("DPTREE_FUZZ_LIST")) {
    std::fputs(target_names().c_str(), stdout);
    std::exit(0);
  }
  (void)the_target();  // an unknown name stops here, before libFuzzer starts
  const char* dir = std::getenv("DPTREE_FUZZ_SEED_DIR");
  if (!dir) return 0;
  std::filesystem::create_directories(dir);
  for (std::size_t i = 0; i < seeds().size(); ++i) {
    std::ofstream out(std::filesystem::path(dir) / ("seed-" + std::to_string(i)), std::ios::binary);
    out.put(static_cast<char>(i));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  dptree::fuzz::run_patched(the_target(), seeds(), data, size);
  return 0;
}

// Half of the mutations: a new patch on a non-zero word of the chosen seed, with a value
// pool_fuzz.h's damage() chooses; else libFuzzer's own.
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (size == 0 || rng() % 2 || size + kPatch > max_size)
    return LLVMFuzzerMutate(data, size, max_size);
  const std::size_t s = data[0] % seeds().size();
  const auto& live = live_words()[s];
  if (live.empty()) return LLVMFuzzerMutate(data, size, max_size);
  const std::uint32_t w = live[rng() % live.size()];
  const auto& img = seeds()[s];
  std::uint64_t x, other;
  std::memcpy(&x, img.data() + 8 * w, 8);
  std::memcpy(&other, img.data() + 8 * live[rng() % live.size()], 8);
  x = dptree::fuzz::damage(x, other, img.size(), rng);
  std::memcpy(data + size, &w, 4);
  std::memcpy(data + size + 4, &x, 8);
  return size + kPatch;
}
