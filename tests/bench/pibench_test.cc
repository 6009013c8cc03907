// Drives libdptree_pibench.so the way PiBench does: dlopen, dlsym("create_tree"), then the
// virtual functions of the tree it returns. The interface is the tests' own declaration of
// PiBench's (pibench/pibench_api.h), not the wrapper's header: a wrapper whose vtable or
// options struct differ from PiBench's fails here.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dptree/registry.h"
#include "pibench/pibench_api.h"

namespace {

namespace fs = std::filesystem;
using CreateTree = tree_api* (*)(const tree_options_t&);
using Model = std::map<std::uint64_t, std::uint64_t>;

constexpr std::size_t kPoolBytes = 32 << 20;
constexpr std::uint64_t kKeys = 600;  // enough for merges and splits in every index

// Where the wrapper puts a temporary pool (pm::default_pool_dir's rule).
fs::path pool_dir() {
  if (fs::is_directory("/dev/shm") && access("/dev/shm", W_OK) == 0) return "/dev/shm";
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}
fs::path temp_pool_of(pid_t pid) {
  return pool_dir() / ("dptree-pibench-" + std::to_string(pid) + ".pool");
}

std::uint64_t key_of(std::uint64_t i) {  // scattered, distinct, never 0
  return (i + 1) * 0x9E3779B97F4A7C15ULL >> 2;
}

bool put(tree_api& t, std::uint64_t k, std::uint64_t v, bool insert) {
  char key[8], val[8];
  std::memcpy(key, &k, 8);
  std::memcpy(val, &v, 8);
  return insert ? t.insert(key, 8, val, 8) : t.update(key, 8, val, 8);
}
std::optional<std::uint64_t> get(tree_api& t, std::uint64_t k) {
  char key[8], val[8] = {};
  std::memcpy(key, &k, 8);
  if (!t.find(key, 8, val)) return std::nullopt;
  std::uint64_t v;
  std::memcpy(&v, val, 8);
  return v;
}
bool del(tree_api& t, std::uint64_t k) {
  char key[8];
  std::memcpy(key, &k, 8);
  return t.remove(key, 8);
}
std::vector<std::pair<std::uint64_t, std::uint64_t>> scan(tree_api& t, std::uint64_t from, int n) {
  char key[8];
  std::memcpy(key, &from, 8);
  char* out = nullptr;
  const int got = t.scan(key, 8, n, out);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> r(static_cast<std::size_t>(got));
  for (int i = 0; i < got; ++i) {
    std::memcpy(&r[static_cast<std::size_t>(i)].first, out + 16 * i, 8);
    std::memcpy(&r[static_cast<std::size_t>(i)].second, out + 16 * i + 8, 8);
  }
  return r;
}
std::vector<std::pair<std::uint64_t, std::uint64_t>> expected_scan(const Model& m,
                                                                   std::uint64_t from, int n) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> r;
  for (auto it = m.lower_bound(from); it != m.end() && static_cast<int>(r.size()) < n; ++it)
    r.emplace_back(*it);
  return r;
}

// Runs fn(i) for i in [0, n) on `threads` threads at once, thread t taking i % threads == t;
// returns how many calls returned true.
std::uint64_t on_threads(unsigned threads, std::uint64_t n,
                         const std::function<bool(std::uint64_t)>& fn) {
  std::vector<std::uint64_t> ok(threads, 0);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (std::uint64_t i = t; i < n; i += threads) ok[t] += fn(i);
    });
  for (auto& th : ts) th.join();
  std::uint64_t sum = 0;
  for (auto c : ok) sum += c;
  return sum;
}

class PiBenchWrapper : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = dlopen(DPTREE_PIBENCH_SO, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
    create_ = reinterpret_cast<CreateTree>(dlsym(lib_, "create_tree"));
    ASSERT_NE(create_, nullptr) << dlerror();
  }
  void TearDown() override {
    unsetenv("DPTREE_PIBENCH_INDEX");
    unsetenv("DPTREE_PIBENCH_OPTIONS");
    unsetenv("DPTREE_PIBENCH_WRITES");
    unsetenv("DPTREE_PIBENCH_RECORDS");
    unsetenv("DPTREE_PIBENCH_PM_MODE");
    if (lib_) dlclose(lib_);
  }
  std::unique_ptr<tree_api> create(const std::string& index, unsigned threads,
                                   const std::string& pool_path = "") {
    setenv("DPTREE_PIBENCH_INDEX", index.c_str(), 1);
    tree_options_t opt;
    opt.pool_size = kPoolBytes;
    opt.num_threads = threads;
    opt.pool_path = pool_path;
    return std::unique_ptr<tree_api>(create_(opt));
  }
  // Forks a child that runs `body` and exits through exit() (so exit handlers run) with its
  // result; returns the child's pid and its exit status.
  std::pair<pid_t, int> in_child(const std::function<int()>& body, const fs::path& err = {}) {
    const pid_t pid = fork();
    if (pid == 0) {
      if (!err.empty() && !std::freopen(err.c_str(), "w", stderr)) std::_Exit(90);
      std::exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return {pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
  }
  void* lib_ = nullptr;
  CreateTree create_ = nullptr;
};

// Every operation of tree_api, from `threads` threads at once, checked against a model.
void exercise(tree_api& t, unsigned threads, const std::string& what) {
  Model m;
  for (std::uint64_t i = 0; i < kKeys; ++i) m[key_of(i)] = i + 1;
  EXPECT_EQ(on_threads(threads, kKeys, [&](auto i) { return put(t, key_of(i), i + 1, true); }),
            kKeys)
      << what << ": insert of new keys";
  EXPECT_EQ(on_threads(threads, kKeys, [&](auto i) { return put(t, key_of(i), 7, true); }), 0u)
      << what << ": insert of present keys must fail and change nothing";
  EXPECT_EQ(on_threads(threads, kKeys, [&](auto i) { return get(t, key_of(i)) == i + 1; }), kKeys)
      << what << ": find after insert";
  EXPECT_EQ(on_threads(threads, kKeys, [&](auto i) { return get(t, key_of(i) + 1).has_value(); }),
            0u)
      << what << ": find of absent keys";

  // Update every other key; updates of absent keys fail and insert nothing.
  for (std::uint64_t i = 0; i < kKeys; i += 2) m[key_of(i)] = 1000000 + i;
  EXPECT_EQ(on_threads(threads, kKeys / 2,
                       [&](auto j) { return put(t, key_of(2 * j), 1000000 + 2 * j, false); }),
            kKeys / 2)
      << what << ": update of present keys";
  EXPECT_EQ(on_threads(threads, kKeys, [&](auto i) { return put(t, key_of(i) + 1, 5, false); }), 0u)
      << what << ": update of absent keys";

  // Scans: order, count and values as the model says, from every thread; then every record
  // is still there (a scan reads, it deletes nothing).
  EXPECT_EQ(on_threads(threads, 50,
                       [&](auto i) {
                         const std::uint64_t from = key_of(i * 11) - 1;
                         const int n = static_cast<int>(1 + i % 20);
                         return scan(t, from, n) == expected_scan(m, from, n);
                       }),
            50u)
      << what << ": scans";
  EXPECT_EQ(scan(t, 0, static_cast<int>(kKeys) + 10),
            expected_scan(m, 0, static_cast<int>(kKeys) + 10))
      << what << ": a scan of everything";
  EXPECT_EQ(scan(t, ~std::uint64_t{0}, 5).size(), 0u) << what << ": a scan past the last key";
  EXPECT_EQ(on_threads(threads, kKeys, [&](auto i) { return get(t, key_of(i)) == m[key_of(i)]; }),
            kKeys)
      << what << ": every record after the scans";

  // Remove every third key, then once more (fails), and the rest stays.
  for (std::uint64_t i = 0; i < kKeys; i += 3) m.erase(key_of(i));
  EXPECT_EQ(on_threads(threads, kKeys / 3, [&](auto j) { return del(t, key_of(3 * j)); }),
            kKeys / 3)
      << what << ": remove of present keys";
  EXPECT_EQ(on_threads(threads, kKeys / 3, [&](auto j) { return del(t, key_of(3 * j)); }), 0u)
      << what << ": remove of removed keys";
  EXPECT_EQ(scan(t, 0, static_cast<int>(kKeys)), expected_scan(m, 0, static_cast<int>(kKeys)))
      << what << ": everything after the removes";
}

TEST_F(PiBenchWrapper, EveryIndexThroughPiBenchsInterface) {
  for (const auto& info : dptree::registered_indexes()) {
    for (unsigned threads : {1u, 2u}) {
      if (threads > 1 && !info.concurrent) continue;
      const std::string what = info.name + " at " + std::to_string(threads) + " thread(s)";
      auto t = create(info.name, threads);
      ASSERT_NE(t, nullptr) << what;
      exercise(*t, threads, what);
      t.reset();
      EXPECT_FALSE(fs::exists(temp_pool_of(getpid()))) << what << ": temporary pool removed";
    }
  }
}

// DPTREE_PIBENCH_WRITES=blind: insert and update write whatever is there and succeed.
TEST_F(PiBenchWrapper, BlindWritesOverwriteAndCreate) {
  setenv("DPTREE_PIBENCH_WRITES", "blind", 1);
  for (const auto& info : dptree::registered_indexes()) {
    auto t = create(info.name, 1);
    ASSERT_NE(t, nullptr) << info.name;
    EXPECT_TRUE(put(*t, 10, 1, true)) << info.name;
    EXPECT_TRUE(put(*t, 10, 2, true)) << info.name << ": insert of a present key overwrites";
    EXPECT_EQ(get(*t, 10), 2u) << info.name;
    EXPECT_TRUE(put(*t, 20, 3, false)) << info.name << ": update of an absent key creates it";
    EXPECT_EQ(get(*t, 20), 3u) << info.name;
    EXPECT_FALSE(del(*t, 30)) << info.name << ": remove stays checked";
  }
  setenv("DPTREE_PIBENCH_WRITES", "sometimes", 1);
  EXPECT_EQ(create("dptree", 1), nullptr) << "an unknown DPTREE_PIBENCH_WRITES";
  EXPECT_FALSE(fs::exists(temp_pool_of(getpid())));
}

TEST_F(PiBenchWrapper, RefusesWhatItCannotServe) {
  EXPECT_EQ(create("no_such_index", 1), nullptr);
  EXPECT_EQ(create("dptree", 2), nullptr) << "dptree is not concurrent";
  setenv("DPTREE_PIBENCH_INDEX", "btree", 1);
  tree_options_t opt;
  opt.key_size = 16;
  EXPECT_EQ(create_(opt), nullptr) << "keys longer than 8 bytes on an integer-only index";
  setenv("DPTREE_PIBENCH_INDEX", "absl-btree", 1);
  opt.key_size = 1025;
  EXPECT_EQ(create_(opt), nullptr) << "keys longer than the limit of string keys";
  opt.key_size = 8;
  opt.value_size = 16;
  EXPECT_EQ(create_(opt), nullptr) << "values longer than 8 bytes";
  for (const char* bad : {"-5", "1e6", "12x", "99999999999999999999"}) {
    setenv("DPTREE_PIBENCH_RECORDS", bad, 1);
    EXPECT_EQ(create("tips-btree", 1), nullptr) << "DPTREE_PIBENCH_RECORDS=" << bad;
  }
  setenv("DPTREE_PIBENCH_RECORDS", "1000000", 1);
  EXPECT_NE(create("tips-btree", 1), nullptr);
  unsetenv("DPTREE_PIBENCH_RECORDS");
  setenv("DPTREE_PIBENCH_PM_MODE", "nvme", 1);
  EXPECT_EQ(create("btree", 1), nullptr) << "an unknown DPTREE_PIBENCH_PM_MODE";
  unsetenv("DPTREE_PIBENCH_PM_MODE");
  setenv("DPTREE_PIBENCH_OPTIONS", "leaf_capacity", 1);
  EXPECT_EQ(create("dptree", 1), nullptr) << "an option without a value";
  EXPECT_FALSE(fs::exists(temp_pool_of(getpid())));
}

// Keys longer than 8 bytes (PiBench -k) go to an index's string form: keys of that size
// holding zero bytes, sharing long prefixes and differing in their last byte only, checked
// against a model in memcmp order; scans return key_size bytes of key per record.
TEST_F(PiBenchWrapper, LongKeysDriveTheStringForm) {
  std::vector<std::string> names = {"absl-btree"};
  for (const auto& info : dptree::registered_indexes())
    if (info.create_string) names.push_back(info.name);
  for (const std::string& name : names)
    for (std::size_t ks : {16u, 100u}) {
      const std::string what = name + " with " + std::to_string(ks) + "-byte keys";
      setenv("DPTREE_PIBENCH_INDEX", name.c_str(), 1);
      tree_options_t opt;
      opt.key_size = ks;
      opt.pool_size = kPoolBytes;
      std::unique_ptr<tree_api> t(create_(opt));
      ASSERT_NE(t, nullptr) << what;
      auto key = [ks](std::uint64_t i) {  // distinct for i < 1792
        std::string k(ks, '\0');
        k[0] = static_cast<char>(i % 3);
        k[ks / 2] = static_cast<char>(i / 7);
        k[ks - 1] = static_cast<char>(i);
        return k;
      };
      auto write = [&](std::uint64_t i, std::uint64_t v, bool insert) {
        const std::string k = key(i);
        return insert ? t->insert(k.data(), ks, reinterpret_cast<const char*>(&v), 8)
                      : t->update(k.data(), ks, reinterpret_cast<const char*>(&v), 8);
      };
      auto find = [&](const std::string& k) -> std::optional<std::uint64_t> {
        std::uint64_t v = 0;
        if (!t->find(k.data(), ks, reinterpret_cast<char*>(&v))) return std::nullopt;
        return v;
      };
      std::map<std::string, std::uint64_t> m;
      for (std::uint64_t i = 0; i < kKeys; ++i) {
        EXPECT_TRUE(write(i, i + 1, true)) << what << " insert " << i;
        EXPECT_FALSE(write(i, 7, true)) << what << " insert of a present key";
        m[key(i)] = i + 1;
      }
      for (std::uint64_t i = 0; i < kKeys; i += 2) {
        EXPECT_TRUE(write(i, 5000 + i, false)) << what << " update " << i;
        m[key(i)] = 5000 + i;
      }
      for (std::uint64_t i = 0; i < kKeys; i += 3) {
        EXPECT_TRUE(t->remove(key(i).data(), ks)) << what << " remove " << i;
        m.erase(key(i));
      }
      EXPECT_FALSE(write(kKeys + 1, 1, false)) << what << ": update of an absent key";
      for (std::uint64_t i = 0; i < kKeys; ++i) {
        auto it = m.find(key(i));
        EXPECT_EQ(find(key(i)), it == m.end() ? std::nullopt : std::optional(it->second))
            << what << " find " << i;
      }
      for (std::uint64_t i = 0; i < kKeys; i += 37) {
        char* out = nullptr;
        const std::string from = key(i);
        const int got = t->scan(from.data(), ks, 25, out);
        auto it = m.lower_bound(from);
        ASSERT_EQ(got, std::min<int>(25, static_cast<int>(std::distance(it, m.end())))) << what;
        for (int r = 0; r < got; ++r, ++it) {
          const char* rec = out + r * (ks + 8);
          EXPECT_EQ(std::string(rec, ks), it->first) << what << " scan from " << i << " #" << r;
          std::uint64_t v = 0;
          std::memcpy(&v, rec + ks, 8);
          EXPECT_EQ(v, it->second) << what << " scan from " << i << " #" << r;
        }
      }
    }
}

TEST_F(PiBenchWrapper, FailedCreateLeavesNoPool) {
  // The option is refused by the index, after the wrapper made the temporary pool.
  setenv("DPTREE_PIBENCH_OPTIONS", "leaf_capacity=100000", 1);
  for (const char* index : {"dptree", "cdptree"}) {
    EXPECT_EQ(create(index, 1), nullptr) << index;
    EXPECT_FALSE(fs::exists(temp_pool_of(getpid()))) << index;
  }
}

// PiBench exits without deleting the tree after a failed check: the temporary pool goes at
// exit; a pool the user named stays.
TEST_F(PiBenchWrapper, TemporaryPoolGoesAtExitNamedPoolStays) {
  static tree_api* kept = nullptr;  // reachable, so the leak checker does not object
  auto [pid, status] = in_child([&] {
    kept = create("dptree", 1).release();
    if (!kept || !put(*kept, 1, 2, true)) return 3;
    return fs::exists(temp_pool_of(getpid())) ? 0 : 4;
  });
  ASSERT_EQ(status, 0) << "the child could not make its tree (3) or saw no pool file (4)";
  EXPECT_FALSE(fs::exists(temp_pool_of(pid)));

  const fs::path named = pool_dir() / ("dptree-pibench-test-" + std::to_string(getpid()));
  fs::remove(named);
  status = in_child([&] {
             kept = create("dptree", 1, named.string()).release();
             return kept && put(*kept, 1, 2, true) ? 0 : 3;
           }).second;
  ASSERT_EQ(status, 0);
  EXPECT_TRUE(fs::exists(named)) << "a pool the user named is the user's";
  auto reopened = create("dptree", 1, named.string());
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(get(*reopened, 1), 2u) << "the named pool reopens with its record";
  reopened.reset();
  fs::remove(named);
}

// A full pool refuses every later write: one line for the first, a count at exit.
TEST_F(PiBenchWrapper, FullPoolPrintsOnceAndCountsAtExit) {
  const fs::path err = fs::temp_directory_path() / ("pibench-err-" + std::to_string(getpid()));
  const int status = in_child(
                         [&] {
                           setenv("DPTREE_PIBENCH_INDEX", "fastfair", 1);
                           tree_options_t opt;
                           opt.pool_size = 256 << 10;
                           std::unique_ptr<tree_api> t(create_(opt));
                           if (!t) return 3;
                           std::uint64_t refused = 0;
                           for (std::uint64_t i = 0; i < 100000 && refused < 500; ++i)
                             refused += !put(*t, key_of(i), 1, true);
                           return refused == 500 ? 0 : 4;
                         },
                         err)
                         .second;
  ASSERT_EQ(status, 0) << "the child could not make its tree (3) or never filled it (4)";
  std::ifstream in(err);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  fs::remove(err);
  ASSERT_EQ(lines.size(), 2u) << "the first failure and the count at exit";
  EXPECT_NE(lines[0].find("full"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("500 operations failed (500 pool full)"), std::string::npos) << lines[1];
}

}  // namespace
