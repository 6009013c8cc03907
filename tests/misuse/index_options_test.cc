// Every registered index's options (IndexConfig::options, `dptree bench --option`), through
// the registry: an index that describes options (`--help-options`) takes its described
// defaults, refuses a bad value of each key naming the key, the value and the accepted range,
// and refuses an unknown key naming the keys it takes; an index that describes none refuses
// every option. (OptionTable::docs() itself checks that the described defaults parse back to
// the defaults.)
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "dptree/error.h"
#include "dptree/pm/pool.h"
#include "dptree/registry.h"

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
      // fptree still parses its one option (leaf_capacity) outside an option table.
      if (info.name == "fptree") continue;
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
  // dptree, cdptree, fastfair, utree, bm-btree and tips-btree at least.
  EXPECT_GE(described, 6u);
}

}  // namespace
