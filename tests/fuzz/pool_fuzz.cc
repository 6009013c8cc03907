// The pool fuzzer's harness (pool_fuzz.h).
#include "fuzz/pool_fuzz.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "dptree/string_index.h"

namespace dptree::fuzz {

// From the registry: each persistent index's fuzz plan (TestPlan::fuzz), then the string
// forms' (TestPlan::fuzz_strings).
const std::vector<Target>& targets() {
  static const std::vector<Target> all = [] {
    std::vector<Target> out;
    auto add = [&](const IndexInfo& i, const TestPlan::Fuzz& f, bool strings) {
      Target t{i.name, f.options, Target{}.seed_pool_bytes, strings};
      if (f.seed_pool_bytes) t.seed_pool_bytes = f.seed_pool_bytes;
      out.push_back(std::move(t));
    };
    for (const IndexInfo& i : registered_indexes())
      if (i.persistent && i.tests.fuzz) add(i, *i.tests.fuzz, false);
    for (const IndexInfo& i : registered_indexes())
      if (i.persistent && i.create_string && i.tests.fuzz_strings)
        add(i, *i.tests.fuzz_strings, true);
    return out;
  }();
  return all;
}

const Target& target(const std::string& name) {
  for (const auto& t : targets())
    if (t.name() == name) return t;
  throw Error(Errc::invalid_argument, "no fuzz target '" + name + "'");
}

namespace {

IndexConfig config_of(const Target& t, pm::Pool& pool) {
  IndexConfig c;
  c.pool = &pool;
  c.options = t.options;
  return c;
}

std::unique_ptr<Index> open_index(const Target& t, pm::Pool& pool) {
  return find_index(t.index).create(config_of(t, pool));
}

std::unique_ptr<StringIndex> open_string_index(const Target& t, pm::Pool& pool) {
  return find_index(t.index).create_string(config_of(t, pool));
}

// Key k as a string key: its decimal digits padded with byte k to one of the lengths that
// matter to string leaves and records (1, 8, 9, 63, 64, 65, 200 bytes).
std::string string_key(Key k) {
  static constexpr std::size_t kLengths[] = {1, 8, 9, 63, 64, 65, 200};
  std::string s = std::to_string(k);
  s.resize(std::max(s.size(), kLengths[k % 7]), static_cast<char>(k));
  return s;
}

Bytes bytes_of(const pm::Pool& pool) {
  const auto* b = reinterpret_cast<const std::uint8_t*>(pool.base());
  return Bytes(b, b + pool.size());
}

// `ops` writes and removes over a small key space; merges happen along the way.
template <class Idx, class KeyOf>
void workload(Idx& idx, std::size_t ops, std::uint64_t seed, KeyOf key_of) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < ops; ++i) {
    const auto k = key_of(rng() % 400);
    if (rng() % 5 == 0)
      idx.remove(k);
    else
      idx.upsert(k, rng() % 1000000);
  }
}

// The seed workload on the index `t` opens in `pool`, which stays open until `open_seen`
// (called with the workload done) returns.
template <class Seen>
void seed_workload(const Target& t, pm::Pool& pool, std::size_t ops, Seen open_seen) {
  if (t.strings) {
    auto idx = open_string_index(t, pool);
    workload(*idx, ops, ops, string_key);
    open_seen();
  } else {
    auto idx = open_index(t, pool);
    workload(*idx, ops, ops, [](Key k) { return k; });
    open_seen();
  }
}

struct DramMode {
  DramMode() : old(pm::mode()) { pm::set_mode(pm::Mode::dram); }
  ~DramMode() { pm::set_mode(old); }
  pm::Mode old;
};

// Opens the image make() returns, recovers it, runs check() and a scan (run_one).
template <class Make>
bool accepted(const Target& t, Make make) {
  static DramMode dram;
  try {
    auto pool = pm::Pool::open_image(pm::Image{make()});
    if (t.strings) {
      auto idx = open_string_index(t, *pool);
      idx->check();
      std::vector<StringKV> out;
      idx->scan(std::string(1, '\0'), 64, out);
    } else {
      auto idx = open_index(t, *pool);
      idx->check();
      std::vector<KV> out;
      idx->scan(0, 64, out);
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Stores each 12-byte patch of `data` (after its seed byte) into the image at `img`.
void patch(std::byte* img, std::size_t bytes, const std::uint8_t* data, std::size_t size) {
  constexpr std::size_t kPatch = 12;
  const std::size_t words = bytes / 8;
  for (std::size_t at = 1; at + kPatch <= size; at += kPatch) {
    std::uint32_t w;
    std::memcpy(&w, data + at, 4);
    std::memcpy(img + 8 * (w % words), data + at + 4, 8);
  }
}

}  // namespace

std::vector<Bytes> make_seeds(const Target& t, std::size_t pool_bytes) {
  DramMode dram;
  std::vector<Bytes> out;
  for (std::size_t ops : {30, 200, 600}) {
    auto pool = pm::Pool::create_in_memory(pool_bytes ? pool_bytes : t.seed_pool_bytes);
    // Open: a crash with every store durable; then closed.
    seed_workload(t, *pool, ops, [&] { out.push_back(bytes_of(*pool)); });
    out.push_back(bytes_of(*pool));
  }
  return out;
}

bool run_one(const Target& t, const std::uint8_t* data, std::size_t size) {
  return accepted(t, [&] { return pm::Buffer::copy_of(std::as_bytes(std::span(data, size))); });
}

Bytes apply_patches(const std::vector<Bytes>& seeds, const std::uint8_t* data, std::size_t size) {
  if (size == 0 || seeds.empty()) return {};
  Bytes img = seeds[data[0] % seeds.size()];
  patch(reinterpret_cast<std::byte*>(img.data()), img.size(), data, size);
  return img;
}

bool run_patched(const Target& t, const std::vector<Bytes>& seeds, const std::uint8_t* data,
                 std::size_t size) {
  if (size == 0 || seeds.empty()) return false;
  const Bytes& seed = seeds[data[0] % seeds.size()];
  return accepted(t, [&] {
    pm::Buffer img = pm::Buffer::copy_of(std::as_bytes(std::span(seed)));
    patch(img.data(), img.size(), data, size);
    return img;
  });
}

std::uint64_t damage(std::uint64_t x, std::uint64_t other, std::size_t pool_bytes,
                     std::mt19937_64& rng) {
  switch (rng() % 10) {
    case 0:
      return 0;
    case 1:
      return ~std::uint64_t{0};
    case 2:
      return x ^ std::uint64_t{1} << (rng() % 64);
    case 3:
      return x + (rng() % 2 ? 1 : ~std::uint64_t{0});
    case 4:
      return other;
    case 5:
      return pool_bytes - 8 * (rng() % 4);
    case 6:
      return rng() % 32;
    case 7:
      return (rng() % pool_bytes) & ~std::uint64_t{63};
    case 8:
      return x + 64 * (1 + rng() % 8);
    default:
      return rng();
  }
}

void mutate(Bytes& img, std::mt19937_64& rng) {
  const std::size_t words = img.size() / 8;
  if (words == 0) return;
  std::vector<std::size_t> live;  // non-zero words past the pool header's checked lines
  for (std::size_t w = 16; w < words; ++w) {
    std::uint64_t x;
    std::memcpy(&x, img.data() + 8 * w, 8);
    if (x) live.push_back(w);
  }
  auto pick_word = [&] {
    if (!live.empty() && rng() % 8 != 0) return live[rng() % live.size()];
    return static_cast<std::size_t>(rng() % words);
  };
  const int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    std::size_t w = pick_word();
    std::uint64_t x;
    std::memcpy(&x, img.data() + 8 * w, 8);
    std::uint64_t other = 0;
    if (!live.empty()) std::memcpy(&other, img.data() + 8 * live[rng() % live.size()], 8);
    x = damage(x, other, img.size(), rng);
    std::memcpy(img.data() + 8 * w, &x, 8);
  }
}

}  // namespace dptree::fuzz
