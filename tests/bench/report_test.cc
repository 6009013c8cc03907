#include "bench/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace dptree::bench {
namespace {

RunResult result(const std::string& index, double mops) {
  RunResult r;
  r.index = index;
  r.workload = "read_only";
  r.threads = 1;
  r.records = 100;
  r.ops = 1000;
  r.seconds = 0.5;
  r.throughput_mops = mops;
  r.latency_ns = {100, 200, 300, 400, 500, 600, 10};
  r.pm_mode = "pmem";
  return r;
}

TEST(Report, JsonHasEveryField) {
  auto a = result("btree", 2.0);
  a.recovery_seconds = 0.25;
  auto j = nlohmann::json::parse(to_json({a, result("stdmap", 1.0)}));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  for (const char* f :
       {"index", "workload", "threads", "records", "ops", "seconds", "throughput_mops",
        "latency_ns", "flushes_per_op", "fences_per_op", "pm_bytes_written_per_op", "dram_bytes",
        "pm_bytes", "recovery_seconds", "pm_mode"})
    EXPECT_TRUE(j[0].contains(f)) << f;
  for (const char* p : {"p50", "p90", "p99", "p999", "p9999", "max"})
    EXPECT_TRUE(j[0]["latency_ns"].contains(p)) << p;
  EXPECT_EQ(j[0]["latency_ns"]["p999"], 400);
  EXPECT_DOUBLE_EQ(j[0]["recovery_seconds"].get<double>(), 0.25);
  EXPECT_TRUE(j[1]["recovery_seconds"].is_null());
  for (const char* m : {"cpu_model", "cores", "kernel", "thp_enabled", "thp_defrag",
                        "thp_shmem_enabled", "pool_dir", "pool_fs", "pool_fs_huge", "pool_dax",
                        "load1_before", "load1_after", "heap_huge_kib", "pool_huge_kib"})
    EXPECT_TRUE(j[0]["machine"].contains(m)) << m;
}

TEST(Report, CsvHasHeaderAndOneRowPerRun) {
  std::string csv = to_csv({result("btree", 2.0), result("stdmap", 1.0)});
  std::istringstream in(csv);
  std::string header, row;
  std::getline(in, header);
  EXPECT_EQ(header.substr(0, 22), "index,workload,threads");
  for (const auto& c : csv_columns()) EXPECT_NE(header.find(c), std::string::npos) << c;
  int rows = 0;
  while (std::getline(in, row)) {
    ++rows;
    EXPECT_EQ(std::count(row.begin(), row.end(), ','),
              std::count(header.begin(), header.end(), ','));
  }
  EXPECT_EQ(rows, 2);
}

TEST(Report, TableShowsRatioToTheFirstIndex) {
  std::string t = format_table({result("btree", 2.0), result("stdmap", 1.0)});
  EXPECT_NE(t.find("1.00x"), std::string::npos);
  EXPECT_NE(t.find("0.50x"), std::string::npos);
}

TEST(Report, DurationsAreReadable) {
  EXPECT_EQ(format_ns(850), "850ns");
  EXPECT_EQ(format_ns(12345), "12.3us");
  EXPECT_EQ(format_ns(4.56e6), "4.56ms");
}

}  // namespace
}  // namespace dptree::bench
