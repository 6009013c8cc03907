// The concurrent DPTree's option table, described for `dptree bench --help-options`.
#pragma once

#include <vector>

#include "dptree/registry.h"

namespace dptree {

std::vector<OptionDoc> cdptree_option_docs();

}  // namespace dptree
