// The names of the error codes (dptree/error.h).
#include "dptree/error.h"

#include "pm/named.h"

namespace dptree {

constexpr Named<Errc> kErrcNames[] = {{Errc::invalid_argument, "invalid argument"},
                                      {Errc::not_found, "not found"},
                                      {Errc::already_exists, "already exists"},
                                      {Errc::not_a_pool, "not a pool"},
                                      {Errc::version_mismatch, "format version mismatch"},
                                      {Errc::wrong_index, "pool of another index"},
                                      {Errc::truncated, "truncated"},
                                      {Errc::corrupt, "corrupt"},
                                      {Errc::stored_setting, "stored setting out of range"},
                                      {Errc::locked, "locked"},
                                      {Errc::in_use, "pool in use"},
                                      {Errc::pool_full, "pool full"},
                                      {Errc::io_error, "I/O error"}};

std::string_view to_string(Errc c) {
  return name_of(kErrcNames, c);
}

}  // namespace dptree
