// The pool file of a tree created without PiBench's --pool_path: a file of its own under
// /dev/shm that must not outlive the process, whether PiBench deletes the tree, create_tree
// fails after making it, or PiBench exits with the tree still alive (as it does after a
// failed load check).
#pragma once

#include <filesystem>

namespace dptree_pibench {

class TempPoolFile {
 public:
  // Picks a name no live tree of this process uses (dptree-pibench-<pid>.pool first) and
  // removes a leftover of that name, from a dead process that had the same pid.
  TempPoolFile();
  // Removes the file.
  ~TempPoolFile();
  TempPoolFile(const TempPoolFile&) = delete;
  TempPoolFile& operator=(const TempPoolFile&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace dptree_pibench
