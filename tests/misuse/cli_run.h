// Runs the `dptree` binary (DPTREE_CLI) for the command-line tests, with a time limit.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "misuse/folder.h"

namespace dptree::test {

struct CliResult {
  int status;          // the exit code; -1 when the process did not exit normally
  std::string output;  // stdout and stderr
};

// `line` as the shell splits it; `env` is a prefix such as "TMPDIR=/x ".
inline CliResult run_cli_line(const std::string& line, const std::string& env = "",
                              int timeout_s = 60) {
  const std::string cmd = "exec env " + env + " timeout -k 5 " + std::to_string(timeout_s) + " " +
                          std::string(DPTREE_CLI) + " " + line + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// `args` one by one, each quoted for the shell.
inline CliResult run_cli(const std::vector<std::string>& args, const std::string& env = "",
                         int timeout_s = 60) {
  std::string line;
  for (const auto& a : args) {
    line += " '";
    for (char c : a) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += "'";
  }
  return run_cli_line(line, env, timeout_s);
}

}  // namespace dptree::test
