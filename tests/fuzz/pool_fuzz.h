// The pool fuzzer's harness: every persistent index opens a damaged pool image, recovers it and
// runs check() (and a scan), and must either accept it or refuse it with dptree::Error; a
// crash, a hang, a sanitizer report or any other exception is a bug. Used by the libFuzzer
// targets (fuzz_target.cc, `make fuzz`) and by the GoogleTest mutation loop (`make test`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace dptree::fuzz {

using Bytes = std::vector<std::uint8_t>;

// A persistent index with options that make its structures small (many nodes, pages and log
// records in a small pool): its registry entry's fuzz plan.
struct Target {
  std::string index;
  std::map<std::string, std::string> options;
  // The seed pools' size: the smallest that holds every seed workload, plus 128 KiB (but not
  // below pm::kMinPoolSize). An execution copies and opens the whole pool, so it sets the
  // fuzzers' speed.
  std::size_t seed_pool_bytes = 256 * 1024;
  // The index's string form (string_index.h) over string keys, named "<index>-strings".
  bool strings = false;
  std::string name() const { return strings ? index + "-strings" : index; }
};

// Every persistent index of the registry with a fuzz plan (registry.h, TestPlan::fuzz), in
// registration order, then the string forms with one (TestPlan::fuzz_strings).
const std::vector<Target>& targets();
const Target& target(const std::string& name);

// The seed size the libFuzzer inputs in tests/fuzz/regressions/ were found with (an input's
// patches name words of the pool, so it replays only on seeds of that size).
inline constexpr std::size_t kRegressionSeedBytes = 1024 * 1024;

// Seed images of `t`: pools of `pool_bytes` (0: t.seed_pool_bytes) written by small
// workloads (writes, removes, merges), taken both after the index is closed and while it is
// open (a crash with every store durable).
std::vector<Bytes> make_seeds(const Target& t, std::size_t pool_bytes = 0);

// Opens `data` as a pool image with `t`'s index, recovers it, runs check() and a scan. True
// when the index accepted the image, false when it refused it with dptree::Error. Anything
// else escapes (the fuzzers report it).
bool run_one(const Target& t, const std::uint8_t* data, std::size_t size);

// One mutation of `img` in place: most hit words that are non-zero in the image (offsets,
// counts, states), with values an index must not trust (out of the pool, unaligned, another
// block's offset, off by one, all ones).
void mutate(Bytes& img, std::mt19937_64& rng);

// The pool a libFuzzer input (fuzz_target.cc) stands for: byte 0 picks one of `seeds`, each
// further 12 bytes a patch (a word index modulo the pool's words, then the 8-byte value).
Bytes apply_patches(const std::vector<Bytes>& seeds, const std::uint8_t* data, std::size_t size);

// run_one on the pool apply_patches gives, built in place in reused pool memory (one copy of
// the seed, no allocation): the libFuzzer targets' execution.
bool run_patched(const Target& t, const std::vector<Bytes>& seeds, const std::uint8_t* data,
                 std::size_t size);

// The damaged value mutate() stores over a word holding `x`: 0, all ones, a flipped bit, off
// by one, `other` (another word's value, e.g. another block's offset), near `pool_bytes`, a
// small count, a random line offset, a few lines further, or random bits.
std::uint64_t damage(std::uint64_t x, std::uint64_t other, std::size_t pool_bytes,
                     std::mt19937_64& rng);

}  // namespace dptree::fuzz
