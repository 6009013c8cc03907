// Checks of the command line made before any work: numeric ranges as CLI11 validators (their
// failures are usage errors, exit status 2), and output paths that the run will write.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dptree::cli {

// A whole number in [lo, hi] written in digits only: CLI11 would wrap "-5" to 2^64 - 5.
CLI::Validator whole_in(std::uint64_t lo, std::uint64_t hi);
// A finite number in [lo, hi] (CLI::Range lets "nan" through).
CLI::Validator number_in(double lo, double hi);
// No sign: for values a transform converts (sizes like 4GiB), which would wrap "-1".
CLI::Validator unsigned_text();

// The items of a comma-separated flag value ("dptree,fastfair"), empty items left out.
std::vector<std::string> split_list(const std::string& s);

// A file the run will write when it ends (`flag` is e.g. "--json"; "-" is stdout): refuses a
// folder, a missing or unwritable folder and an unwritable file now, not after the run.
void check_output_path(const std::string& path, const std::string& flag);
// A file the run will create (a pool): as above, and refuses an existing file.
void check_new_file_path(const std::string& path, const std::string& flag);
// Writes `text` to `path` through a temporary file renamed into place, so a failed write
// leaves no partial file; "-" prints it.
void write_whole_file(const std::string& path, const std::string& text, const std::string& what);

// The help's footer: what the exit status means.
inline constexpr const char* kExitStatusHelp =
    "Exit status: 0 success; 1 the run failed (a corrupt or full pool, a failed check, an I/O "
    "error); 2 usage (a bad flag or value; nothing was run or written); 130 interrupted.";

}  // namespace dptree::cli
