#include "dptree/pm/pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "dptree/error.h"
#include "dptree/pm/persist.h"
#include "pm/layout.h"

namespace dptree::pm {
namespace {

namespace fs = std::filesystem;

class PoolFile : public ::testing::Test {
 protected:
  void SetUp() override {
    set_mode(Mode::dram);
    dir_ = default_pool_dir() / ("dptree-pool-test-" + std::to_string(getpid()) + "-" +
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::vector<char> bytes_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static void write_bytes(const fs::path& p, const std::vector<char>& b) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  }
  // Opening `p` throws `code` with a message naming the file, and leaves it byte-identical.
  static void expect_refused(const fs::path& p, Errc code, const char* words) {
    auto before = bytes_of(p);
    try {
      auto pool = Pool::open(p);
      FAIL() << "opened a bad pool file";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      std::string msg = e.what();
      EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
      EXPECT_NE(msg.find(words), std::string::npos) << msg;
    }
    EXPECT_EQ(bytes_of(p), before);
  }
  fs::path make_pool(std::size_t size = 1 << 20) {
    auto p = dir_ / "good.pool";
    Pool::create(p, size);
    return p;
  }

  fs::path dir_;
};

TEST_F(PoolFile, RoundTripKeepsRootAndData) {
  auto p = dir_ / "a.pool";
  std::array<std::uint8_t, 16> uuid{};
  {
    auto pool = Pool::create(p, 1 << 20);
    EXPECT_EQ(pool->size(), 1u << 20);
    EXPECT_EQ(*pool->root_word(), 0u);
    auto blk = pool->allocator().reserve(100);
    std::strcpy(pool->at<char>(blk), "hello pool");
    persist(pool->at<char>(blk), 11);
    pool->allocator().activate(pool->root_word(), blk);
    uuid = pool->uuid();
  }
  auto pool = Pool::open(p);
  ASSERT_NE(pool->root<char>(), nullptr);
  EXPECT_STREQ(pool->root<char>(), "hello pool");
  EXPECT_EQ(pool->uuid(), uuid);
  EXPECT_TRUE(pool->allocator().is_live(*pool->root_word()));
}

// Page faults this process took while `touch` wrote one byte to each page of `pool`'s upper
// half (the lower half holds the header and the allocator's words).
long faults_touching_upper_half(Pool& pool) {
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  for (std::size_t off = pool.size() / 2; off < pool.size(); off += 4096)
    *reinterpret_cast<volatile std::uint8_t*>(pool.base() + off) = 1;
  getrusage(RUSAGE_SELF, &after);
  return after.ru_minflt - before.ru_minflt;
}

bool kernel_has_populate_write() {  // MADV_POPULATE_WRITE: Linux 5.14
  utsname u{};
  int major = 0, minor = 0;
  return uname(&u) == 0 && std::sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
         (major > 5 || (major == 5 && minor >= 14));
}

TEST_F(PoolFile, PrefaultMapsEveryPageSoStoresTakeNoFault) {
  constexpr std::size_t kSize = 64 << 20;
  const long pages = kSize / 2 / 4096;
  auto cold = Pool::create(dir_ / "cold.pool", kSize);
  EXPECT_GE(faults_touching_upper_half(*cold), pages);  // the measure sees first touches
  auto warm = Pool::create(dir_ / "warm.pool", kSize);
  if (!kernel_has_populate_write()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  ASSERT_TRUE(warm->prefault());
  // Sanitizer shadow pages may still fault (one per 8 pool pages under ASan).
  EXPECT_LT(faults_touching_upper_half(*warm), pages / 4);
  EXPECT_EQ(*warm->root_word(), 0u);  // populating changes no byte
  auto blk = warm->allocator().reserve(100);
  EXPECT_NE(blk, 0u);
}

TEST_F(PoolFile, PrefaultRefusesACopyOnWritePool) {
  auto p = make_pool();
  auto pool = Pool::open(p, OpenMode::copy_on_write);
  EXPECT_FALSE(pool->prefault());
  EXPECT_TRUE(pool->changed_ranges().empty());
}

TEST_F(PoolFile, CreateRefusesAnExistingFile) {
  auto p = dir_ / "x";
  write_bytes(p, std::vector<char>(1000, 'x'));
  auto before = bytes_of(p);
  try {
    Pool::create(p, 1 << 20);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::already_exists);
  }
  EXPECT_EQ(bytes_of(p), before);
}

TEST_F(PoolFile, MissingFile) {
  try {
    Pool::open(dir_ / "nope.pool");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::not_found);
    EXPECT_NE(std::string(e.what()).find("nope.pool"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(dir_ / "nope.pool"));
}

TEST_F(PoolFile, NotAPool) {
  auto p = dir_ / "text";
  write_bytes(p, std::vector<char>(8192, 'a'));
  expect_refused(p, Errc::not_a_pool, "not a DPTree pool");
  auto empty = dir_ / "empty";
  write_bytes(empty, {});
  expect_refused(empty, Errc::not_a_pool, "not a DPTree pool");
}

TEST_F(PoolFile, ShortFile) {
  auto p = make_pool();
  auto b = bytes_of(p);
  b.resize(40);  // magic intact, header cut
  write_bytes(p, b);
  expect_refused(p, Errc::truncated, "truncated");
}

TEST_F(PoolFile, TruncatedFile) {
  auto p = make_pool();
  fs::resize_file(p, 512 * 1024);
  expect_refused(p, Errc::truncated, "truncated");
}

TEST_F(PoolFile, OtherFormatVersion) {
  auto p = make_pool();
  auto b = bytes_of(p);
  std::uint32_t v = kFormatVersion + 1;
  std::memcpy(b.data() + offsetof(layout::PoolHeader, version), &v, 4);
  write_bytes(p, b);
  expect_refused(p, Errc::version_mismatch, "format version 2");
}

TEST_F(PoolFile, ChecksumMismatch) {
  auto p = make_pool();
  auto b = bytes_of(p);
  b[offsetof(layout::PoolHeader, uuid)] ^= 1;
  write_bytes(p, b);
  expect_refused(p, Errc::corrupt, "checksum");
}

TEST_F(PoolFile, LockedBySecondHandle) {
  auto p = make_pool();
  auto first = Pool::open(p);
  expect_refused(p, Errc::locked, "another Pool in this process");
  first.reset();
  EXPECT_NO_THROW(Pool::open(p));
}

TEST_F(PoolFile, PoolFullIsAnErrorAndThePoolStaysUsable) {
  auto p = dir_ / "small.pool";
  auto pool = Pool::create(p, kMinPoolSize);
  auto& a = pool->allocator();
  std::vector<std::uint64_t> blocks;
  try {
    for (;;) blocks.push_back(a.reserve(4096));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::pool_full);
    EXPECT_NE(std::string(e.what()).find("small.pool"), std::string::npos) << e.what();
  }
  ASSERT_FALSE(blocks.empty());
  a.cancel(blocks.back());
  EXPECT_NO_THROW(a.reserve(4096));
}

TEST_F(PoolFile, TooSmallAndDefaultDir) {
  EXPECT_THROW(Pool::create(dir_ / "tiny", 4096), Error);
  EXPECT_FALSE(fs::exists(dir_ / "tiny"));
  EXPECT_TRUE(fs::is_directory(default_pool_dir()));
}

TEST(PoolImage, SavedImageOpensAsAFile) {
  set_mode(Mode::dram);
  auto mem = Pool::create_in_memory(1 << 20);
  auto blk = mem->allocator().reserve(64);
  mem->allocator().activate(mem->root_word(), blk);
  Image img{Buffer::copy_of({mem->base(), mem->size()})};
  auto p = default_pool_dir() / ("dptree-image-" + std::to_string(getpid()));
  fs::remove(p);
  Pool::save_image(img, p);
  {
    auto pool = Pool::open(p);
    EXPECT_EQ(*pool->root_word(), blk);
    EXPECT_TRUE(pool->allocator().is_live(blk));
  }
  fs::remove(p);
}

// A typed offset resolves checked: null to nullptr, a whole aligned T inside the heap to its
// address, and anything else (inside the header, misaligned, past the end, straddling the end)
// to Error(corrupt) naming what held it.
TEST(TypedOffset, ResolveChecksBoundsAndAlignment) {
  struct Words {
    std::uint64_t a, b;
  };
  auto pool = Pool::create_in_memory(kMinPoolSize);
  const std::uint64_t blk = pool->allocator().reserve(64);
  EXPECT_EQ(pool->resolve(PPtr<Words>(), "a link"), nullptr);
  EXPECT_EQ(pool->resolve(PPtr<Words>(blk), "a link"), pool->at<Words>(blk));
  EXPECT_EQ(pool->get(PPtr<Words>(blk)), pool->at<Words>(blk));
  for (std::uint64_t bad : {std::uint64_t{8}, blk + 4, std::uint64_t{pool->size()},
                            std::uint64_t{pool->size() - 8}, ~std::uint64_t{0} - 7}) {
    EXPECT_FALSE(pool->holds(PPtr<Words>(bad))) << bad;
    try {
      pool->resolve(PPtr<Words>(bad), "the test's link");
      ADD_FAILURE() << "offset " << bad << " resolved";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::corrupt);
      EXPECT_NE(std::string(e.what()).find("the test's link holds offset " + std::to_string(bad)),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace dptree::pm
