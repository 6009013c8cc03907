// One table per index family of the options it takes (IndexConfig::options, `dptree bench
// --option k=v`): each key with its kind, the field it sets, the accepted values and a line of
// help. The table parses a map into an options struct (starting from the struct's defaults;
// then the struct's validate() if it has one, which the typed interface DPTreeOptions /
// CDPTreeOptions uses too), refuses an unknown key by listing the known ones, and describes itself
// for `dptree bench --help-options INDEX`.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dptree/error.h"
#include "dptree/registry.h"
#include "pm/named.h"
#include "registry/option_values.h"

namespace dptree::option_values {

template <class Opts>
class OptionTable {
 public:
  explicit OptionTable(std::string family) : family_(std::move(family)) {}

  // A whole number >= 0 into an unsigned field; `range` says what validate() accepts.
  template <class T>
  OptionTable& whole(std::string key, T Opts::*field, std::string range, std::string help) {
    return add(
        std::move(key), "whole number", range, std::move(help),
        [fam = family_, field, range](Opts& o, const std::string& k, const std::string& v) {
          const std::size_t x = option_values::whole(fam, k, v, range);
          if (x > std::numeric_limits<T>::max()) out_of_range(fam, k, v, range);
          o.*field = static_cast<T>(x);
        },
        [field](const Opts& o) { return std::to_string(o.*field); });
  }
  // The whole numbers lo..hi, and with power_of_two only the powers of two among them.
  struct Bounds {
    std::uint64_t lo, hi;
    bool power_of_two = false;
  };
  // A whole number within `b` into an unsigned field, checked here.
  template <class T>
  OptionTable& whole_in(std::string key, T Opts::*field, Bounds b, std::string help) {
    if (b.lo > b.hi || b.hi > std::numeric_limits<T>::max())
      throw std::logic_error(family_ + " option " + key + ": bounds do not fit the field");
    const std::string range = std::string(b.power_of_two ? "a power of two in " : "") +
                              short_number(b.lo) + ".." + short_number(b.hi);
    return add(
        std::move(key), "whole number", range, std::move(help),
        [fam = family_, field, b, range](Opts& o, const std::string& k, const std::string& v) {
          const std::size_t x = option_values::whole(fam, k, v, range);
          if (x < b.lo || x > b.hi || (b.power_of_two && !std::has_single_bit(x)))
            out_of_range(fam, k, v, range);
          o.*field = static_cast<T>(x);
        },
        [field](const Opts& o) { return std::to_string(o.*field); });
  }
  OptionTable& number(std::string key, double Opts::*field, std::string range, std::string help) {
    return add(
        std::move(key), "number", range, std::move(help),
        [fam = family_, field, range](Opts& o, const std::string& k, const std::string& v) {
          o.*field = option_values::number(fam, k, v, range);
        },
        [field](const Opts& o) { return shown(o.*field); });
  }
  OptionTable& boolean(std::string key, bool Opts::*field, std::string help) {
    return add(
        std::move(key), "boolean", "0 or 1", std::move(help),
        [fam = family_, field](Opts& o, const std::string& k, const std::string& v) {
          o.*field = option_values::boolean(fam, k, v);
        },
        [field](const Opts& o) { return std::string(o.*field ? "1" : "0"); });
  }
  // One of named values; `names` in the order the help lists them.
  template <class E>
  OptionTable& choice(std::string key, E Opts::*field, std::vector<std::pair<std::string, E>> names,
                      std::string help) {
    std::vector<std::string> values;
    for (const auto& n : names) values.push_back(n.first);
    const std::string range = listed(values);
    return add(
        std::move(key), "choice", range, std::move(help),
        [fam = family_, field, names, range](Opts& o, const std::string& k, const std::string& v) {
          for (const auto& [name, e] : names)
            if (name == v) {
              o.*field = e;
              return;
            }
          throw Error(Errc::invalid_argument,
                      fam + " option " + k + "='" + v + "' is unknown: use " + range);
        },
        [field, names](const Opts& o) {
          for (const auto& [name, e] : names)
            if (o.*field == e) return name;
          return std::string("?");
        });
  }

  // One of the values an enum's name table names (pm/named.h), in its order.
  template <class E, std::size_t N>
  OptionTable& choice(std::string key, E Opts::*field, const Named<E> (&names)[N],
                      std::string help) {
    std::vector<std::pair<std::string, E>> v;
    for (const auto& n : names) v.emplace_back(n.name, n.value);
    return choice(std::move(key), field, std::move(v), std::move(help));
  }

  // The options of `m` set on the defaults, then Opts::validate() where Opts has one.
  Opts parse(const std::map<std::string, std::string>& m) const {
    Opts o;
    for (const auto& [k, v] : m) {
      const Entry* e = find(k);
      if (!e)
        throw Error(Errc::invalid_argument,
                    "unknown " + family_ + " option '" + k + "': use " + keys());
      e->set(o, k, v);
    }
    if constexpr (requires { o.validate(); }) o.validate();
    return o;
  }

  // Every key with its kind, default, accepted values and help. The described defaults must
  // parse back to the defaults (a table whose help would mislead is a logic_error).
  std::vector<OptionDoc> docs() const {
    const Opts defaults{};
    std::vector<OptionDoc> out;
    std::map<std::string, std::string> written;
    for (const auto& e : entries_) {
      out.push_back({e.key, e.kind, e.shown(defaults), e.range, e.help});
      written[e.key] = out.back().dflt;
    }
    Opts back;
    try {
      back = parse(written);
    } catch (const Error& e) {
      throw std::logic_error(family_ + ": a described default is refused: " + e.what());
    }
    for (const auto& e : entries_)
      if (e.shown(back) != written[e.key])
        throw std::logic_error(family_ + " option " + e.key + ": the described default " +
                               written[e.key] + " parses to " + e.shown(back));
    return out;
  }

 private:
  struct Entry {
    std::string key, kind, range, help;
    std::function<void(Opts&, const std::string&, const std::string&)> set;
    std::function<std::string(const Opts&)> shown;
  };

  OptionTable& add(std::string key, std::string kind, std::string range, std::string help,
                   decltype(Entry::set) set, decltype(Entry::shown) show) {
    entries_.push_back({std::move(key), std::move(kind), std::move(range), std::move(help),
                        std::move(set), std::move(show)});
    return *this;
  }
  const Entry* find(const std::string& key) const {
    for (const auto& e : entries_)
      if (e.key == key) return &e;
    return nullptr;
  }
  std::string keys() const {
    std::vector<std::string> k;
    for (const auto& e : entries_) k.push_back(e.key);
    return listed(k);
  }
  [[noreturn]] static void out_of_range(const std::string& fam, const std::string& k,
                                        const std::string& v, const std::string& range) {
    throw Error(Errc::invalid_argument,
                fam + " option " + k + "=" + v + " is out of range: use " + range);
  }
  // 2^n for the larger powers of two, which read better so.
  static std::string short_number(std::uint64_t x) {
    if (x > (1u << 16) && std::has_single_bit(x)) return "2^" + std::to_string(std::countr_zero(x));
    return std::to_string(x);
  }

  std::string family_;
  std::vector<Entry> entries_;
};

}  // namespace dptree::option_values
