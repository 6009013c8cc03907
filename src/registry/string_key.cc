// check_string_key (dptree/string_index.h): the one place the key-length limits are worded.
#include <string>

#include "dptree/error.h"
#include "dptree/string_index.h"

namespace dptree {

void check_string_key(std::string_view k, std::size_t max_bytes, std::string_view index) {
  if (k.empty())
    throw Error(Errc::invalid_argument, std::string(index) +
                                            ": an empty key; string keys hold 1 to " +
                                            std::to_string(max_bytes) + " bytes");
  if (k.size() > max_bytes)
    throw Error(Errc::invalid_argument,
                std::string(index) + ": a key of " + std::to_string(k.size()) +
                    " bytes, over the limit of " + std::to_string(max_bytes) +
                    "; shorten it (a hash or a prefix of it, say)");
}

}  // namespace dptree
