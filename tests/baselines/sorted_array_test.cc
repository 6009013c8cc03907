// What adding an index takes, shown on one that lives in this file: a persistent sorted array
// ("sorted_array"), registered here with its test plan, and then run by the project's shared
// suites with no list edited anywhere else:
//   - the model and crash suite (GenericPeer, generic_peer_fixture.h): model runs against
//     std::map with reopens, bad input, and 10,000 crash images that must each recover with
//     every acknowledged write;
//   - the pool fuzzer (PoolFuzz, fuzz/pool_fuzz_suite.h): damaged pools accepted or refused;
//   - the process-kill test (ProcessKill, kill/process_kill_suite.h): the killed children are
//     forks of this binary, so they know the index registered here;
//   - `dptree check`'s logic (check_pool, dptree/pool_check.h): the index is found in a pool and
//     checked, and damage is named. The `dptree` tool itself registers only the built-in
//     indexes, so `dptree check` on such a pool says it holds no index of the registry.
// Only the suites' instantiations below name the index: the parameters come from its plan.
//
// The index: one pool block holds the count and the (key, value) pairs in key order. An
// update of a present key stores its value in place (one 8-byte store, persisted). An insert or
// a remove writes a whole new array (copy-on-write) and switches to it: the root block has two
// slots, each owning its array block (pm::Allocator: reserve, activate, free), and `cur` names
// the slot in use. A write fills and flushes a new block, activates it into the spare slot,
// stores and persists `cur` (the commit: one 8-byte word), then frees the old slot. Recovery
// frees whatever the spare slot holds: an array never committed, or one committed over but
// not yet freed. Single-threaded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "baselines/generic_peer_fixture.h"
#include "dptree/error.h"
#include "dptree/index.h"
#include "dptree/pm/allocator.h"
#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/store.h"
#include "dptree/pool_check.h"
#include "dptree/registry.h"
#include "fixtures/model_fixture.h"
#include "fuzz/pool_fuzz_suite.h"
#include "kill/process_kill_suite.h"
#include "misuse/folder.h"

namespace dptree::testing {
namespace {

constexpr char kName[] = "sorted_array";
constexpr std::uint64_t kMagic = 0x0031'5941'5252'4153ull;  // "SARRAY1"

struct Root {
  std::uint64_t magic;
  std::uint64_t cur;      // the slot in use: 0 or 1
  std::uint64_t slot[2];  // array blocks (0: none, the empty array), each owned by its word
};

struct Entry {
  Key key;
  Value value;
};

// An array block: its count, then the entries.
struct Array {
  std::uint64_t count;
  Entry* entries() { return reinterpret_cast<Entry*>(this + 1); }
  const Entry* entries() const { return reinterpret_cast<const Entry*>(this + 1); }
};

std::size_t array_bytes(std::size_t count) {
  return sizeof(Array) + count * sizeof(Entry);
}

class SortedArray : public Index {
 public:
  explicit SortedArray(pm::Pool& pool) : claim_(pool, kName), pool_(pool) {
    if (*pool.root_word() == 0) create_root();
    root_ = open_root();
    recover();
    array_ = open_array(root_->cur);
  }

  std::string name() const override { return kName; }

  void upsert(Key k, Value v) override { put(k, v, true, true); }
  bool insert(Key k, Value v) override { return put(k, v, true, false); }
  bool update(Key k, Value v) override { return put(k, v, false, true); }

  bool remove(Key k) override {
    const std::size_t at = position(k);
    if (!present(at, k)) return false;
    write_array(at, nullptr);
    return true;
  }

  std::optional<Value> lookup(Key k) const override {
    const std::size_t at = position(k);
    if (!present(at, k)) return std::nullopt;
    return array_->entries()[at].value;
  }

  std::size_t scan(Key start, std::size_t count, std::vector<KV>& out) const override {
    std::size_t n = 0;
    for (std::size_t i = position(start); i < size() && n < count; ++i, ++n)
      out.emplace_back(array_->entries()[i].key, array_->entries()[i].value);
    return n;
  }

  IndexStats stats() const override {
    IndexStats s;
    s.records = size();
    s.pm_bytes = pool_.allocator().block_size(*pool_.root_word());
    if (array_) s.pm_bytes += pool_.allocator().block_size(root_->slot[root_->cur]);
    s.extra = {{"array_lines", static_cast<double>((array_bytes(size()) + 63) / 64)},
               {"copies", static_cast<double>(copies_)}};
    return s;
  }

  // The keys ascend, the spare slot is empty, and the allocator's live blocks are exactly the
  // root and the array.
  CheckReport check() const override {
    CheckReport r;
    for (std::size_t i = 1; i < size(); ++i)
      if (array_->entries()[i - 1].key >= array_->entries()[i].key)
        r.fail("keys out of order at entries " + std::to_string(i - 1) + " and " +
               std::to_string(i) + " of the array");
    if (root_->slot[1 - root_->cur])
      r.fail("the spare slot holds block " + std::to_string(root_->slot[1 - root_->cur]));
    std::set<std::uint64_t> mine{*pool_.root_word()};
    if (root_->slot[root_->cur]) mine.insert(root_->slot[root_->cur]);
    for (std::uint64_t b : mine)
      if (!pool_.allocator().is_live(b)) r.fail("block " + std::to_string(b) + " is not live");
    pool_.allocator().for_each_live_block([&](std::uint64_t b, std::size_t) {
      if (!mine.contains(b)) r.fail("allocator block " + std::to_string(b) + " is leaked");
    });
    r.facts = {{"records", static_cast<double>(size())}};
    return r;
  }

 private:
  std::size_t size() const { return array_ ? array_->count : 0; }

  // The first entry whose key is >= k.
  std::size_t position(Key k) const {
    if (!array_) return 0;
    const Entry* e = array_->entries();
    return static_cast<std::size_t>(
        std::lower_bound(e, e + size(), k, [](const Entry& a, Key b) { return a.key < b; }) - e);
  }
  bool present(std::size_t at, Key k) const {
    return at < size() && array_->entries()[at].key == k;
  }

  bool put(Key k, Value v, bool may_insert, bool may_update) {
    const std::size_t at = position(k);
    if (present(at, k)) {
      if (!may_update) return false;
      Value* slot = &array_->entries()[at].value;
      pm::store(slot, v);  // in place: one 8-byte store
      pm::persist(slot, sizeof *slot);
      return true;
    }
    if (!may_insert) return false;
    const Entry e{k, v};
    write_array(at, &e);
    return true;
  }

  // Copy-on-write: the array with `add` inserted at `at`, or (add == nullptr) without entry
  // `at`, made durable in a new block, then committed by the switch of `cur`.
  void write_array(std::size_t at, const Entry* add) {
    auto& a = pool_.allocator();
    const std::size_t n = add ? size() + 1 : size() - 1;
    const std::uint64_t b = a.reserve(array_bytes(n));
    auto* fresh = pool_.at<Array>(b);
    pm::store(&fresh->count, std::uint64_t{n});
    const std::size_t after = at + (add ? 0 : 1);  // the first old entry behind the change
    if (at) pm::store_bytes(fresh->entries(), array_->entries(), at * sizeof(Entry));
    if (size() > after)
      pm::store_bytes(fresh->entries() + at + (add ? 1 : 0), array_->entries() + after,
                      (size() - after) * sizeof(Entry));
    if (add) pm::store_bytes(fresh->entries() + at, add, sizeof(Entry));
    pm::flush(fresh, array_bytes(n));  // ordered by activate's first fence
    const std::uint64_t spare = 1 - root_->cur;
    a.activate(&root_->slot[spare], b);
    pm::store(&root_->cur, spare);  // the commit
    pm::persist(&root_->cur, sizeof root_->cur);
    array_ = fresh;
    a.free(&root_->slot[1 - spare]);
    ++copies_;
  }

  void create_root() {
    auto& a = pool_.allocator();
    const std::uint64_t b = a.reserve(sizeof(Root));
    auto* r = pool_.at<Root>(b);
    pm::fill_bytes(r, 0, sizeof(Root));
    pm::store(&r->magic, kMagic);
    pm::flush(r, sizeof(Root));
    a.activate(pool_.root_word(), b);
  }

  // Everything read from the pool is checked before it is trusted (a damaged pool is refused
  // with Error(corrupt) naming the index and the problem; another index's, with wrong_index).
  [[noreturn]] void refuse(const std::string& what) const {
    throw Error(Errc::corrupt, std::string(kName) + " in " + pool_.name() + ": " + what +
                                   ": the pool is damaged; restore it from a copy");
  }
  bool owned_by(std::uint64_t block, const std::uint64_t* word) const {
    return pool_.allocator().owner_of(block) == pool_.offset_of(word);
  }
  Root* open_root() const {
    const std::uint64_t rw = *pool_.root_word();
    if (!owned_by(rw, pool_.root_word())) refuse("the root word owns no live block");
    auto* r = pool_.at<Root>(rw);
    if (pool_.allocator().block_size(rw) < sizeof(Root) || r->magic != kMagic)
      throw Error(Errc::wrong_index, "pool " + pool_.name() + " holds another index, not " + kName +
                                         ": open it with that index or use a new pool");
    if (r->cur > 1) refuse("the slot in use is " + std::to_string(r->cur) + ", not 0 or 1");
    return r;
  }
  Array* open_array(std::uint64_t slot) const {
    const std::uint64_t b = root_->slot[slot];
    if (!b) return nullptr;
    if (!owned_by(b, &root_->slot[slot]))
      refuse("slot " + std::to_string(slot) + " names no live block it owns");
    auto* arr = pool_.at<Array>(b);
    const std::size_t room = pool_.allocator().block_size(b);
    if (room < sizeof(Array) || arr->count > (room - sizeof(Array)) / sizeof(Entry))
      refuse("the array's count " + std::to_string(arr->count) + " overflows its block of " +
             std::to_string(room) + " bytes");
    return arr;
  }
  // A crash between a new block's activation and the old one's free leaves both slots full:
  // the spare one is not the array in use, whichever of the two it is.
  void recover() {
    const std::uint64_t spare = 1 - root_->cur;
    if (!root_->slot[spare]) return;
    open_array(spare);  // refuses a slot that owns no block, before the allocator frees it
    pool_.allocator().free(&root_->slot[spare]);
  }

  pm::PoolClaim claim_;  // before anything touches the pool
  pm::Pool& pool_;
  Root* root_ = nullptr;
  Array* array_ = nullptr;  // the array in use; nullptr while it is empty and never written
  std::size_t copies_ = 0;  // arrays written since the open
};

// The factory: a persistent index refuses a missing pool, options it does not take and (being
// single-threaded) more than one thread.
std::unique_ptr<Index> make_sorted_array(const IndexConfig& c) {
  const std::string name = kName;
  if (!c.pool) throw Error(Errc::invalid_argument, name + " is persistent: give it a pool");
  if (!c.options.empty())
    throw Error(Errc::invalid_argument, name + " takes no options: its array has no nodes");
  if (c.threads > 1)
    throw Error(Errc::invalid_argument, name + " is single-threaded: use it from 1 thread");
  return std::make_unique<SortedArray>(*c.pool);
}

// The registration: one call, with the plan the shared suites read (a copy-on-write of the
// array writes it whole, so it has no nodes to make small: no options). Two crash runs of
// 1,600 operations gave 22,684 images, 12,229 of them in recovered images that kept working.
void register_sorted_array() {
  register_index({.name = kName,
                  .description = "persistent sorted array (the test of adding an index): "
                                 "copy-on-write inserts and removes, in-place updates; "
                                 "single-threaded",
                  .persistent = true,
                  .create = make_sorted_array,
                  .tests = {.fuzz = TestPlan::Fuzz{},
                            .kill = TestPlan::Kill{1, {}},
                            .generic = TestPlan::Generic{{}, "array_lines", 100, true, 1600}},
                  .display_name = "sorted array"});
}

// Registered before the first test runs (not while the program's static objects are made,
// which the built-in registrations it triggers may use).
class Registration : public ::testing::Environment {
 public:
  void SetUp() override { register_sorted_array(); }
};
const auto* const kRegistration = ::testing::AddGlobalTestEnvironment(new Registration);

// The shared suites, on this index alone: their parameters come from its plan.
using fuzz::PoolFuzz;
INSTANTIATE_TEST_SUITE_P(Index, GenericPeer, ::testing::Values(kName), IndexParamName());
INSTANTIATE_TEST_SUITE_P(Index, PoolFuzz, ::testing::Values(kName), IndexParamName());
INSTANTIATE_TEST_SUITE_P(Index, ProcessKill, ::testing::Values(kName), IndexParamName());

TEST(SortedArray, RegisteredBesideTheBuiltInIndexes) {
  ASSERT_NE(kRegistration, nullptr);
  EXPECT_TRUE(find_index(kName).persistent);
  EXPECT_TRUE(find_index("dptree").persistent);  // the built-in ones are there too
  EXPECT_NO_THROW(fuzz::target(kName));          // the fuzzer's targets include it
}

// A pool file written and closed, as `dptree check` finds it: check_pool, on the file opened
// copy-on-write as the tool opens it, names the index and finds it sound.
class CheckedFile {
 public:
  CheckedFile() : dir_("sorted-array-check"), path_(dir_ / "pool") {}
  const std::string& path() const { return path_; }
  // Writes `n` keys (0, 3, 6, ...) into a new pool file; returns the array's offset.
  std::uint64_t write(std::size_t n) {
    PmModeScope mode(pm::Mode::dram);
    auto pool = pm::Pool::create(path_, 1 << 20);
    auto idx = make_index(kName, pool.get(), {});
    for (std::size_t i = 0; i < n; ++i) idx->upsert(3 * i, i);
    const auto* root = pool->root<Root>();
    return root->slot[root->cur];
  }
  PoolCheck check() const {
    auto pool = pm::Pool::open(path_, pm::OpenMode::copy_on_write);
    return check_pool(*pool);
  }
  // Writes 8 bytes at `off` of the file (damage, as a bad medium or a stray write makes it).
  void poke(std::uint64_t off, std::uint64_t word) const {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(off));
    f.write(reinterpret_cast<const char*>(&word), sizeof word);
  }

 private:
  test::TempDir dir_;
  std::string path_;
};

TEST(SortedArray, CheckFindsItInAPoolFileAndPassesIt) {
  CheckedFile file;
  file.write(200);
  const PoolCheck c = file.check();
  EXPECT_EQ(c.index, kName);
  EXPECT_FALSE(c.strings);
  EXPECT_TRUE(c.report.ok) << (c.report.problems.empty() ? "" : c.report.problems.front());
  EXPECT_EQ(c.stats.records, 200u);
}

// Two keys swapped in the file: the pool opens (the array is memory-safe to read) and the
// check names the entries out of order.
TEST(SortedArray, CheckNamesKeysOutOfOrder) {
  CheckedFile file;
  const std::uint64_t arr = file.write(50);
  const std::uint64_t entry10 = arr + sizeof(Array) + 10 * sizeof(Entry);
  file.poke(entry10, 3 * 11);
  file.poke(entry10 + sizeof(Entry), 3 * 10);
  const PoolCheck c = file.check();
  EXPECT_EQ(c.index, kName);
  ASSERT_FALSE(c.report.ok);
  EXPECT_EQ(c.report.problems.front(), "keys out of order at entries 10 and 11 of the array");
}

// A count larger than its block: the open refuses the pool, naming the index and the count,
// before it reads past the block.
TEST(SortedArray, CheckRefusesACountPastItsBlock) {
  CheckedFile file;
  const std::uint64_t arr = file.write(50);
  file.poke(arr, 1u << 20);
  try {
    file.check();
    FAIL() << "a count past the block was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::corrupt);
    EXPECT_NE(std::string(e.what()).find("sorted_array"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("count 1048576 overflows"), std::string::npos) << e.what();
  }
}

// Both slots full, as a crash between a write's activation and its free leaves them: the open
// frees the spare one, and the array in use (that of `cur`) is what the index holds.
TEST(SortedArray, RecoveryFreesTheSpareSlot) {
  PmModeScope mode(pm::Mode::dram);
  auto pool = pm::Pool::create_in_memory(1 << 20);
  std::uint64_t old_array = 0;
  {
    auto idx = make_index(kName, pool.get(), {});
    idx->upsert(1, 10);
    auto* root = pool->root<Root>();
    old_array = root->slot[root->cur];
    // The spare slot takes a copy of the array, as the first half of an insert would.
    const std::uint64_t b = pool->allocator().reserve(array_bytes(1));
    std::memcpy(pool->at(b), pool->at(old_array), array_bytes(1));
    pool->allocator().activate(&root->slot[1 - root->cur], b);
  }
  auto idx = make_index(kName, pool.get(), {});
  const auto* root = pool->root<Root>();
  EXPECT_EQ(root->slot[1 - root->cur], 0u);
  EXPECT_EQ(root->slot[root->cur], old_array);
  EXPECT_TRUE(idx->check().ok) << idx->check().problems.front();
  EXPECT_EQ(idx->lookup(1), std::optional<Value>(10));
}

}  // namespace
}  // namespace dptree::testing
