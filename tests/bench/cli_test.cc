// The `dptree` binary: help, flag errors, --list, and the JSON / CSV files of a tiny run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dptree/pm/persist.h"
#include "dptree/pm/pool.h"
#include "fixtures/pool_damage.h"
#include "misuse/cli_run.h"

namespace {

using Result = dptree::test::CliResult;

Result run(const std::string& args) {
  return dptree::test::run_cli_line(args);
}

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

std::string temp(const char* name) {
  return (std::filesystem::temp_directory_path() /
          ("dptree-cli-test-" + std::to_string(getpid()) + "-" + name))
      .string();
}

// A quiet bench run that writes JSON and CSV files: its result, the JSON and the CSV's lines
// (the files are removed).
struct FileRun {
  Result r;
  nlohmann::json json;
  std::vector<std::string> csv;
};
FileRun run_to_files(const std::string& args) {
  const std::string json = temp("out.json"), csv = temp("out.csv");
  FileRun f{run(args + " --quiet --json " + json + " --csv " + csv), {}, {}};
  if (f.r.status == 0) {
    std::ifstream jf(json);
    f.json = nlohmann::json::parse(jf);
    std::ifstream cf(csv);
    for (std::string line; std::getline(cf, line);) f.csv.push_back(line);
  }
  std::filesystem::remove(json);
  std::filesystem::remove(csv);
  return f;
}

TEST(Cli, HelpForEveryCommand) {
  for (const char* c : {"--help", "bench --help", "microbench --help", "harness --help"}) {
    Result r = run(c);
    EXPECT_EQ(r.status, 0) << c << "\n" << r.output;
    EXPECT_TRUE(has(r.output, "Usage")) << c;
  }
  Result r = run("bench --help");
  for (const char* flag : {"--index",          "--list",         "--workload",
                           "--records",        "--ops",          "--seconds",
                           "--threads",        "--pin",          "--distribution",
                           "--theta",          "--scan-length",  "--scan-selectivity",
                           "--read",           "--insert",       "--update",
                           "--remove",         "--scan",         "--seed",
                           "--sample-rate",    "--pm-mode",      "--pool",
                           "--pool-size",      "--keep",         "--flush-delay-ns",
                           "--fence-delay-ns", "--json",         "--csv",
                           "--recovery",       "--help-options", "--key-type",
                           "--key-set",        "--key-length"})
    EXPECT_TRUE(has(r.output, flag)) << flag;
}

TEST(Cli, BadFlagsExitNonZeroSayingWhatIsAccepted) {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c :
       {Case{"bench --bogus", "accepts: --help, --index"},
        Case{"bench --workload nope", "use one of insert_only"},
        Case{"bench --distribution gauss", "uniform,zipfian"},
        Case{"bench --pm-mode nvme", "pmem,eadr,dram"},
        Case{"bench --threads 0", "thread counts from 1"},
        Case{"bench --theta 1.5", "--theta"},
        Case{"bench --read 50 --insert 20", "must sum to 100"},
        Case{"bench --index nope", "registered indexes (btree"},
        Case{"bench --help-options nope", "registered indexes (btree"},
        Case{"bench --index stdmap --threads 2", "not safe for concurrent use"},
        Case{"bench --ops 10 --seconds 1", "excludes"},
        Case{"bench --option x", "KEY=VALUE"},
        Case{"bench --key-type int", "u64,string"},
        Case{"bench --key-type string --key-set bytes", "random,u64be,words"},
        Case{"bench --key-set u64be", "add --key-type string"},
        Case{"bench --key-type string --key-length 4", "at least 8 bytes"},
        Case{"bench --key-type string --key-length 2000", "1 to 1024 bytes"},
        Case{"bench --key-type string --key-set u64be --key-length 16", "u64be keys are 8 bytes"},
        Case{"bench --key-type string --key-set words --key-length 8", "does not apply"},
        Case{"bench --key-type string --index stdmap", "the indexes that take strings: "},
        Case{"frobnicate", "accepts"}}) {
    Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_TRUE(has(r.output, c.says)) << c.args << " said:\n" << r.output;
  }
}

TEST(Cli, ListShowsTheRegisteredIndexes) {
  Result r = run("bench --list");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "btree        no         yes        no")) << r.output;
  EXPECT_TRUE(has(r.output, "stdmap       no         no         no")) << r.output;
  EXPECT_TRUE(has(r.output, "absl-btree   no         no         yes")) << r.output;
  EXPECT_TRUE(has(r.output, "fptree       yes        yes        yes")) << r.output;
}

// `--list --json`: the registry as JSON, each index's whole entry (scripts/reproduce takes the
// pages' display names from it); the same indexes as the table of `--list`, in its order, and
// to a file as to stdout.
TEST(Cli, ListAsJsonGivesTheRegistry) {
  Result r = run("bench --list --json");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  std::vector<std::string> in_json;
  std::map<std::string, nlohmann::json> by_name;
  std::set<std::string> display_names;
  for (const auto& i : j.at("indexes")) {
    in_json.push_back(i.at("name"));
    by_name[i.at("name")] = i;
    const std::string shown = i.at("display_name");
    EXPECT_FALSE(shown.empty()) << i;
    EXPECT_TRUE(display_names.insert(shown).second) << shown << " names two indexes";
    EXPECT_FALSE(i.at("description").get<std::string>().empty()) << i;
    EXPECT_EQ(i.at("key_forms").at(0), "integer") << i;
    EXPECT_TRUE(i.at("options").is_array()) << i;
    for (const char* plan : {"fuzz", "fuzz_strings", "kill", "generic", "why_untested"})
      EXPECT_TRUE(i.at("tests").contains(plan)) << plan << " in " << i;
  }
  ASSERT_TRUE(by_name.count("fastfair") && by_name.count("fptree") && by_name.count("absl-btree") &&
              by_name.count("dptree") && by_name.count("btree"))
      << r.output;
  const auto& ff = by_name["fastfair"];
  EXPECT_EQ(ff["display_name"], "FAST_FAIR");
  EXPECT_EQ(ff["key_forms"], nlohmann::json::array({"integer"}));
  EXPECT_EQ(ff["persistent"], true);
  EXPECT_EQ(ff["concurrent"], true);
  EXPECT_EQ(ff["tests"]["kill"]["writers"], 2);
  EXPECT_EQ(ff["tests"]["kill"]["options"], nlohmann::json({{"node_bytes", "256"}}));
  EXPECT_EQ(ff["tests"]["fuzz"]["options"], nlohmann::json({{"node_bytes", "256"}}));
  EXPECT_TRUE(ff["tests"]["generic"].is_null());
  EXPECT_TRUE(ff["tests"]["fuzz_strings"].is_null());
  EXPECT_EQ(by_name["fptree"]["key_forms"], nlohmann::json::array({"integer", "string"}));
  EXPECT_FALSE(by_name["fptree"]["tests"]["fuzz_strings"].is_null());
  EXPECT_EQ(by_name["cdptree"]["display_name"], "DPTree (concurrent)");
  EXPECT_FALSE(by_name["wort"]["tests"]["generic"].is_null());
  EXPECT_EQ(by_name["wort"]["tests"]["generic"]["word8"], true);
  EXPECT_EQ(by_name["absl-btree"]["display_name"], "absl::btree_map");
  EXPECT_EQ(by_name["absl-btree"]["persistent"], false);
  EXPECT_EQ(by_name["btree"]["options"], nlohmann::json::array());
  EXPECT_TRUE(by_name["btree"]["tests"]["fuzz"].is_null());
  bool leaf_capacity = false;
  for (const auto& o : by_name["dptree"]["options"])
    if (o.at("key") == "leaf_capacity") {
      leaf_capacity = true;
      for (const char* field : {"kind", "default", "range", "help"})
        EXPECT_FALSE(o.at(field).get<std::string>().empty()) << field;
    }
  EXPECT_TRUE(leaf_capacity) << by_name["dptree"]["options"];

  std::vector<std::string> listed;
  std::istringstream table(run("bench --list").output);
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) listed.push_back(line.substr(0, line.find(' ')));
  EXPECT_EQ(in_json, listed);

  const std::string file = temp("list.json");
  for (const std::string& to :
       std::vector<std::string>{"--json " + file, "--json=" + file, "--json -"}) {
    r = run("bench --list " + to);
    ASSERT_EQ(r.status, 0) << to << "\n" << r.output;
    if (to == "--json -") {
      EXPECT_EQ(nlohmann::json::parse(r.output), j);
      continue;
    }
    EXPECT_EQ(r.output, "") << to;
    std::ifstream f(file);
    EXPECT_EQ(nlohmann::json::parse(f), j) << to;
    std::filesystem::remove(file);
  }
}

// --json without FILE before another flag: the results go to stdout, with no table.
TEST(Cli, JsonWithoutAFileWritesToStdout) {
  Result r =
      run("bench --json --index btree --workload read_only --records 1000 --ops 1000 --quiet");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 1u) << r.output;
  EXPECT_EQ(j[0]["index"], "btree");
}

TEST(Cli, HelpOptionsDescribesAnIndexsOptions) {
  Result r = run("bench --help-options dptree");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "leaf_capacity          whole number  default 352      4..4096"))
      << r.output;
  EXPECT_TRUE(has(r.output, "split") && has(r.output, "keep_last, rebuild or thirds")) << r.output;
  r = run("bench --help-options cdptree");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(
      has(r.output, "split                  choice        default rebuild  rebuild or thirds"))
      << r.output;
  EXPECT_TRUE(has(r.output, "inplace_delete         boolean       default 1")) << r.output;
  r = run("bench --help-options fptree");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "leaf_capacity          whole number  default 56       2..56"))
      << r.output;
  r = run("bench --help-options stdmap");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "stdmap takes no options")) << r.output;
}

TEST(Cli, JsonAndCsvOfATinyRun) {
  const FileRun out = run_to_files(
      "bench --index btree,stdmap --workload read_update,ycsb_e --records 1000 --ops 3000 "
      "--pm-mode dram");
  ASSERT_EQ(out.r.status, 0) << out.r.output;
  EXPECT_TRUE(has(out.r.output, "Mops/s"));
  const auto& j = out.json;
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 4u);
  for (const auto& run : j) {
    for (const char* f :
         {"index", "workload", "threads", "records", "ops", "seconds", "throughput_mops",
          "latency_ns", "flushes_per_op", "fences_per_op", "pm_bytes_written_per_op", "dram_bytes",
          "pm_bytes", "recovery_seconds", "pm_mode", "cpu_seconds", "cpu_ns_per_op",
          "pm_peak_bytes", "peak_rss_bytes"})
      EXPECT_TRUE(run.contains(f)) << f;
    for (const char* p : {"p50", "p90", "p99", "p999", "p9999", "max"})
      EXPECT_TRUE(run["latency_ns"].contains(p)) << p;
    EXPECT_EQ(run["ops"], 3000);
    EXPECT_EQ(run["records"], 1000);
    EXPECT_EQ(run["pm_mode"], "dram");
    EXPECT_GT(run["throughput_mops"].get<double>(), 0);
    EXPECT_GT(run["cpu_ns_per_op"].get<double>(), 0);
    EXPECT_TRUE(run["recovery_seconds"].is_null()) << "volatile indexes have no recovery";
    EXPECT_EQ(run["pm_peak_bytes"], 0) << "a volatile index holds no pool";
    EXPECT_GT(run["peak_rss_bytes"].get<std::uint64_t>(), 0u);
  }
  EXPECT_EQ(j[0]["index"], "btree");
  EXPECT_EQ(j[1]["index"], "stdmap");
  EXPECT_EQ(j[2]["workload"], "ycsb_e");
  EXPECT_EQ(out.csv.size(), 5u) << "header + 4 runs";
}

// String keys: the runs take the string forms, and the JSON and CSV say which keys they took.
TEST(Cli, StringKeysJsonAndCsv) {
  const FileRun out = run_to_files(
      "bench --key-type string --key-length 16-64 --workload mixed --records 1000 --ops 2000 "
      "--pm-mode dram");
  ASSERT_EQ(out.r.status, 0) << out.r.output;
  const auto& j = out.json;
  ASSERT_FALSE(j.empty());
  for (const auto& run : j) {
    EXPECT_EQ(run["key_type"], "string");
    EXPECT_EQ(run["key_set"], "random");
    EXPECT_EQ(run["key_bytes"]["min"], 16);
    EXPECT_EQ(run["key_bytes"]["max"], 64);
    EXPECT_EQ(run["ops"], 2000);
  }
  // Without --index: every index that takes strings (the strings column of --list), and only
  // those.
  std::set<std::string> ran, listed;
  for (const auto& run : j) ran.insert(run["index"].get<std::string>());
  std::istringstream list(run("bench --list").output);
  std::string line;
  std::getline(list, line);  // the header
  while (std::getline(list, line)) {
    std::istringstream cols(line);
    std::string name, persistent, concurrent, strings;
    if (cols >> name >> persistent >> concurrent >> strings && strings == "yes")
      listed.insert(name);
  }
  EXPECT_EQ(ran, listed);
  EXPECT_TRUE(ran.contains("absl-btree"));
  ASSERT_GE(out.csv.size(), 2u);
  EXPECT_TRUE(has(out.csv[0], "key_type,key_set,key_min_bytes,key_max_bytes")) << out.csv[0];
  EXPECT_TRUE(has(out.csv[1], "string,random,16,64")) << out.csv[1];
  Result r =
      run("bench --index absl-btree --records 100 --ops 100 --pm-mode dram --quiet --json -");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "\"key_type\": \"u64\"")) << r.output;
}

TEST(Cli, CustomMix) {
  Result r =
      run("bench --index btree --read 40 --insert 30 --remove 10 --scan 20 --records 500 "
          "--ops 1000 --quiet --json -");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j[0]["workload"], "custom");
  EXPECT_EQ(j[0]["ops_by_kind"]["remove"].get<int>() > 0, true);
}

}  // namespace

namespace {

// The first persistent index of `--list`, or "" when none is registered.
std::string first_persistent_index() {
  std::istringstream list(run("bench --list").output);
  std::string line;
  std::getline(list, line);  // header
  while (std::getline(list, line)) {
    std::istringstream cols(line);
    std::string name, persistent;
    cols >> name >> persistent;
    if (persistent == "yes") return name;
  }
  return "";
}

TEST(Cli, PersistentIndexPoolAndRecovery) {
  const std::string index = first_persistent_index();
  if (index.empty()) GTEST_SKIP() << "no persistent index registered yet";
  const std::string pool = temp("pool");
  Result r = run("bench --index " + index + " --workload insert_only --records 500 --ops 500 " +
                 "--pm-mode dram --recovery --prefault --quiet --json - --pool " + pool);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_TRUE(j[0]["recovery_seconds"].is_number()) << index;
  EXPECT_GT(j[0]["flushes_per_op"].get<double>(), 0) << index << " persists its inserts";
  EXPECT_FALSE(std::filesystem::exists(pool)) << "the pool is removed unless --keep";
  r = run("bench --index " + index + " --workload read_only --records 100 --ops 100 --quiet " +
          "--keep --pool " + pool);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(pool)) << "--keep keeps the pool";
  r = run("bench --index " + index + " --workload read_only --records 100 --ops 100 --quiet " +
          "--pool " + pool);
  EXPECT_EQ(r.status, 2) << "an existing pool file is refused";
  EXPECT_TRUE(std::filesystem::exists(pool)) << "and left alone";
  std::filesystem::remove(pool);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

// Makes a pool with `dptree bench ARGS --keep`, runs `dptree check` on it, removes it.
Result check_pool_of(const std::string& bench_args, const std::string& pool) {
  Result r = run("bench " + bench_args + " --quiet --pm-mode dram --keep --pool " + pool);
  EXPECT_EQ(r.status, 0) << r.output;
  r = run("check " + pool);
  std::filesystem::remove(pool);
  return r;
}

// `dptree ARGS POOL` fails naming `why`, and leaves the file byte-identical; removes it.
void expect_refused_unchanged(const std::string& args, const std::string& pool,
                              const std::string& why) {
  const std::string before = file_bytes(pool);
  Result r = run(args + " " + pool);
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.output, why)) << r.output;
  EXPECT_TRUE(file_bytes(pool) == before) << args << " changed the pool";
  std::filesystem::remove(pool);
}

// `dptree check --json` prints one JSON object a script can read: the tree, its stats, what
// check() counted and found, and recovery's writes; a file it cannot check gives ok false and
// the error's code, with exit status 1 (the message also goes to stderr, after the object).
TEST(Cli, CheckJsonReportsTheTreeOrTheError) {
  const std::string pool = temp("check-json");
  std::filesystem::remove(pool);
  Result r = run(
      "bench --index dptree --workload insert_only --records 0 --ops 3000 --quiet --pm-mode dram "
      "--keep --pool " +
      pool);
  ASSERT_EQ(r.status, 0) << r.output;
  r = run("check --json " + pool);
  ASSERT_EQ(r.status, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["pool"], pool);
  EXPECT_EQ(j["index"], "dptree");
  EXPECT_EQ(j["keys"], "u64");
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["stats"]["records"], 3000);
  EXPECT_EQ(j["stats"]["key_bytes"], 8);
  EXPECT_EQ(j["checked"]["leaves"], j["stats"]["leaves"]);
  EXPECT_EQ(j["checked"]["format_version"], 1);
  EXPECT_TRUE(j["violations"].empty());
  EXPECT_EQ(j["recovery_writes"]["written"], false);
  EXPECT_GT(j["recovery_writes"]["bytes"], 0) << "recovery writes the restart count at least";
  EXPECT_FALSE(j["recovery_writes"]["ranges"].empty());
  std::filesystem::remove(pool);

  {
    std::ofstream junk(pool);
    junk << "not a pool\n";
  }
  r = run("check --json " + pool);
  EXPECT_EQ(r.status, 1) << r.output;
  const auto open = r.output.find('{'), close = r.output.rfind('}');
  ASSERT_TRUE(open != std::string::npos && close != std::string::npos) << r.output;
  j = nlohmann::json::parse(r.output.substr(open, close - open + 1));
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["code"], "not a pool");
  EXPECT_TRUE(has(j["error"]["message"].get<std::string>(), "is not a DPTree pool"));
  std::filesystem::remove(pool);
}

// `dptree check POOL` recovers and verifies a DPTree pool; bad pools get a clear error and are
// left byte-identical.
TEST(Cli, CheckVerifiesADPTreePoolAndRefusesBadFiles) {
  const std::string pool = temp("check-pool");
  std::filesystem::remove(pool);
  Result r =
      run("bench --index dptree --workload mixed --records 3000 --ops 3000 --quiet "
          "--pm-mode dram --keep --pool " +
          pool);
  ASSERT_EQ(r.status, 0) << r.output;
  r = run("check " + pool);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "dptree of integer keys, ok")) << r.output;
  EXPECT_TRUE(has(r.output, "key_bytes 8  value_bytes 8")) << r.output;
  EXPECT_TRUE(has(r.output, "records")) << r.output;
  std::filesystem::remove(pool);

  // Any entry width DPTree takes, and the concurrent DPTree.
  r = check_pool_of(
      "--index dptree --workload insert_only --records 2000 --ops 2000 "
      "--option key_bytes=16 --option value_bytes=40",
      pool);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "dptree of integer keys, ok")) << r.output;
  EXPECT_TRUE(has(r.output, "key_bytes 16  value_bytes 40")) << r.output;
  r = check_pool_of("--index cdptree --workload mixed --records 3000 --ops 3000", pool);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "cdptree of integer keys, ok")) << r.output;
  r = check_pool_of("--index cdptree --key-type string --workload mixed --records 3000 --ops 3000",
                    pool);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "cdptree of string keys, ok")) << r.output;
  // A string pool of a previous format is named as such, not as another index's.
  const std::pair<int, std::string> older[] = {
      {3, "of string keys in format 3 (sorted leaves rewritten by each merge)"},
      {4, "of string keys in format 4 (leaves merged in place, slots of one word"}};
  for (const auto& [format, says] : older) {
    r =
        run("bench --index dptree --key-type string --workload insert_only --records 100 --ops 100 "
            "--quiet --pm-mode dram --keep --pool " +
            pool);
    ASSERT_EQ(r.status, 0) << r.output;
    ASSERT_TRUE(
        dptree::testing::set_root_magic(pool, dptree::testing::older_string_root_magic(format)));
    r = run("check " + pool);
    std::filesystem::remove(pool);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(has(r.output, says)) << r.output;
  }
  // The peers' pools are checked through the registry, in either key form.
  r = check_pool_of("--index fastfair --workload insert_only --records 100 --ops 100", pool);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "fastfair of integer keys, ok")) << r.output;
  EXPECT_TRUE(has(r.output, "records 200 ")) << r.output;  // preloaded and inserted
  r = check_pool_of("--index roart --key-type string --workload insert_only --records 0 --ops 100",
                    pool);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "roart of string keys, ok")) << r.output;
  // A pool no index was given is refused (a factory would make its index there), and left as
  // it was.
  { dptree::pm::Pool::create(pool, 8 << 20); }
  expect_refused_unchanged("check --repair", pool, "holds no index: its root word is empty");
  // A root no index of the registry made is refused, and the file left as it was.
  {
    auto p = dptree::pm::Pool::create(pool, 8 << 20);
    const auto blk = p->allocator().reserve(256);
    std::memset(p->at(blk), 0x5a, 256);
    dptree::pm::persist(p->at(blk), 256);
    p->allocator().activate(p->root_word(), blk);
  }
  expect_refused_unchanged("check", pool, "holds no index of this project's registry");

  r = run("check " + pool);
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.output, "does not exist")) << r.output;

  const std::string junk = temp("check-junk");
  {
    std::ofstream out(junk, std::ios::binary);
    out << std::string(10000, 'x');
  }
  r = run("check " + junk);
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.output, "not a DPTree pool")) << r.output;
  std::ifstream in(junk, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), std::string(10000, 'x'));
  std::filesystem::remove(junk);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// `dptree check` without --repair leaves the file byte-identical: on a valid pool (whose
// recovery still writes, restart_count at least) and on damaged copies of it, whatever check
// says about them. --repair writes recovery's changes.
TEST(Cli, CheckIsReadOnlyUnlessRepair) {
  const std::string pool = temp("check-ro");
  for (const char* index : {"dptree", "cdptree"}) {
    std::filesystem::remove(pool);
    Result r = run(std::string("bench --index ") + index +
                   " --workload mixed --records 3000 --ops 3000 --quiet --pm-mode dram --keep "
                   "--pool-size 8MiB --pool " +
                   pool);
    ASSERT_EQ(r.status, 0) << r.output;
    const std::string valid = file_bytes(pool);
    r = run("check " + pool);
    EXPECT_EQ(r.status, 0) << index << "\n" << r.output;
    EXPECT_TRUE(has(r.output, "recovery would write")) << r.output;
    EXPECT_TRUE(has(r.output, "--repair")) << r.output;
    EXPECT_EQ(file_bytes(pool), valid) << index << ": check without --repair changed the file";

    // Damaged copies: bytes overwritten across the chunk descriptors and the heap.
    std::mt19937_64 rng(7);
    for (int copy = 0; copy < 12; ++copy) {
      std::string bad = valid;
      for (int i = 0; i < 1 + copy % 4; ++i) {
        std::size_t at = 4096 + rng() % (bad.size() - 4096);
        bad[at] = static_cast<char>(bad[at] ^ static_cast<char>(1 + rng() % 255));
      }
      write_bytes(pool, bad);
      r = run("check " + pool);
      // Accepted, or refused with a message; never a crash or a sanitizer report.
      EXPECT_TRUE(r.status == 0 ||
                  (r.status == 1 && (has(r.output, "error:") || has(r.output, "VIOLATIONS"))))
          << index << " copy " << copy << "\n"
          << r.output;
      EXPECT_FALSE(has(r.output, "Sanitizer") || has(r.output, "runtime error")) << r.output;
      EXPECT_EQ(file_bytes(pool), bad) << index << " copy " << copy << ": the file changed";
    }

    write_bytes(pool, valid);
    r = run("check --repair " + pool);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(has(r.output, "repaired")) << r.output;
    EXPECT_NE(file_bytes(pool), valid) << index << ": --repair wrote nothing (restart_count)";
    r = run("check " + pool);
    EXPECT_EQ(r.status, 0) << r.output;
  }
  std::filesystem::remove(pool);
}

TEST(Cli, CheckHelpSaysReadOnlyAndRepair) {
  Result r = run("check --help");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "--repair")) << r.output;
  EXPECT_TRUE(has(r.output, "copy-on-write")) << r.output;
}

// The figures scripts read (the reproduction's persist costs) are in microbench's JSON file, one
// object per PM mode; a folder that does not exist is refused before anything runs.
TEST(Cli, MicrobenchWritesItsFiguresAsJson) {
  const std::string json = temp("micro.json");
  Result r = run("microbench --json " + json);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "persist 1 line")) << "the table goes to stdout beside the file";
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  std::filesystem::remove(json);
  for (const char* mode : {"pmem", "eadr", "dram", "sim"}) {
    const auto& m = j.at("modes").at(mode);
    for (const char* k : {"one_line", "four_lines", "four_ordered", "sixteen_lines"})
      EXPECT_GT(m.at("persist_ns").at(k).get<double>(), 0) << mode << " " << k;
    EXPECT_GT(m.at("alloc_ops_per_second").at("4096").get<double>(), 0) << mode;
  }
  EXPECT_GT(j.at("sim").at("capture_us").get<double>(), 0);
  EXPECT_TRUE(j.at("machine").contains("cpu_model")) << j.at("machine");
  EXPECT_TRUE(j.at("machine").contains("thp_shmem_enabled")) << j.at("machine");
  r = run("microbench --json /nonexistent-dptree-folder/micro.json");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(has(r.output, "does not exist")) << r.output;
}

// `dptree harness` puts the runner beside the tight loop for each index and operation, every
// round in the JSON; a bad count or an unknown index is a usage error, refused before any run.
TEST(Cli, HarnessComparesTheRunnerWithATightLoop) {
  const std::string json = temp("harness.json");
  Result r =
      run("harness --index btree,dptree --records 2000 --ops 3000 --rounds 2 --json " + json);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(has(r.output, "runner /")) << r.output;
  EXPECT_TRUE(has(r.output, "95% interval")) << r.output;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  std::filesystem::remove(json);
  ASSERT_EQ(j.at("pairs").size(), 4u) << "two indexes, lookups and inserts";
  for (const auto& p : j.at("pairs")) {
    ASSERT_EQ(p.at("ratios").size(), 2u) << p;
    for (const auto& x : p.at("ratios")) EXPECT_GT(x.get<double>(), 0) << p;
    // Two rounds are too few for a 95% interval: it is the range, and says so.
    EXPECT_FALSE(p.at("median_ci95_exact").get<bool>()) << p;
    EXPECT_LE(p.at("median_ci95").at(0).get<double>(), p.at("median_ratio").get<double>()) << p;
    EXPECT_GE(p.at("median_ci95").at(1).get<double>(), p.at("median_ratio").get<double>()) << p;
  }
  EXPECT_FALSE(j.at("machine").at("pool_fs").get<std::string>().empty()) << j.at("machine");
  EXPECT_TRUE(j.at("machine").contains("thp_enabled")) << j.at("machine");
  EXPECT_GE(j.at("machine").at("load1_before").get<double>(), 0) << j.at("machine");
  EXPECT_EQ(run("harness --rounds 0").status, 2);
  r = run("harness --index btree,no-such-index --records 10 --ops 10");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_FALSE(has(r.output, "preloading")) << r.output;
  EXPECT_TRUE(has(r.output, "no-such-index")) << r.output;
}

}  // namespace
