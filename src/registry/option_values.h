// Values of index options (IndexConfig::options, `dptree bench --option k=v`), parsed with an
// error that names the index, the option and the text, and asks for a proper value. Shared by
// every index's OptionTable (option_table.h) so a bad value reads the same everywhere.
#pragma once

#include <cstddef>
#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>

#include "dptree/error.h"

namespace dptree::option_values {

// A value as an error message shows it ("%g": 0.5, 1e-06).
inline std::string shown(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

// A whole number >= 0 ("-1", "12x" and "" are refused); the error asks for one in `range`
// when given.
inline std::size_t whole(const std::string& index, const std::string& key, const std::string& v,
                         const std::string& range = "") {
  try {
    std::size_t pos = 0;
    if (!v.empty() && v[0] == '-') throw std::invalid_argument(v);
    auto x = std::stoull(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
    return static_cast<std::size_t>(x);
  } catch (const std::exception&) {
    throw Error(Errc::invalid_argument,
                index + " option " + key + "='" + v + "' is not a whole number: " +
                    (range.empty() ? std::string("give one") : "use " + range));
  }
}

inline double number(const std::string& index, const std::string& key, const std::string& v,
                     const std::string& range = "") {
  try {
    std::size_t pos = 0;
    double x = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    throw Error(Errc::invalid_argument,
                index + " option " + key + "='" + v + "' is not a number: " +
                    (range.empty() ? std::string("give one") : "use " + range));
  }
}

inline bool boolean(const std::string& index, const std::string& key, const std::string& v) {
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  throw Error(Errc::invalid_argument,
              index + " option " + key + "='" + v + "' is not a boolean: give 0 or 1");
}

// Refuses any option, for an index that takes none; `why` says why it takes none.
inline void refuse_options(const std::string& index,
                           const std::map<std::string, std::string>& options,
                           const std::string& why = "") {
  if (options.empty()) return;
  throw Error(Errc::invalid_argument, index + " takes no index options (got '" +
                                          options.begin()->first + "'" +
                                          (why.empty() ? "" : ": " + why) + "); remove the option");
}

}  // namespace dptree::option_values
