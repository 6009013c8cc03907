// The mistakes people make on the command line: each is refused before any work with the
// usual exit code (2 usage, 1 a failed run), a message naming the flag or file, and nothing
// left behind in the pool folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "dptree/pm/pool.h"
#include "fixtures/pool_damage.h"
#include "misuse/cli_run.h"

namespace {

using dptree::test::listing;
using dptree::test::run_cli;
using dptree::test::TempDir;

struct Case {
  std::vector<std::string> args;  // "@" in an argument stands for the pool folder
  int status;
  std::string says;
};

std::vector<std::string> in_folder(std::vector<std::string> args, const std::string& dir) {
  for (auto& a : args)
    if (auto at = a.find('@'); at != std::string::npos) a.replace(at, 1, dir);
  return args;
}

// A tiny persistent run, to which each case adds its one mistake.
std::vector<std::string> tiny(std::vector<std::string> extra) {
  std::vector<std::string> a = {"bench",     "--index", "dptree", "--workload", "insert_only",
                                "--records", "100",     "--ops",  "100",        "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // Numbers: negative, zero where it makes no sense, overflowing, not finite.
      {{"bench", "--records", "-5"}, 2, "--records: value '-5' is out of range"},
      {{"bench", "--records", "0"}, 2, "only inserts can run"},
      {{"bench", "--records", "18446744073709551616"}, 2, "--records: value"},
      {{"bench", "--records", "1e3"}, 2, "whole number"},
      {{"bench", "--ops", "0"}, 2, "--ops: value '0'"},
      {{"bench", "--ops", "-1"}, 2, "--ops: value '-1'"},
      {{"bench", "--seconds", "0"}, 2, "--seconds: value '0'"},
      {{"bench", "--seconds", "inf"}, 2, "--seconds: value 'inf'"},
      {{"bench", "--seconds", "nan"}, 2, "--seconds: value 'nan'"},
      {{"bench", "--theta", "nan"}, 2, "--theta: value 'nan'"},
      {{"bench", "--read", "nan", "--insert", "100"}, 2, "--read: value 'nan'"},
      {{"bench", "--sample-rate", "-0.5"}, 2, "--sample-rate"},
      {{"bench", "--scan-length", "-1"}, 2, "--scan-length: value '-1'"},
      {{"bench", "--scan-selectivity", "0"}, 2, "--scan-selectivity"},
      {{"bench", "--threads", "0"}, 2, "thread counts from 1"},
      {{"bench", "--threads", "-1"}, 2, "thread counts from 1"},
      {{"bench", "--flush-delay-ns", "-1"}, 2, "--flush-delay-ns: value '-1'"},
      {{"bench", "--fence-delay-ns", "4294967296"}, 2, "--fence-delay-ns"},
      {{"bench", "--seed", "-1"}, 2, "--seed: value '-1'"},
      {{"bench", "--pool-size", "-1"}, 2, "--pool-size: value '-1' has a sign"},
      {{"bench", "--pool-size", "1KiB"}, 2, "--pool-size: value '1024' is out of range"},
      {{"bench", "--pool-size", "1PiB"}, 2, "--pool-size: value"},
      {{"bench", "--pool-size", "99999999999999TiB"}, 2, "overflow"},
      // Sizes beyond the free space of the pool's file system.
      {tiny({"--pool-size", "60TiB"}), 2, "bytes free: lower --pool-size"},
      {{"bench", "--index", "dptree", "--records", "1099511627776", "--ops", "1"},
       2,
       "--records 1099511627776 cannot fit"},
      // Output paths, checked before the run.
      {tiny({"--json", "@/no/such/out.json"}), 2, "folder '@/no/such' does not exist"},
      {tiny({"--json", "@"}), 2, "--json '@': is a folder"},
      {tiny({"--csv", "@"}), 2, "--csv '@': is a folder"},
      {tiny({"--pool", "@"}), 2, "--pool '@': is a folder"},
      {tiny({"--pool", "@/no/such/p.pool"}), 2, "folder '@/no/such' does not exist"},
      {tiny({"--pool", "@/keep.me"}), 2, "already exists"},
      // Index options, refused before the first run.
      {tiny({"--option", "leaf_capacity=1"}), 2, "leaf_capacity=1 is out of range"},
      {tiny({"--option", "min_merge_records=99999999999999"}), 2, "min_merge_records"},
      {{"bench", "--index", "cdptree", "--option", "leaf_bytes=0", "--ops", "10"},
       2,
       "leaf_bytes=0 is out of range"},
      {{"bench", "--index", "dptree,stdmap", "--option", "bogus=1", "--ops", "10"},
       2,
       "unknown DPTree option 'bogus'"},
      // Flags and commands.
      {{"bench", "--bogus"}, 2, "accepts: --help, --index"},
      {{"frobnicate"}, 2, "accepts"},
      {{"bench", "--index", "nope"}, 2, "registered indexes"},
      {{"bench", "--pm-mode", "nvme"}, 2, "pmem,eadr,dram"},
      {{"check"}, 2, "pool is required"},
      {{"bench", "--help"}, 0, "Exit status: 0 success; 1 the run failed"},
      // A run that fails half-way (a full pool): exit 1, its pool and JSON file gone.
      {{"bench", "--index", "dptree", "--workload", "insert_only", "--records", "20000", "--ops",
        "100", "--pool-size", "512KiB", "--quiet", "--json", "@/out.json"},
       1,
       "is full"},
      // `dptree check` on what is not a pool: the run fails (1), the file is untouched.
      {{"check", "@"}, 1, "'@' is a folder"},
      {{"check", "@/none.pool"}, 1, "does not exist"},
      {{"check", "@/keep.me"}, 1, "not a DPTree pool"},
  };
  return all;
}

TEST(CliMisuse, EachMistakeIsRefusedWithItsExitCodeAndLeavesNothing) {
  TempDir dir("cli-misuse");
  {
    std::ofstream f(dir / "keep.me");
    f << std::string(5000, 'k');  // an existing file: neither overwritten nor removed
  }
  const auto before = listing(dir.path);
  const std::string env = "DPTREE_POOL_DIR=" + dir.path.string() + " ";
  for (const Case& c : cases()) {
    const auto args = in_folder(c.args, dir.path.string());
    const auto r = run_cli(args, env);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(r.status, c.status) << shown << "\n" << r.output;
    EXPECT_NE(r.output.find(in_folder({c.says}, dir.path.string())[0]), std::string::npos)
        << shown << " said:\n"
        << r.output;
    EXPECT_EQ(listing(dir.path), before) << shown << " left something behind";
    EXPECT_EQ(r.output.find("Sanitizer"), std::string::npos) << shown << "\n" << r.output;
  }
}

// A kept pool of 200 DPTree records, made by `dptree bench`.
bool make_dptree_pool(const std::string& pool) {
  return run_cli({"bench", "--index", "dptree", "--workload", "insert_only", "--records", "100",
                  "--ops", "100", "--quiet", "--keep", "--pool", pool})
             .status == 0;
}

// A pool file held by another process: named as such, with its pid; the file is untouched.
TEST(CliMisuse, APoolHeldByAnotherProcessIsNamedAsSuch) {
  TempDir dir("cli-held");
  const std::string pool = dir / "held.pool";
  ASSERT_TRUE(make_dptree_pool(pool));
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    const int fd = ::open(pool.c_str(), O_RDONLY);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char x;
  ASSERT_EQ(read(ready[0], &x, 1), 1);
  const auto before = listing(dir.path);
  const auto r = run_cli({"check", pool});
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("held by another process (pid " + std::to_string(holder) + ")"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(listing(dir.path), before);
  EXPECT_EQ(run_cli({"check", pool}).status, 0) << "free again once the holder is gone";
}

}  // namespace

namespace {

// `dptree check` of a small DPTree pool file that `damage` changed (given the file's path), in
// a folder named `name`.
dptree::test::CliResult check_damaged(const std::string& name,
                                      const std::function<void(const std::string&)>& damage) {
  TempDir dir(name);
  const std::string pool = dir / "damaged.pool";
  if (!make_dptree_pool(pool)) return {-1, "the pool was not made"};
  damage(pool);
  return run_cli({"check", pool});
}

// A DPTree root whose stored entry widths no DPTree takes: `dptree check` names the width
// and the damage (the registry's factory refuses the stored setting).
TEST(CliMisuse, DamagedEntryWidthsAreNamed) {
  const auto r = check_damaged("cli-widths", [](const std::string& pool) {
    EXPECT_EQ(dptree::testing::set_root_key_bytes(pool, 13), 8u);
  });
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("key_bytes=13 is out of range"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the pool's root was damaged"), std::string::npos) << r.output;
}

// An owner directory block whose next link points past the end of the file: `dptree check`
// names the link word by its offset, and what it holds.
TEST(CliMisuse, DamagedDirectoryLinkIsNamed) {
  std::string says = "(the pool was not damaged)";
  const auto r = check_damaged("cli-dir", [&](const std::string& pool) {
    const auto d = dptree::testing::point_dir_link_past_end(pool);
    ASSERT_TRUE(d);
    says = "the owner directory block link at offset " + std::to_string(d->link_offset) +
           " holds offset " + std::to_string(d->points_to);
  });
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
}

}  // namespace
