#include "checks.h"

#include <fmt/core.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "dptree/error.h"

namespace dptree::cli {

namespace fs = std::filesystem;

CLI::Validator whole_in(std::uint64_t lo, std::uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || v < lo || v > hi)
          return fmt::format("value '{}' is out of range: give a whole number from {} to {}", s, lo,
                             hi);
        return {};
      },
      fmt::format("UINT:{}..{}", lo, hi));
}

CLI::Validator number_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        double v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v) ||
            v < lo || v > hi)
          return fmt::format("value '{}' is out of range: give a number from {} to {}", s, lo, hi);
        return {};
      },
      fmt::format("NUMBER:{}..{}", lo, hi));
}

CLI::Validator unsigned_text() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (!s.empty() && (s[0] == '-' || s[0] == '+'))
          return "value '" + s + "' has a sign: give a size such as 4GiB or 1048576";
        return {};
      },
      "");
}

namespace {

[[noreturn]] void refuse(const std::string& flag, const std::string& path, const std::string& why) {
  throw Error(Errc::invalid_argument, flag + " '" + path + "': " + why);
}

fs::path folder_of(const fs::path& p) {
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

// The folder exists and is writable; the path is not a folder.
void check_writable_place(const fs::path& p, const std::string& flag, const char* example) {
  std::error_code ec;
  if (fs::is_directory(p, ec))
    refuse(flag, p.string(), "is a folder: give a file name, e.g. " + (p / example).string());
  const fs::path dir = folder_of(p);
  if (!fs::is_directory(dir, ec))
    refuse(flag, p.string(),
           "folder '" + dir.string() + "' does not exist: create it first, or choose another path");
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    refuse(flag, p.string(), "folder '" + dir.string() + "' is not writable: choose another path");
}

}  // namespace

void check_output_path(const std::string& path, const std::string& flag) {
  if (path.empty() || path == "-") return;
  check_writable_place(path, flag, flag == "--csv" ? "out.csv" : "out.json");
  std::error_code ec;
  if (fs::exists(path, ec) && access(path.c_str(), W_OK) != 0)
    refuse(flag, path, "the file exists and is not writable: choose another path");
}

void check_new_file_path(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  check_writable_place(path, flag, "bench.pool");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec)))
    refuse(flag, path, "already exists: remove it first, or choose a new path");
}

void write_whole_file(const std::string& path, const std::string& text, const std::string& what) {
  if (path == "-") {
    fmt::print("{}", text);
    return;
  }
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  std::ofstream f(tmp);
  f << text;
  f.close();
  std::error_code ec;
  if (!f || (fs::rename(tmp, path, ec), ec)) {
    fs::remove(tmp, ec);
    throw Error(Errc::io_error, "cannot write the " + what + " file '" + path +
                                    "': check the folder is writable and has free space");
  }
}

}  // namespace dptree::cli
