// The crash simulator lands a line as it stood between two stores (sim.h). A toy index whose
// bugs show only there: each slot of a table is {key, value} in one cache line, a key is
// committed by its store, and a value belongs to the key it was written with.
//   - In the 64-byte unit a line reaches PM whole, so storing the value and then the key and
//     flushing the line once is correct. Storing the key first is not: a crash between the two
//     stores leaves the new key with the slot's old value.
//   - In the 8-byte unit the value must be durable before the key is stored. Writing a
//     placeholder into the value word before the value is a bug: the word may hold it.
// The old model (CaptureOptions::intermediate = false) lands a line or word only as it stood
// at a flush, so it never shows either state; the simulator must catch both, and never flag
// the correct orders.
#include <gtest/gtest.h>

#include <cstring>

#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "dptree/pm/sim.h"
#include "dptree/pm/store.h"

namespace dptree::pm {
namespace {

struct Slot {
  std::uint64_t key;    // 0: empty
  std::uint64_t value;  // value_of(key) once the key is there
  std::uint64_t pad[6];
};
static_assert(sizeof(Slot) == kCacheLine);

constexpr std::size_t kSlots = 16;

std::uint64_t value_of(std::uint64_t key, std::uint64_t round) {
  return key * 1000 + round;
}

enum class Order {
  value_then_key,      // correct in the 64-byte unit
  key_then_value,      // wrong: the key may be durable with the slot's old value
  value_fenced,        // correct in the 8-byte unit: the value is durable before the key
  placeholder_fenced,  // wrong: the value word holds a placeholder for a while
};

class ToyTable {
 public:
  ToyTable(Pool& pool, Order order) : order_(order) {
    off_ = pool.allocator().reserve(kSlots * sizeof(Slot));
    slots_ = pool.at<Slot>(off_);
    fill_bytes(slots_, 0, kSlots * sizeof(Slot));
    persist(slots_, kSlots * sizeof(Slot));
  }
  // Puts key in its slot with the value of `round`; a slot holding another key is emptied
  // (durably) first.
  void put(std::uint64_t key, std::uint64_t round) {
    Slot* s = &slots_[key % kSlots];
    if (s->key != key && s->key != 0) {
      store(&s->key, std::uint64_t{0});
      persist(s, sizeof(Slot));
    }
    std::uint64_t v = value_of(key, round);
    switch (order_) {
      case Order::value_then_key:
        store(&s->value, v);
        store(&s->key, key);
        break;
      case Order::key_then_value:
        store(&s->key, key);
        store(&s->value, v);
        break;
      case Order::value_fenced:
        store(&s->value, v);
        persist(s, sizeof(Slot));
        store(&s->key, key);
        break;
      case Order::placeholder_fenced:
        store(&s->value, ~std::uint64_t{0});
        store(&s->value, v);
        persist(s, sizeof(Slot));
        store(&s->key, key);
        break;
    }
    persist(s, sizeof(Slot));
  }
  std::uint64_t offset() const { return off_; }

 private:
  Order order_;
  std::uint64_t off_ = 0;
  Slot* slots_ = nullptr;
};

// Counts the slots of an image that hold a key without a value written with that key.
bool torn(const Image& img, std::uint64_t off) {
  for (std::size_t i = 0; i < kSlots; ++i) {
    Slot s;
    std::memcpy(&s, img.bytes.data() + off + i * sizeof(Slot), sizeof s);
    if (s.key != 0 && s.value / 1000 != s.key) return true;
  }
  return false;
}

struct Outcome {
  std::size_t images = 0, torn = 0;
};

// Runs puts that update keys in place and replace them (key k and k + kSlots share a slot),
// and captures at every flush and fence of the pool.
Outcome run(Order order, Unit unit, bool intermediate) {
  set_mode(Mode::sim);
  Outcome o;
  {
    auto pool = Pool::create_in_memory(1 << 18);
    ToyTable table(*pool, order);
    std::uint64_t seed = 1;
    pool->sim()->set_hook([&](const Event& e) {
      for (double p_evict : {0.5, 1.0}) {
        CaptureOptions opt{seed++, p_evict, 0.5, unit, intermediate};
        ++o.images;
        o.torn += torn(e.sim->capture(opt), table.offset());
      }
    });
    for (std::uint64_t round = 1; round <= 24; ++round)
      for (std::uint64_t k = 1; k <= kSlots; ++k) table.put(k + kSlots * (round / 3 % 2), round);
    pool->sim()->set_hook(nullptr);
    EXPECT_EQ(pool->sim()->raw_store_count(), 0u) << "the toy writes only through pm::store";
  }
  set_mode(Mode::dram);
  return o;
}

TEST(IntermediateStates, CorrectOrdersAreNeverTorn) {
  for (bool intermediate : {false, true}) {
    auto line = run(Order::value_then_key, Unit::line64, intermediate);
    EXPECT_GT(line.images, 1000u);
    EXPECT_EQ(line.torn, 0u) << "line64, intermediate " << intermediate;
    for (Unit unit : {Unit::line64, Unit::word8}) {
      auto fenced = run(Order::value_fenced, unit, intermediate);
      EXPECT_GT(fenced.images, 1000u);
      EXPECT_EQ(fenced.torn, 0u) << "value fenced, intermediate " << intermediate;
    }
  }
}

// The key stored before its value in one line: only a state between the two stores shows it.
TEST(IntermediateStates, KeyBeforeValueIsCaughtOnlyBetweenStores) {
  auto old_model = run(Order::key_then_value, Unit::line64, false);
  EXPECT_GT(old_model.images, 1000u);
  EXPECT_EQ(old_model.torn, 0u) << "the line-at-flush model cannot see this bug";
  auto now = run(Order::key_then_value, Unit::line64, true);
  EXPECT_GT(now.torn, now.images / 50) << "images " << now.images;
}

// A word written twice may hold its first value after a crash, in either unit.
TEST(IntermediateStates, EarlierValueOfAWordIsCaught) {
  for (Unit unit : {Unit::word8, Unit::line64}) {
    auto old_model = run(Order::placeholder_fenced, unit, false);
    EXPECT_EQ(old_model.torn, 0u) << "the line-at-flush model cannot see this bug";
    auto now = run(Order::placeholder_fenced, unit, true);
    EXPECT_GT(now.torn, now.images / 50) << "images " << now.images;
  }
}

}  // namespace
}  // namespace dptree::pm
