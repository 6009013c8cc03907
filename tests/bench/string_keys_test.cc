// String keys in the benchmark (bench/string_keys.h): each key set maps distinct integer keys
// to distinct string keys of the promised lengths (runner_test.cc runs them).
#include "bench/string_keys.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "bench/random.h"
#include "dptree/error.h"

namespace dptree::bench {
namespace {

KeyFormat string_keys(KeySet set, std::uint32_t min = 8, std::uint32_t max = 8) {
  KeyFormat f;
  f.type = KeyType::string;
  f.set = set;
  f.min_bytes = min;
  f.max_bytes = max;
  return f;
}

TEST(StringKeys, UnmixUndoesTheKeyMixer) {
  Rng rng(3);
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t x = i < 4 ? std::uint64_t(i) << 62 : rng.next();
    EXPECT_EQ(unmix64(mix64(x)), x);
  }
}

TEST(StringKeys, U64beKeepsTheIntegersOrder) {
  StringKeyMaker m(string_keys(KeySet::u64be), Distribution::uniform);
  EXPECT_EQ(m.make(0x0102030405060708ULL), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  Rng rng(1);
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t a = rng.next(), b = rng.next();
    EXPECT_EQ(a < b, m.make(a) < m.make(b));
  }
}

TEST(StringKeys, RandomKeysAreDistinctAndOfTheirLengths) {
  StringKeyMaker m(string_keys(KeySet::random, 8, 300), Distribution::uniform);
  std::set<std::string> seen;
  std::set<std::size_t> lengths;
  for (std::uint64_t id = 0; id < 5000; ++id) {
    const std::string k = m.make(KeyGenerator::key_of(id, Distribution::uniform));
    EXPECT_GE(k.size(), 8u);
    EXPECT_LE(k.size(), 300u);
    lengths.insert(k.size());
    EXPECT_TRUE(seen.insert(k).second) << "id " << id;
  }
  EXPECT_GT(lengths.size(), 250u) << "lengths spread over the range";
  EXPECT_EQ(m.make(42), m.make(42)) << "a function of the key";
}

TEST(StringKeys, RefusesLengthsItCannotKeepDistinct) {
  EXPECT_THROW(StringKeyMaker(string_keys(KeySet::random, 4, 16), Distribution::uniform), Error);
  EXPECT_THROW(StringKeyMaker(string_keys(KeySet::u64be, 16, 16), Distribution::uniform), Error);
  KeyFormat f;
  for (const char* bad : {"0", "1025", "9-8", "x", "8-", "-8", "8-9-10"})
    EXPECT_THROW(parse_key_length(bad, f), Error) << bad;
  parse_key_length("16-64", f);
  EXPECT_EQ(f.min_bytes, 16u);
  EXPECT_EQ(f.max_bytes, 64u);
  EXPECT_THROW(parse_key_set("bytes"), Error);
  EXPECT_THROW(parse_key_type("int"), Error);
}

class WordsFile : public ::testing::Test {
 protected:
  void SetUp() override { std::ofstream(path_) << "apple\nbanana\n\ncherry\napple\nc#\n"; }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_ =
      (std::filesystem::temp_directory_path() / ("dptree-words-" + std::to_string(getpid())))
          .string();
};

TEST_F(WordsFile, WordsThenNumberedVariants) {
  KeyFormat f = string_keys(KeySet::words);
  f.words_file = path_;
  for (Distribution d : {Distribution::uniform, Distribution::sequential}) {
    StringKeyMaker m(f, d);
    std::set<std::string> seen;
    for (std::uint64_t id = 0; id < 9; ++id) seen.insert(m.make(KeyGenerator::key_of(id, d)));
    // Empty lines, duplicates and words holding the variant mark are dropped.
    EXPECT_EQ(seen, (std::set<std::string>{"apple", "banana", "cherry", "apple#1", "banana#1",
                                           "cherry#1", "apple#2", "banana#2", "cherry#2"}));
    EXPECT_EQ(m.min_bytes(), 5u);
    EXPECT_EQ(m.max_bytes(), 6u);
  }
}

TEST_F(WordsFile, AMissingListIsNamed) {
  KeyFormat f = string_keys(KeySet::words);
  f.words_file = path_ + ".missing";
  try {
    StringKeyMaker m(f, Distribution::uniform);
    FAIL() << "made words without a list";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::not_found);
    EXPECT_NE(std::string(e.what()).find("wamerican"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dptree::bench
