// Indexes the benchmark registers beside the library's own: `absl-btree` (absl::btree_map),
// the yardstick. They live in the benchmark library so that users of the index do not link
// abseil. Idempotent; load() and `dptree bench` call it before they look indexes up.
#pragma once

namespace dptree::bench {

void register_reference_indexes();

}  // namespace dptree::bench
