// TIPS's option table, described for `dptree bench --help-options`.
#pragma once

#include <vector>

#include "dptree/registry.h"

namespace dptree::tips {

std::vector<OptionDoc> option_docs();

}  // namespace dptree::tips
