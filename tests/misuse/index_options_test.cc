// Every registered index's options (IndexConfig::options, `dptree bench --option`), through
// the registry: an index that describes options (`--help-options`) takes its described
// defaults, refuses a bad value of each key naming the key, the value and the accepted range,
// and refuses an unknown key naming the keys it takes; an index that describes none refuses
// every option. (OptionTable::docs() itself checks that the described defaults parse back to
// the defaults.)
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"
#include "registry/option_table.h"

namespace {

using namespace dptree;

// Creating `info` with `c` fails with invalid_argument, and the message holds each of `says`.
void expect_refused(const IndexInfo& info, const IndexConfig& c,
                    const std::vector<std::string>& says) {
  try {
    info.create(c);
    ADD_FAILURE() << "accepted " << c.options.begin()->first << "=" << c.options.begin()->second;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
    for (const auto& s : says)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << s << " in: " << e.what();
  }
}

TEST(IndexOptions, EveryIndexTakesItsDescribedDefaultsAndNamesWhatItRefuses) {
  std::size_t described = 0;
  for (const IndexInfo& info : registered_indexes()) {
    SCOPED_TRACE(info.name);
    auto pool = info.persistent ? pm::Pool::create_in_memory(std::size_t{64} << 20) : nullptr;
    IndexConfig c;
    c.pool = pool.get();
    if (info.options.empty()) {
      c.options = {{"bogus", "1"}};
      expect_refused(info, c, {"takes no index options", "bogus"});
      continue;
    }
    ++described;
    for (const auto& o : info.options) c.options[o.key] = o.dflt;
    for (int open = 0; open < (info.persistent ? 2 : 1); ++open) {  // create, then reopen
      auto idx = info.create(c);
      idx->upsert(7, 70);
      EXPECT_EQ(idx->lookup(7), Value{70});
    }
    for (const auto& o : info.options) {
      IndexConfig bad = c;
      bad.options = {{o.key, "x"}};
      expect_refused(info, bad, {o.key + "='x'", o.range});
    }
    IndexConfig unknown = c;
    unknown.options = {{"bogus", "1"}};
    std::vector<std::string> keys{"'bogus'"};
    for (const auto& o : info.options) keys.push_back(o.key);
    expect_refused(info, unknown, keys);
  }
  // dptree, cdptree, fastfair, fptree, utree, bm-btree and tips-btree at least.
  EXPECT_GE(described, 7u);
}

struct Toy {
  unsigned pages = 256;
  std::size_t count = 3;
  bool on = true;
};

option_values::OptionTable<Toy> toy_table(std::size_t lowest_count = 1) {
  return option_values::OptionTable<Toy>("toy")
      .whole_in("pages", &Toy::pages, {128, 1u << 17, true}, "pages")
      .whole_in("count", &Toy::count, {lowest_count, 9}, "count")
      .boolean("on", &Toy::on, "on");
}

// A bounded whole number is checked by the table: below, above and (for powers of two) between
// are refused with the key, the value and the range; the bounds are accepted.
TEST(OptionTable, BoundsAreCheckedNamingKeyValueAndRange) {
  const auto t = toy_table();
  EXPECT_EQ(t.parse({{"pages", "128"}, {"count", "9"}}).pages, 128u);
  EXPECT_EQ(t.parse({{"pages", "131072"}, {"count", "1"}}).count, 1u);
  const std::pair<const char*, const char*> bad[] = {
      {"pages", "64"}, {"pages", "384"}, {"pages", "262144"}, {"count", "0"}, {"count", "10"}};
  for (const auto& [k, v] : bad) {
    try {
      t.parse({{k, v}});
      ADD_FAILURE() << k << "=" << v << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument);
      const std::string range = std::string(k) == "pages" ? "a power of two in 128..2^17" : "1..9";
      EXPECT_NE(std::string(e.what()).find(std::string("toy option ") + k + "=" + v +
                                           " is out of range: use " + range),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(t.docs()[0].range, "a power of two in 128..2^17");
  EXPECT_EQ(t.docs()[1].dflt, "3");
}

// A table whose described default it would refuse is a programming error, found when the
// table describes itself (at registration), not by a user.
TEST(OptionTable, ADefaultOutsideItsRangeIsALogicError) {
  EXPECT_NO_THROW(toy_table(3).docs());
  EXPECT_THROW(toy_table(4).docs(), std::logic_error);
}

}  // namespace
