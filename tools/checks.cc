#include "checks.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "dptree/error.h"

namespace dptree::cli {

namespace fs = std::filesystem;

namespace {

// Parses all of `s` as a T in [lo, hi]; otherwise the reason, naming the value and the range.
template <class T>
std::string out_of(const std::string& s, T lo, T hi, const char* kind) {
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  const bool whole_text = !s.empty() && end == s.data() + s.size();
  bool ok = whole_text && ec == std::errc{} && v >= lo && v <= hi;
  if constexpr (std::is_floating_point_v<T>) ok = ok && std::isfinite(v);
  if (ok) return {};
  const bool negative =
      s.size() > 1 && s[0] == '-' &&
      std::all_of(s.begin() + 1, s.end(), [](char c) { return c >= '0' && c <= '9'; });
  const bool number =
      negative || (whole_text && (ec == std::errc{} || ec == std::errc::result_out_of_range));
  return fmt::format("value '{}' is {}: give {} from {} to {}", s,
                     number ? "out of range" : std::string("not ") + kind, kind, lo, hi);
}

}  // namespace

CLI::Validator whole_in(std::uint64_t lo, std::uint64_t hi) {
  return CLI::Validator([lo, hi](std::string& s) { return out_of(s, lo, hi, "a whole number"); },
                        fmt::format("UINT:{}..{}", lo, hi));
}

CLI::Validator number_in(double lo, double hi) {
  return CLI::Validator([lo, hi](std::string& s) { return out_of(s, lo, hi, "a number"); },
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

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace dptree::cli
