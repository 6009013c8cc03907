// TIPS's options (docs/tips.md): the table that parses and describes them.
#include "tips/options.h"

#include "dptree/tips.h"
#include "registry/option_table.h"

namespace dptree::tips {
namespace {

const option_values::OptionTable<Options>& table() {
  using O = Options;
  static const auto t =
      option_values::OptionTable<O>("tips")
          .whole_in("partitions", &O::partitions, {1, 64},
                    "backend instances, keys hashed among them; stored in the pool")
          .whole_in("lanes", &O::lanes, {1, 64},
                    "per-thread OLog lanes (at least the thread count when not given); stored")
          .whole_in("lane_records", &O::lane_records, {16, 1ull << 26},
                    "records per lane ring; a full ring makes the writer replay; stored")
          .whole_in("ulog_lines", &O::ulog_lines, {256, 1ull << 20},
                    "undo-log lines per partition (an epoch commits before it fills); stored")
          .whole_in("mlog_entries", &O::mlog_entries, {64, 1ull << 20},
                    "allocation-log entries per partition; stored")
          .whole_in("cache_entries", &O::cache_entries, {16, 1ull << 30},
                    "DRAM cache capacity (expected records / 4, at least 65536, when not given)")
          .choice("replay", &O::background, {{"background", true}, {"inline", false}},
                  "inline: no threads, the writing thread replays every replay_every writes")
          .whole_in("replay_every", &O::replay_every, {1, 1ull << 30},
                    "inline replay: writes between replay rounds")
          .whole_in("max_writers", &O::max_writers, {1, 64},
                    "background writers at a 100% write ratio");
  return t;
}

}  // namespace

Options Options::from_map(const std::map<std::string, std::string>& m) {
  return table().parse(m);
}

std::vector<OptionDoc> option_docs() {
  return table().docs();
}

}  // namespace dptree::tips
