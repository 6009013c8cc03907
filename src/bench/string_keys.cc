// String keys for the benchmark (string_keys.h): the key types and sets, and the byte strings
// each record id maps to.
#include "bench/string_keys.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>

#include "bench/random.h"
#include "dptree/error.h"
#include "dptree/registry.h"
#include "dptree/string_index.h"
#include "pm/named.h"

namespace dptree::bench {
namespace {

constexpr char kVariantMark = '#';  // in no word of the list (words holding it are dropped)

void put_be64(std::uint64_t x, char* out) {
  for (int i = 7; i >= 0; --i, x >>= 8) out[i] = static_cast<char>(x & 0xff);
}

std::vector<std::string> read_words(const std::string& file) {
  std::ifstream in(file);
  if (!in)
    throw Error(Errc::not_found,
                "--key-set words reads the word list " + file +
                    ", which is missing: install Debian's wamerican (scripts/setup.sh does)");
  std::vector<std::string> words;
  for (std::string w; std::getline(in, w);)
    if (!w.empty() && w.size() <= kStringKeyMaxBytes && w.find(kVariantMark) == std::string::npos)
      words.push_back(std::move(w));
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  if (words.empty())
    throw Error(Errc::invalid_argument, "--key-set words: the word list " + file +
                                            " holds no word; reinstall Debian's wamerican");
  return words;
}

std::uint32_t parse_length(std::string_view s, std::string_view whole) {
  std::uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v == 0 || v > kStringKeyMaxBytes)
    throw Error(Errc::invalid_argument,
                "--key-length '" + std::string(whole) + "': give N or MIN-MAX, lengths from 1 to " +
                    std::to_string(kStringKeyMaxBytes) + " bytes (e.g. 16 or 8-64)");
  return v;
}

}  // namespace

std::string string_index_names() {
  std::string s;
  for (const auto& i : registered_indexes())
    if (i.create_string) s += (s.empty() ? "" : ", ") + i.name;
  return s.empty() ? "none yet" : s;
}

std::string_view to_string(KeyType t) {
  return t == KeyType::string ? "string" : "u64";
}

constexpr Named<KeySet> kKeySets[] = {
    {KeySet::random, "random"}, {KeySet::u64be, "u64be"}, {KeySet::words, "words"}};

std::string_view to_string(KeySet s) {
  return name_of(kKeySets, s);
}

KeyType parse_key_type(std::string_view s) {
  if (s == "u64") return KeyType::u64;
  if (s == "string") return KeyType::string;
  throw Error(Errc::invalid_argument,
              "--key-type '" + std::string(s) + "': give u64 (8-byte integers) or string");
}

KeySet parse_key_set(std::string_view s) {
  return parse_named(kKeySets, s, "key set (--key-set)");
}

void parse_key_length(std::string_view s, KeyFormat& f) {
  const auto dash = s.find('-');
  f.min_bytes = parse_length(s.substr(0, dash), s);
  f.max_bytes = dash == std::string_view::npos ? f.min_bytes : parse_length(s.substr(dash + 1), s);
  if (f.min_bytes > f.max_bytes)
    throw Error(Errc::invalid_argument,
                "--key-length '" + std::string(s) + "': MIN is above MAX; write MIN-MAX");
}

StringKeyMaker::StringKeyMaker(const KeyFormat& f, Distribution d) : f_(f), dist_(d) {
  const std::string range = f.min_bytes == f.max_bytes
                                ? fmt::format("{}", f.min_bytes)
                                : fmt::format("{}-{}", f.min_bytes, f.max_bytes);
  if (f.set == KeySet::random && f.min_bytes < 8)
    throw Error(Errc::invalid_argument,
                "--key-length " + range +
                    ": random keys hold at least 8 bytes (their first 8 keep them distinct); "
                    "give a length of 8 or more");
  if (f.set == KeySet::u64be && (f.min_bytes != 8 || f.max_bytes != 8))
    throw Error(Errc::invalid_argument, "--key-length " + range +
                                            ": u64be keys are 8 bytes; drop --key-length, or "
                                            "use --key-set random");
  min_ = f.min_bytes;
  max_ = f.max_bytes;
  if (f.set == KeySet::words) {
    words_ = read_words(f.words_file);
    auto [lo, hi] =
        std::minmax_element(words_.begin(), words_.end(),
                            [](const auto& a, const auto& b) { return a.size() < b.size(); });
    min_ = static_cast<std::uint32_t>(lo->size());
    max_ = static_cast<std::uint32_t>(hi->size());
  }
}

void StringKeyMaker::make(Key key, std::string& out) const {
  switch (f_.set) {
    case KeySet::u64be:
      out.resize(8);
      put_be64(key, out.data());
      return;
    case KeySet::random:
      make_random(key, out);
      return;
    case KeySet::words:
      make_word(key, out);
      return;
  }
}

// Word i after the first 8 bytes is mix64 of the key's seed plus i (SplitMix64 in counter
// mode): the words do not depend on each other, so the CPU computes them side by side, where
// a chain of mix64 calls took about 100 ns of a 256-byte key, timed with every operation.
void StringKeyMaker::make_random(Key key, std::string& out) const {
  const std::uint64_t x = mix64(key ^ 0x6b657973ULL);
  const std::uint32_t len = min_ + static_cast<std::uint32_t>(x % (max_ - min_ + 1));
  out.resize(len);
  put_be64(key, out.data());
  char* p = out.data() + 8;
  const std::uint32_t words = (len - 8) / 8;
  for (std::uint32_t i = 0; i < words; ++i) {
    const std::uint64_t w = mix64(x + i);
    std::memcpy(p + 8 * i, &w, 8);
  }
  if (const std::uint32_t tail = (len - 8) % 8) {
    const std::uint64_t w = mix64(x + words);
    std::memcpy(p + 8 * words, &w, tail);
  }
}

void StringKeyMaker::make_word(Key key, std::string& out) const {
  const std::uint64_t id = dist_ == Distribution::sequential ? key : unmix64(key);
  const std::uint64_t variant = id / words_.size();
  out = words_[id % words_.size()];
  if (variant == 0) return;
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof buf, variant).ptr;
  out += kVariantMark;
  out.append(buf, end);
}

}  // namespace dptree::bench
