// A temporary folder for a test, and the listing that "nothing left behind" compares.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace dptree::test {

// Every file under `dir` with its size: what "nothing left behind" compares.
inline std::map<std::string, std::uintmax_t> listing(const std::filesystem::path& dir) {
  std::map<std::string, std::uintmax_t> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    out[e.path().string()] = e.is_regular_file() ? e.file_size() : 0;
  return out;
}

// A fresh empty folder under the temp directory, removed with the object.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("dptree-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

}  // namespace dptree::test
