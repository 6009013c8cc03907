// Failed operations under PiBench: a full pool refuses every later write, and one line per
// refusal would flood the terminal. The first failure of each kind is printed, the rest are
// counted, and the count is printed at process exit (or when the library is unloaded).
#pragma once

#include <exception>

namespace dptree_pibench {

void note_failure(const std::exception& e);

}  // namespace dptree_pibench
