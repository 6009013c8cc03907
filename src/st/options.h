// DPTree's option table, described for `dptree bench --help-options` (the merge settings it
// shares with the concurrent DPTree are engine/merge_settings.h's).
#pragma once

#include <vector>

#include "dptree/registry.h"

namespace dptree {

std::vector<OptionDoc> dptree_option_docs();

}  // namespace dptree
