// Test hooks: where each tree is on the calling thread, so that crash tests can count the
// simulator's captures per phase of the DPTree paper's algorithms. Nothing of the public
// interface needs this header, and it is not installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dptree {

// Where the tree is, for tests that count crash captures per phase.
enum class DPTreePhase : std::uint8_t {
  idle,
  log_append,
  merge_start,
  upsert_merge,        // phase 1 (Algorithm 1, 2)
  delete_merge,        // phase 2 (Algorithm 3)
  consolidation,       // phase 3
  flush,               // phase 4
  version_flip,        // phase 6
  garbage_collection,  // phase 7, and the log hand-over that follows it
  recovery,            // Algorithm 4
  key_page_release,    // the string form: freeing key pages no entry names any more
};
// The phase of the DPTree running on this thread (idle when none).
DPTreePhase dptree_current_phase();
const char* to_string(DPTreePhase p);
// Splits that kept the old leaf (split=keep_last) so far in the merge running on this thread
// (0 outside a merge), for tests that count crash captures inside such merges.
std::size_t dptree_merge_kept_splits();
// Splits that rewrote a leaf with its neighbour (split=thirds) on this thread: in DPTree's
// merge running (0 outside one); the concurrent tree's merges (on this thread when it has one
// merge worker and no background merge) count on without a reset.
std::size_t dptree_merge_pair_splits();
// Those splits on every thread since the process started (the concurrent tree's merge workers).
std::size_t dptree_pair_splits_total();
// The string form of DPTree merges a buffer that does not fit at once in key-ordered parts,
// each a merge cycle of its own. Tests set the most entries of a part (0, the default: the
// whole buffer, parts only when it does not fit) to run parts in any pool; process-wide.
void set_dptree_string_merge_part(std::size_t entries);
// Whether the merge running on this thread is a part of its buffer (one that leaves entries
// in it, or follows such a part), for tests that count crash captures inside parts.
bool dptree_string_merge_in_part();
// The step of the string forms' leaf merge running on this thread (both trees): "slots" (a
// leaf merged in place: its new slots), "meta" (its next version's metadata), "split" (leaves
// rewritten into new ones), "" outside them.
const char* string_merge_step();

// What the calling thread is doing inside a CDPTree (crash tests count captures per phase).
enum class CDPTreePhase : std::uint8_t {
  idle,
  log_append,
  log_page,     // allocating and linking a log page (Algorithm 5 lines 8-13)
  merge_start,  // persisting the two-logs / in_merge marks
  merge_range,  // upsert merge, delete merge, consolidation of a partition
  flush,        // flush of a partition
  reconnect,    // linking consecutive partitions' leaves (the string form's Algorithm 9 line 8)
  version_flip,
  garbage_collection,
  log_release,
  inplace_update,
  inplace_delete,
  recovery,
  key_page_release,  // the string form: freeing key pages no entry names any more
};
CDPTreePhase cdptree_current_phase();
const char* to_string(CDPTreePhase p);

}  // namespace dptree

namespace dptree::tips {

// What TIPS is doing on this thread, for crash tests: "idle", "olog_append", "replay",
// "ulog", "mlog", "commit", "recovery".
const char* current_phase();

}  // namespace dptree::tips
