// Loads the PiBench wrapper the way PiBench does (dlopen + create_tree) and drives it.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tree_api.hpp"

namespace {

using CreateTree = tree_api* (*)(const tree_options_t&);

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
    if (lib_) dlclose(lib_);
  }
  void* lib_ = nullptr;
  CreateTree create_ = nullptr;
};

bool put(tree_api& t, std::uint64_t k, std::uint64_t v, bool insert) {
  char key[8], val[8];
  std::memcpy(key, &k, 8);
  std::memcpy(val, &v, 8);
  return insert ? t.insert(key, 8, val, 8) : t.update(key, 8, val, 8);
}

std::uint64_t get(tree_api& t, std::uint64_t k, bool* found) {
  char key[8], val[8] = {};
  std::memcpy(key, &k, 8);
  *found = t.find(key, 8, val);
  std::uint64_t v;
  std::memcpy(&v, val, 8);
  return v;
}

TEST_F(PiBenchWrapper, OperationsThroughTheTreeApi) {
  for (const char* index : {"btree", "stdmap"}) {
    setenv("DPTREE_PIBENCH_INDEX", index, 1);
    tree_options_t opt;
    std::unique_ptr<tree_api> t(create_(opt));
    ASSERT_NE(t, nullptr) << index;
    for (std::uint64_t k = 10; k <= 100; k += 10) EXPECT_TRUE(put(*t, k, k * 2, true));
    EXPECT_FALSE(put(*t, 10, 1, true)) << "insert of an existing key";
    EXPECT_TRUE(put(*t, 20, 7, false));
    EXPECT_FALSE(put(*t, 25, 7, false)) << "update of a missing key";
    bool found = false;
    EXPECT_EQ(get(*t, 20, &found), 7u);
    EXPECT_TRUE(found);
    get(*t, 25, &found);
    EXPECT_FALSE(found);
    char key[8];
    std::uint64_t k = 30;
    std::memcpy(key, &k, 8);
    EXPECT_TRUE(t->remove(key, 8));
    EXPECT_FALSE(t->remove(key, 8));
    // Scan from 25: 40, 50, 60 as packed <key><value> pairs.
    k = 25;
    std::memcpy(key, &k, 8);
    char* out = nullptr;
    ASSERT_EQ(t->scan(key, 8, 3, out), 3);
    for (int i = 0; i < 3; ++i) {
      std::uint64_t rk, rv;
      std::memcpy(&rk, out + 16 * i, 8);
      std::memcpy(&rv, out + 16 * i + 8, 8);
      EXPECT_EQ(rk, 40u + 10u * static_cast<unsigned>(i));
      EXPECT_EQ(rv, rk * 2);
    }
  }
}

TEST_F(PiBenchWrapper, RefusesWhatItCannotServe) {
  tree_options_t opt;
  setenv("DPTREE_PIBENCH_INDEX", "no_such_index", 1);
  EXPECT_EQ(create_(opt), nullptr);
  setenv("DPTREE_PIBENCH_INDEX", "stdmap", 1);
  opt.num_threads = 4;
  EXPECT_EQ(create_(opt), nullptr) << "stdmap is not concurrent";
  opt.num_threads = 1;
  opt.key_size = 16;
  EXPECT_EQ(create_(opt), nullptr) << "keys longer than 8 bytes";
}

}  // namespace
