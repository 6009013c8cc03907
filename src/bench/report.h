// Benchmark results as a table for people, JSON and CSV for scripts (fields: docs/bench.md).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/runner.h"

namespace dptree::bench {

// The human table. Each row's ratio compares its throughput with the first index's run of the
// same workload and thread count.
std::string format_table(const std::vector<RunResult>& results);
// A JSON array with one object per run.
std::string to_json(const std::vector<RunResult>& results);
// CSV with a header line; latency columns are flattened (latency_p50_ns, ...).
std::string to_csv(const std::vector<RunResult>& results);
// The CSV header's column names (also the keys every JSON object has, latency flattened).
const std::vector<std::string>& csv_columns();

// The machine's state during a run (MachineState) as the JSON object every report carries.
nlohmann::ordered_json machine_json(const MachineState& m);

// Human-friendly durations: 850ns, 12.3us, 4.56ms, 1.20s.
std::string format_ns(double ns);

}  // namespace dptree::bench
