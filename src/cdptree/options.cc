// CDPTreeOptions: validation with clear errors, and reading from an option map.
#include <cstdio>
#include <string>

#include "dptree/cdptree.h"
#include "dptree/error.h"
#include "format/verify.h"
#include "registry/option_values.h"

namespace dptree {

namespace {

std::string num(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

}  // namespace

void CDPTreeOptions::validate() const {
  auto bad = [](const std::string& what) {
    throw Error(Errc::invalid_argument, "CDPTree option " + what);
  };
  if (log_partitions < 1 || log_partitions > 4096)
    bad("log_partitions=" + std::to_string(log_partitions) + " is out of range: use 1..4096");
  if (!(merge_ratio > 0 && merge_ratio < 1))
    bad("merge_ratio (R)=" + num(merge_ratio) + " is out of range: use a value in (0, 1)");
  if (!(bloom_error_rate > 0 && bloom_error_rate < 1))
    bad("bloom_error_rate=" + num(bloom_error_rate) + " is out of range: use a value in (0, 1)");
  if (leaf_capacity == 0 && (leaf_bytes < 512 || leaf_bytes > (1u << 20)))
    bad("leaf_bytes=" + std::to_string(leaf_bytes) + " is out of range: use 512..1048576");
  if (leaf_capacity != 0 &&
      (leaf_capacity < detail::kMinLeafCapacity || leaf_capacity > detail::kMaxLeafCapacity))
    bad("leaf_capacity=" + std::to_string(leaf_capacity) +
        " is out of range: use 4..4096, or 0 to derive it from leaf_bytes");
  if (!detail::log_page_size_ok(log_page_size))
    bad("log_page_size=" + std::to_string(log_page_size) +
        " is out of range: use a multiple of 1024 from 1024 to 64 MiB");
  if (!(fill_rate > 0.5 && fill_rate <= 1))
    bad("fill_rate (FR)=" + num(fill_rate) + " is out of range: use a value in (0.5, 1]");
  if (!(consolidate_threshold > 0 && consolidate_threshold <= 0.5))
    bad("consolidate_threshold (CT)=" + num(consolidate_threshold) +
        " is out of range: use a value in (0, 0.5]");
  if (merge_threads > 256)
    bad("merge_threads=" + std::to_string(merge_threads) +
        " is out of range: use 1..256, or 0 for the hardware threads");
  if (recovery_threads > 256)
    bad("recovery_threads=" + std::to_string(recovery_threads) +
        " is out of range: use 1..256, or 0 for the hardware threads");
  if (min_merge_records > kMaxMergeRecords)
    bad("min_merge_records=" + std::to_string(min_merge_records) +
        " is out of range: use 0..2^30 (it sizes the buffer's Bloom filter)");
  if (psize < 1) bad("psize=0 is out of range: use at least 1 leaf per merge partition");
}

CDPTreeOptions CDPTreeOptions::from_map(const std::map<std::string, std::string>& m) {
  CDPTreeOptions o;
  for (const auto& kv : m) {
    // Named copies of the pair (not a structured binding): lambdas capture them on every
    // compiler the fuzz build uses (clang 14).
    const std::string& k = kv.first;
    const std::string& v = kv.second;
    auto as_size = [&] { return option_values::whole("CDPTree", k, v); };
    auto as_double = [&] { return option_values::number("CDPTree", k, v); };
    auto as_bool = [&] { return option_values::boolean("CDPTree", k, v); };
    auto as_threads = [&] {
      std::size_t x = as_size();
      return static_cast<unsigned>(x > 100000 ? 100000 : x);
    };
    if (k == "log_partitions")
      o.log_partitions = as_size();
    else if (k == "merge_ratio")
      o.merge_ratio = as_double();
    else if (k == "bloom_error_rate")
      o.bloom_error_rate = as_double();
    else if (k == "leaf_bytes")
      o.leaf_bytes = as_size();
    else if (k == "leaf_capacity")
      o.leaf_capacity = as_size();
    else if (k == "log_page_size")
      o.log_page_size = as_size();
    else if (k == "fill_rate")
      o.fill_rate = as_double();
    else if (k == "consolidate_threshold")
      o.consolidate_threshold = as_double();
    else if (k == "min_merge_records")
      o.min_merge_records = as_size();
    else if (k == "merge_threads")
      o.merge_threads = as_threads();
    else if (k == "recovery_threads")
      o.recovery_threads = as_threads();
    else if (k == "psize")
      o.psize = as_size();
    else if (k == "background_merge")
      o.background_merge = as_bool();
    else if (k == "inplace_update")
      o.inplace_update = as_bool();
    else if (k == "inplace_delete")
      o.inplace_delete = as_bool();
    else
      throw Error(Errc::invalid_argument,
                  "unknown CDPTree option '" + k +
                      "': use log_partitions, merge_ratio, bloom_error_rate, leaf_bytes, "
                      "leaf_capacity, log_page_size, fill_rate, consolidate_threshold, "
                      "min_merge_records, merge_threads, recovery_threads, psize, "
                      "background_merge, inplace_update or inplace_delete");
  }
  o.validate();
  return o;
}

}  // namespace dptree
