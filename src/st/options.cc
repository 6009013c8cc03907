// DPTreeOptions: validation and parsing from an IndexConfig option map (dptree_options.h).
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "dptree/dptree_options.h"
#include "dptree/error.h"
#include "format/verify.h"
#include "registry/option_values.h"

namespace dptree {

using detail::entry_width_ok;
using detail::kMaxLeafCapacity;
using detail::kMinLeafCapacity;
using detail::log_page_size_ok;

namespace {

std::string num(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

}  // namespace

const char* to_string(ProbeMode p) {
  switch (p) {
    case ProbeMode::both:
      return "both";
    case ProbeMode::linear:
      return "linear";
    case ProbeMode::fingerprint:
      return "fingerprint";
  }
  return "?";
}

const char* to_string(MergeMode m) {
  return m == MergeMode::in_place ? "in_place" : "out_of_place";
}

const char* to_string(SplitMode m) {
  return m == SplitMode::rebuild ? "rebuild" : "keep_last";
}

void DPTreeOptions::validate() const {
  auto bad = [](const std::string& what) {
    throw Error(Errc::invalid_argument, "DPTree option " + what);
  };
  if (leaf_capacity < kMinLeafCapacity || leaf_capacity > kMaxLeafCapacity)
    bad("leaf_capacity=" + std::to_string(leaf_capacity) + " is out of range: use 4..4096");
  if (!(merge_ratio > 0 && merge_ratio < 1))
    bad("merge_ratio (R)=" + num(merge_ratio) + " is out of range: use a value in (0, 1)");
  if (!(fill_rate > 0.5 && fill_rate <= 1))
    bad("fill_rate (FR)=" + num(fill_rate) + " is out of range: use a value in (0.5, 1]");
  if (!(consolidate_threshold > 0 && consolidate_threshold <= 0.5))
    bad("consolidate_threshold (CT)=" + num(consolidate_threshold) +
        " is out of range: use a value in (0, 0.5]");
  if (!log_page_size_ok(log_page_size))
    bad("log_page_size=" + std::to_string(log_page_size) +
        " is out of range: use a multiple of 1024 from 1024 to 64 MiB");
  if (min_merge_records > kMaxMergeRecords)
    bad("min_merge_records=" + std::to_string(min_merge_records) +
        " is out of range: use 0..2^30 (it sizes the buffer's Bloom filter)");
  if (!(bloom_error_rate > 0 && bloom_error_rate < 1))
    bad("bloom_error_rate=" + num(bloom_error_rate) + " is out of range: use a value in (0, 1)");
  if (key_bytes && !entry_width_ok(key_bytes))
    bad("key_bytes=" + std::to_string(key_bytes) +
        " is out of range: use 8, 16, 24, 32, 40, 48 or 56");
  if (value_bytes && !entry_width_ok(value_bytes))
    bad("value_bytes=" + std::to_string(value_bytes) +
        " is out of range: use 8, 16, 24, 32, 40, 48 or 56");
  if (probe != ProbeMode::both && probe != ProbeMode::linear && probe != ProbeMode::fingerprint)
    bad("probe is not one of both, linear, fingerprint");
  if (merge_mode != MergeMode::in_place && merge_mode != MergeMode::out_of_place)
    bad("merge_mode is not one of in_place, out_of_place");
  if (split != SplitMode::rebuild && split != SplitMode::keep_last)
    bad("split is not one of rebuild, keep_last");
}

DPTreeOptions DPTreeOptions::from_map(const std::map<std::string, std::string>& m) {
  DPTreeOptions o;
  for (const auto& kv : m) {
    // Named copies of the pair (not a structured binding): lambdas capture them on every
    // compiler the fuzz build uses (clang 14).
    const std::string& k = kv.first;
    const std::string& v = kv.second;
    auto as_size = [&] { return option_values::whole("DPTree", k, v); };
    auto as_double = [&] { return option_values::number("DPTree", k, v); };
    if (k == "leaf_capacity")
      o.leaf_capacity = as_size();
    else if (k == "merge_ratio")
      o.merge_ratio = as_double();
    else if (k == "fill_rate")
      o.fill_rate = as_double();
    else if (k == "consolidate_threshold")
      o.consolidate_threshold = as_double();
    else if (k == "log_page_size")
      o.log_page_size = as_size();
    else if (k == "bloom_error_rate")
      o.bloom_error_rate = as_double();
    else if (k == "min_merge_records")
      o.min_merge_records = as_size();
    else if (k == "key_bytes")
      o.key_bytes = as_size();
    else if (k == "value_bytes")
      o.value_bytes = as_size();
    else if (k == "probe") {
      if (v == "both")
        o.probe = ProbeMode::both;
      else if (v == "linear")
        o.probe = ProbeMode::linear;
      else if (v == "fingerprint")
        o.probe = ProbeMode::fingerprint;
      else
        throw Error(Errc::invalid_argument,
                    "DPTree option probe='" + v + "' is unknown: use both, linear or fingerprint");
    } else if (k == "merge_mode") {
      if (v == "in_place")
        o.merge_mode = MergeMode::in_place;
      else if (v == "out_of_place")
        o.merge_mode = MergeMode::out_of_place;
      else
        throw Error(Errc::invalid_argument, "DPTree option merge_mode='" + v +
                                                "' is unknown: use in_place or out_of_place");
    } else if (k == "split") {
      if (v == "rebuild")
        o.split = SplitMode::rebuild;
      else if (v == "keep_last")
        o.split = SplitMode::keep_last;
      else
        throw Error(Errc::invalid_argument,
                    "DPTree option split='" + v +
                        "' is unknown: use rebuild (Algorithm 2: a split writes every entry "
                        "into new leaves) or keep_last (the old leaf keeps its last part)");
    } else {
      throw Error(Errc::invalid_argument,
                  "unknown DPTree option '" + k +
                      "': use leaf_capacity, merge_ratio, fill_rate, consolidate_threshold, "
                      "log_page_size, bloom_error_rate, min_merge_records, probe, merge_mode, "
                      "split, key_bytes or value_bytes");
    }
  }
  o.validate();
  return o;
}

}  // namespace dptree
