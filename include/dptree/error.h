// dptree::Error: the one exception type of the project. Its message names the thing that is
// wrong (a file, a flag, a key), the problem, and what to do about it.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace dptree {

enum class Errc {
  invalid_argument,  // a bad option, flag, key or value given by the caller (out of range too)
  not_found,         // a file that does not exist
  already_exists,    // refusing to overwrite an existing file
  not_a_pool,        // wrong magic
  version_mismatch,  // another format version
  wrong_index,       // a pool that holds another index (or the same one of other widths)
  truncated,         // file shorter than its header says
  corrupt,           // checksum mismatch or an impossible persistent state
  stored_setting,    // a setting read from the pool (e.g. a leaf capacity) is out of range
  locked,            // another process (or another handle in this one) holds the pool file
  in_use,            // a live index of this process already holds this Pool object
  pool_full,         // the allocator has no block of the requested size
  io_error,          // the operating system refused (open, mmap, flock, ...)
};

std::string_view to_string(Errc c);

class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Errc code() const { return code_; }

 private:
  Errc code_;
};

}  // namespace dptree
