// For indexes that assume more than 8-byte failure atomicity: runs the generic crash fixture
// in a weaker unit with its failures intercepted and counted instead of failing the test, so
// a test can assert that the assumption matters (some image breaks).
#pragma once

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "dptree/error.h"
#include "fixtures/crash_fixture.h"

namespace dptree::testing {

// Images that broke (a check failed, data was lost) or recovery refused (dptree::Error, which
// ends the run). The fixture never keeps working on an image here: it may be broken.
inline std::size_t count_broken_images(CrashConfig c) {
  ::testing::TestPartResultArray failures;
  std::size_t refused = 0;
  std::string why;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    c.continue_one_in = 1u << 30;
    try {
      run_crash(c);
    } catch (const Error& e) {
      refused = 1;
      why = std::string("recovery refused an image: ") + e.what();
    }
  }
  if (why.empty() && failures.size()) why = failures.GetTestPartResult(0).message();
  std::replace(why.begin(), why.end(), '\n', ' ');
  std::printf("%s with %s units: %zu broken images; first: %s\n", c.index.c_str(),
              c.unit == pm::Unit::word8 ? "8-byte" : "64-byte",
              static_cast<std::size_t>(failures.size()) + refused, why.c_str());
  return static_cast<std::size_t>(failures.size()) + refused;
}

// Images of a short run of `index` in 8-byte units that broke: for an index that assumes a
// whole cache line reaches PM at once.
inline std::size_t broken_in_8_byte_units(const std::string& index, std::uint64_t seed) {
  CrashConfig c;
  c.index = index;
  c.pool_bytes = 512 << 10;
  c.seed = seed;
  c.ops = 1500;
  c.key_space = 300;
  c.unit = pm::Unit::word8;
  return count_broken_images(c);
}

}  // namespace dptree::testing
