// The pool fuzzer as a GoogleTest suite, parameterized by target name (pool_fuzz.h, targets():
// each persistent index and string form of the registry with a fuzz plan): damaged copies of
// seed pools (pool_fuzz.h's mutations) are opened, recovered and checked under ASan and UBSan;
// each must be accepted or refused with dptree::Error. DPTREE_FUZZ_ITERS sets the images per
// index (default 500). pool_fuzz_test.cc instantiates it for every target; a test binary that
// registers an index of its own instantiates it for that one (its fuzz plan makes the target).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>

#include "fixtures/param_name.h"
#include "fuzz/pool_fuzz.h"

namespace dptree::fuzz {

inline std::size_t fuzz_iterations() {
  const char* s = std::getenv("DPTREE_FUZZ_ITERS");
  return s ? static_cast<std::size_t>(std::strtoull(s, nullptr, 10)) : 500;
}

class PoolFuzz : public ::testing::TestWithParam<std::string> {};

TEST_P(PoolFuzz, DamagedPoolsAreAcceptedOrRefusedNeverCrash) {
  const Target& t = target(GetParam());
  const auto seeds = make_seeds(t);
  for (std::size_t i = 0; i < seeds.size(); ++i)
    ASSERT_TRUE(run_one(t, seeds[i].data(), seeds[i].size())) << "seed " << i << " refused";
  std::mt19937_64 rng(std::hash<std::string>{}(t.name()));
  std::size_t accepted = 0, refused = 0;
  const std::size_t n = fuzz_iterations();
  for (std::size_t i = 0; i < n; ++i) {
    Bytes img = seeds[i % seeds.size()];
    // A few rounds of damage on some images: damage that needs two wrong words to get past
    // one check.
    for (std::size_t r = 0; r <= i % 3; ++r) mutate(img, rng);
    (run_one(t, img.data(), img.size()) ? accepted : refused)++;
  }
  std::printf("%s: %zu damaged images, %zu accepted, %zu refused with dptree::Error\n",
              t.name().c_str(), n, accepted, refused);
  EXPECT_EQ(accepted + refused, n);
}

}  // namespace dptree::fuzz
