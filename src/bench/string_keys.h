// The keys of a benchmark run: 8-byte integers (the default) or byte strings (--key-type
// string) for the string forms of the indexes (dptree/string_index.h).
//
// A string run draws the same operations as an integer run and turns each integer key into
// a string key through its key set, a bijection, so that distinct integers stay distinct:
//   random  the integer's 8 bytes (big-endian) then pseudo-random bytes derived from it, to a
//           length drawn from [min, max] by the integer (so at least 8 bytes);
//   u64be   the integer's 8 bytes, big-endian: exactly 8 bytes, ordered as the integers;
//   words   a word of a word list (Debian's wamerican), "word#n" for the n-th variant once
//           the ids outnumber the words; the id is the integer before the key mixer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/keys.h"
#include "dptree/index.h"

namespace dptree::bench {

enum class KeyType : std::uint8_t { u64, string };
enum class KeySet : std::uint8_t { random, u64be, words };

inline constexpr const char* kWordsFile = "/usr/share/dict/american-english";

struct KeyFormat {
  KeyType type = KeyType::u64;
  KeySet set = KeySet::random;
  std::uint32_t min_bytes = 8, max_bytes = 8;  // random: the length range
  std::string words_file = kWordsFile;
};

std::string_view to_string(KeyType t);
std::string_view to_string(KeySet s);
// Parse the flag values; each throws dptree::Error(invalid_argument) naming the accepted ones.
KeyType parse_key_type(std::string_view s);
KeySet parse_key_set(std::string_view s);
// "N" or "MIN-MAX" into `f`'s length range, checked against the limit of string keys.
void parse_key_length(std::string_view s, KeyFormat& f);

// The indexes that take string keys (IndexInfo::create_string), comma-separated.
std::string string_index_names();

// Makes the string keys of a key format. Throws dptree::Error for a format it cannot make
// (a random length below 8, a u64be length other than 8, a missing or empty word list).
class StringKeyMaker {
 public:
  StringKeyMaker(const KeyFormat& f, Distribution d);
  // The string key of integer key `key` in `out` (its capacity reused).
  void make(Key key, std::string& out) const;
  std::string make(Key key) const {
    std::string s;
    make(key, s);
    return s;
  }
  // The shortest and the longest key it makes (words: the variants' numbers not counted).
  std::uint32_t min_bytes() const { return min_; }
  std::uint32_t max_bytes() const { return max_; }

 private:
  void make_random(Key key, std::string& out) const;
  void make_word(Key key, std::string& out) const;

  KeyFormat f_;
  Distribution dist_;
  std::vector<std::string> words_;
  std::uint32_t min_ = 8, max_ = 8;
};

}  // namespace dptree::bench
