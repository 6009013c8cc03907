// Values of index options (IndexConfig::options, `dptree bench --option k=v`), parsed with an
// error that names the index, the option and the text, and asks for a proper value. Shared by
// the DPTree families so a bad value reads the same everywhere.
#pragma once

#include <cstddef>
#include <exception>
#include <stdexcept>
#include <string>

#include "dptree/error.h"

namespace dptree::option_values {

// A whole number >= 0 ("-1", "12x" and "" are refused).
inline std::size_t whole(const std::string& index, const std::string& key, const std::string& v) {
  try {
    std::size_t pos = 0;
    if (!v.empty() && v[0] == '-') throw std::invalid_argument(v);
    auto x = std::stoull(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
    return static_cast<std::size_t>(x);
  } catch (const std::exception&) {
    throw Error(Errc::invalid_argument,
                index + " option " + key + "='" + v + "' is not a whole number: give one");
  }
}

inline double number(const std::string& index, const std::string& key, const std::string& v) {
  try {
    std::size_t pos = 0;
    double x = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    throw Error(Errc::invalid_argument,
                index + " option " + key + "='" + v + "' is not a number: give one");
  }
}

inline bool boolean(const std::string& index, const std::string& key, const std::string& v) {
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  throw Error(Errc::invalid_argument,
              index + " option " + key + "='" + v + "' is not a boolean: give 0 or 1");
}

}  // namespace dptree::option_values
