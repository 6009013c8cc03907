// DPTree options with the paper's §4.2 defaults (R = 0.1, FR = 0.7, CT = 0.34, log page
// 64 KiB; the leaf holds 352 entries, not 256: see leaf_capacity) and the §4.4 bloom filter error
// rate (0.03), plus the switches the paper's experiments compare: leaf probing (Figure 10),
// in-place vs out-of-place merge (Figure 8d), entry size (Figures 8d and 10).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace dptree {

// The largest min_merge_records of either DPTree: it sizes the buffer's Bloom filter.
inline constexpr std::size_t kMaxMergeRecords = std::size_t{1} << 30;

// How a lookup searches a base leaf (§2.2; Figure 10, §4.3).
enum class ProbeMode : std::uint8_t {
  both,        // linear probing from the key's hash slot, fingerprints checked first (DPTree)
  linear,      // linear probing, every probed key read (no fingerprints)
  fingerprint  // FPTree style: every occupied slot's fingerprint scanned, no hash position
};
// How the buffer is merged into the base tree (§2.3; Figure 8d, §4.3).
enum class MergeMode : std::uint8_t {
  in_place,     // §2.3: coarse-grained versioned leaves updated in place
  out_of_place  // every merge writes the whole base tree anew (leaves packed full)
};
// How a leaf too full for its merge entries is split (§2.3, Algorithm 2 line 10).
enum class SplitMode : std::uint8_t {
  rebuild,    // Algorithm 2: every entry into new leaves filled at FR, the old leaf freed
  keep_last,  // the default: the old leaf keeps the last part of its key range and takes the
              // buffer's entries there in place; only the first part goes to new leaves
              // (10% fewer lines written per insert, Table 1's figure; docs/dptree.md)
  thirds      // a leaf that must split is rewritten with the next leaf of its merge range as
              // three leaves of about two-thirds (two when the pair holds less than 2 x FR);
              // fuller leaves, more lines written (docs/dptree.md "Where the PM bytes go")
};

struct DPTreeOptions {
  // Key-value slots per base-tree leaf (§2.2). The paper's 256 make a 6080-byte leaf of
  // 16-byte entries that the allocator's power-of-two classes round up to 8 KiB; 352 fill
  // that block (8128 bytes): 27% less PM per record, fewer leaves to search and merge.
  std::size_t leaf_capacity = 352;
  double merge_ratio = 0.1;               // R: merge when buffer > R * base (§2)
  double fill_rate = 0.7;                 // FR: occupancy of leaves created by a split (§2.3)
  double consolidate_threshold = 0.34;    // CT: leaves below it are consolidated (§2.3)
  std::size_t log_page_size = 64 * 1024;  // PM log page (§2.1)
  double bloom_error_rate = 0.03;         // bloom filter over buffer keys (§2, §4.4)
  // Floor of the merge trigger while the base tree is small (R * 0 would merge on every
  // write); 0 means leaf_capacity.
  std::size_t min_merge_records = 0;
  ProbeMode probe = ProbeMode::both;
  MergeMode merge_mode = MergeMode::in_place;
  SplitMode split = SplitMode::keep_last;
  // Entry field widths in PM (8..56, multiples of 8). 0 means the DPTree<K, V> type's; the
  // registered "dptree" index reads them to pick the width (default 8 / 8). DPTree<K, V>
  // refuses other non-zero values.
  std::size_t key_bytes = 0;
  std::size_t value_bytes = 0;

  // Throws dptree::Error(invalid_argument) naming the bad option and its accepted range.
  void validate() const;
  // Reads the keys above from an IndexConfig option map (probe=both|linear|fingerprint,
  // merge_mode=in_place|out_of_place, split=rebuild|keep_last|thirds, numbers otherwise); unknown
  // keys are refused.
  static DPTreeOptions from_map(const std::map<std::string, std::string>& m);
};

const char* to_string(ProbeMode p);
const char* to_string(MergeMode m);
const char* to_string(SplitMode m);

}  // namespace dptree
