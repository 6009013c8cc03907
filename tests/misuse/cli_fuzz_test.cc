// A short fuzz of the command line: random flags with random values, good and bad. Every run
// must end with exit code 0, 1 or 2 (no signal, no hang) and leave the pool folder as it was.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "misuse/cli_run.h"

namespace {

using dptree::test::listing;
using dptree::test::run_cli;
using dptree::test::TempDir;

struct Flag {
  const char* name;
  std::vector<const char*> values;  // empty: a flag without a value; "@" is the pool folder
};

// Values stay small where they are valid, so that a run that starts ends in a moment.
const std::vector<Flag>& flags() {
  static const std::vector<Flag> all = {
      {"--index",
       {"btree", "dptree", "cdptree", "fastfair", "tips-btree", "stdmap,btree", "nope", "", ","}},
      {"--workload", {"mixed", "insert_only", "ycsb_e", "read_only,scan_insert", "nope", ""}},
      {"--records", {"-5", "0", "1", "100", "18446744073709551616", "1e3", "x", ""}},
      {"--ops", {"-1", "0", "1", "50", "99999999999999999999", "1.5"}},
      {"--seconds", {"-1", "0", "0.01", "nan", "inf", "abc", "1e-9"}},
      {"--threads", {"0", "1", "2", "-1", "1,2", "1025", "x", ","}},
      {"--distribution", {"uniform", "zipfian", "latest", "gauss"}},
      {"--theta", {"0", "0.5", "1", "-0.1", "nan"}},
      {"--scan-length", {"1", "10", "0", "-1", "16777217"}},
      {"--scan-selectivity", {"0.001", "0", "101", "nan"}},
      {"--read", {"50", "100", "-1", "101", "nan"}},
      {"--insert", {"50", "0", "100", "x"}},
      {"--update", {"0", "50", "-0"}},
      {"--remove", {"0", "10", "inf"}},
      {"--scan", {"0", "5", "1e2"}},
      {"--absent-reads", {"0", "50", "200", "nan"}},
      {"--seed", {"0", "1", "-1", "18446744073709551615", "18446744073709551616"}},
      {"--sample-rate", {"0", "1", "0.5", "2", "-1"}},
      {"--pm-mode", {"pmem", "dram", "eadr", "sim", "x"}},
      {"--pool", {"@/p.pool", "@", "@/no/p.pool", ""}},
      {"--pool-size", {"-1", "1KiB", "1MiB", "64MiB", "1PiB", "x", "99999999999999TiB"}},
      {"--flush-delay-ns", {"0", "10", "-1", "4294967296"}},
      {"--fence-delay-ns", {"0", "10", "-1", "1000001"}},
      {"--json", {"-", "@", "@/no/x.json", "OUT/o.json"}},
      {"--csv", {"-", "@", "OUT/o.csv"}},
      {"--option",
       {"leaf_capacity=1", "x", "=1", "leaf_capacity=64", "log_partitions=0", "node_bytes=3",
        "min_merge_records=18446744073709551615"}},
      {"--key-type", {"u64", "string", "int", ""}},
      {"--key-set", {"random", "u64be", "words", "x"}},
      {"--key-length", {"8", "16-64", "0", "4", "1025", "9-8", "x", "-"}},
      {"--recovery", {}},
      {"--load-once", {}},
      {"--pin", {}},
      {"--list", {}},
      {"--bogus", {}},
  };
  return all;
}

std::string with_folders(std::string v, const std::string& pools, const std::string& out) {
  if (auto at = v.find('@'); at != std::string::npos) v.replace(at, 1, pools);
  if (v.rfind("OUT", 0) == 0) v.replace(0, 3, out);
  return v;
}

// One invocation: up to five random flags; a tiny btree run of one mix unless they choose
// otherwise.
std::vector<std::string> invocation(std::mt19937_64& rng, const std::string& pools,
                                    const std::string& out) {
  std::vector<std::string> args = {"bench", "--quiet"};
  bool chose_index = false, chose_workload = false, chose_size = false;
  const std::size_t n = 1 + rng() % 5;
  for (std::size_t i = 0; i < n; ++i) {
    const Flag& f = flags()[rng() % flags().size()];
    args.push_back(f.name);
    if (!f.values.empty())
      args.push_back(with_folders(f.values[rng() % f.values.size()], pools, out));
    const std::string name = f.name;
    chose_index |= name == "--index";
    chose_workload |= name == "--workload" || name == "--read" || name == "--insert" ||
                      name == "--update" || name == "--remove" || name == "--scan";
    chose_size |= name == "--records" || name == "--ops" || name == "--seconds";
  }
  if (!chose_index) args.insert(args.end(), {"--index", "btree"});
  if (!chose_workload) args.insert(args.end(), {"--workload", "mixed"});
  if (!chose_size) args.insert(args.end(), {"--records", "100", "--ops", "100"});
  return args;
}

TEST(CliFuzz, RandomFlagsEndWithAKnownExitCodeAndLeaveNothing) {
  TempDir pools("cli-fuzz-pools"), out("cli-fuzz-out");
  const std::string env = "DPTREE_POOL_DIR=" + pools.path.string() + " ";
  const char* seed_env = std::getenv("DPTREE_FUZZ_SEED");
  const std::uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : 20261125;
  std::mt19937_64 rng(seed);
  const auto before = listing(pools.path);
  int by_status[3] = {0, 0, 0};
  for (int i = 0; i < 200; ++i) {
    const auto args = invocation(rng, pools.path.string(), out.path.string());
    std::string shown;
    for (const auto& a : args) shown += "'" + a + "' ";
    const auto r = run_cli(args, env, 30);
    ASSERT_TRUE(r.status >= 0 && r.status <= 2)
        << "seed " << seed << " run " << i << ": " << shown << "\nexit " << r.status << "\n"
        << r.output;
    EXPECT_EQ(r.output.find("Sanitizer"), std::string::npos) << shown << "\n" << r.output;
    EXPECT_EQ(r.output.find("runtime error"), std::string::npos) << shown << "\n" << r.output;
    ++by_status[r.status];
    ASSERT_EQ(listing(pools.path), before) << "seed " << seed << ": " << shown << "\n" << r.output;
    std::filesystem::remove_all(out.path);
    std::filesystem::create_directories(out.path);
  }
  // The mix reaches every outcome, so the fuzz does not only test the flag parser.
  EXPECT_GT(by_status[0], 0);
  EXPECT_GT(by_status[2], 0);
  std::printf("exit 0: %d, exit 1: %d, exit 2: %d\n", by_status[0], by_status[1], by_status[2]);
}

}  // namespace
