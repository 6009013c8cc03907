// The DPTree family's option table, described for `dptree bench --help-options`.
#pragma once

#include <vector>

#include "dptree/registry.h"

namespace dptree {

std::vector<OptionDoc> dptree_option_docs();

}  // namespace dptree
