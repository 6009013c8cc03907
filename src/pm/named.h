// The names of an enum's values in one table, read both ways: to_string() finds a value's
// name and parsing finds the value of a name, refusing an unknown one with the list of the
// known. Kept in the lowest layer so that every layer's enums can use it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "dptree/error.h"

namespace dptree {

template <class E>
struct Named {
  E value;
  const char* name;
};

// "a, b or c".
inline std::string listed(const std::vector<std::string>& words) {
  std::string s;
  for (std::size_t i = 0; i < words.size(); ++i)
    s += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return s;
}

template <class E, std::size_t N>
constexpr const char* name_of(const Named<E> (&names)[N], E e) {
  for (const auto& n : names)
    if (n.value == e) return n.name;
  return "?";
}

// Every name, as "a, b or c".
template <class E, std::size_t N>
std::string names_listed(const Named<E> (&names)[N]) {
  std::vector<std::string> words;
  for (const auto& n : names) words.emplace_back(n.name);
  return listed(words);
}

// The value named s; otherwise Error(invalid_argument): "unknown <what> 's': use a, b or c".
template <class E, std::size_t N>
E parse_named(const Named<E> (&names)[N], std::string_view s, std::string_view what) {
  for (const auto& n : names)
    if (s == n.name) return n.value;
  throw Error(Errc::invalid_argument, "unknown " + std::string(what) + " '" + std::string(s) +
                                          "': use " + names_listed(names));
}

}  // namespace dptree
