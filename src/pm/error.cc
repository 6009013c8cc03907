#include "dptree/error.h"

namespace dptree {

std::string_view to_string(Errc c) {
  switch (c) {
    case Errc::invalid_argument:
      return "invalid argument";
    case Errc::not_found:
      return "not found";
    case Errc::already_exists:
      return "already exists";
    case Errc::not_a_pool:
      return "not a pool";
    case Errc::version_mismatch:
      return "format version mismatch";
    case Errc::wrong_index:
      return "pool of another index";
    case Errc::truncated:
      return "truncated";
    case Errc::corrupt:
      return "corrupt";
    case Errc::stored_setting:
      return "stored setting out of range";
    case Errc::locked:
      return "locked";
    case Errc::in_use:
      return "pool in use";
    case Errc::pool_full:
      return "pool full";
    case Errc::io_error:
      return "I/O error";
  }
  return "unknown";
}

}  // namespace dptree
