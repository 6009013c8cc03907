// Crash simulation of every persistent string-key index (crash_fixture.h over the mixed key
// space of key_kinds.h): in 64-byte and in 8-byte units, with recoveries crashed at their
// events and recovered images that keep working; every acknowledged write must survive and
// check() pass on each recovered image. DPTREE_CRASH_SCALE multiplies the operations.
// DPTree's string form: about 2,700 images over the two units, 20 s under ASan on a loaded
// 2-core machine (a 1 MiB pool: each image copies it); FPTree's about 7,300 images, 15 s.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "fixtures/crash_fixture.h"
#include "strings/string_indexes.h"

namespace dptree::testing {
namespace {

class StringCrash : public ::testing::TestWithParam<std::string> {};

// The fixture checks images against its one workload thread's acknowledged writes, so an index
// that writes PM from a thread of its own runs here without it (PACTree's search-layer updater;
// concurrent_crash_test crashes that thread).
// FPTree's recovery writes only after a crash inside a leaf split: its 8-slot leaves split often
// enough that some images land in one; 900 operations keep it near 15 s under ASan.
std::map<std::string, std::string> crash_options(const std::string& index) {
  if (index == "pactree") return {{"updater", "inline"}};
  if (index == "fptree") return {{"leaf_capacity", "8"}};
  // Logs of 4 shards of 2 KiB pages fit the 1 MiB pool; leaves of 64 slots are merged into
  // in place, and split, by merges of about 150 writes.
  if (index == "cdptree")
    return {{"log_partitions", "4"},
            {"log_page_size", "2048"},
            {"leaf_capacity", "64"},
            {"min_merge_records", "150"}};
  return {};
}

// cdptree's string form replays a buffer of up to 150 records on every recovered image:
// 800 operations give about 2,900 images (4 s under ASan); cdptree_string_crash_test crashes
// every phase of its merge.
std::size_t crash_ops(const std::string& index) {
  if (index == "cdptree") return 800;
  return index == "fptree" ? 900 : 1200;
}

// PACTree's recovery writes only after a crash inside a split's few steps, so a run rarely
// crashes one; pactree_crash_test crashes every event of those recoveries. DPTree's string
// recovery writes only after a crash inside a merge's flip, release or collection (a torn
// log record needs no clearing: its checksum fails), rare with this fixture's large log
// pages; dptree_string_crash_test crashes every event of those recoveries.
bool recovery_usually_writes(const std::string& index) {
  return index != "pactree" && index != "dptree";
}

TEST_P(StringCrash, ImagesRecoverWithAcknowledgedWrites) {
  for (pm::Unit unit : {pm::Unit::line64, pm::Unit::word8}) {
    StringCrashConfig c;
    c.index = GetParam();
    c.options = crash_options(GetParam());
    c.pool_bytes = std::size_t{1} << 20;
    c.seed = unit == pm::Unit::word8 ? 2 : 1;
    c.unit = unit;
    c.ops = crash_ops(GetParam());
    c.key_space = 300;
    c.flush_one_in = 4;
    c.recovery_crash_one_in = 40;
    auto r = run_string_crash(c);
    const char* u = unit == pm::Unit::word8 ? "word8" : "line64";
    ASSERT_FALSE(HasFailure()) << u;
    std::printf("%s %s: ", GetParam().c_str(), u);
    print_images(r);
    EXPECT_GE(r.images, 500u) << u;
    if (recovery_usually_writes(GetParam())) {
      EXPECT_GT(r.recovery_images, 0u) << u;
    }
    EXPECT_GT(r.continued_images, 0u) << u;
  }
}

INSTANTIATE_TEST_SUITE_P(Index, StringCrash, ::testing::ValuesIn(string_indexes(true)),
                         index_test_name);
// No persistent index may have a string form yet: then there is nothing to instantiate.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StringCrash);

}  // namespace
}  // namespace dptree::testing
