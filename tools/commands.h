// The subcommands of the `dptree` tool. Each lives in its own tools/cmd_<name>.cc (picked up
// by a glob in tools/CMakeLists.txt) and registers itself with a static Registrar:
//
//   static dptree::cli::Registrar reg{{"check", "Verify a pool", [](CLI::App& app) {
//     auto* path = ...; app.add_option(...);
//     app.callback([=] { ...; });  // throw dptree::Error on failure; set_exit_code() if needed
//   }}};
//
// main.cc adds one CLI11 subcommand per registration; a dptree::Error thrown by a callback is
// printed as "dptree <command>: error: <message>" with exit status 1.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace dptree::cli {

struct Command {
  std::string name;
  std::string description;
  std::function<void(CLI::App&)> setup;  // adds options and the callback to the subcommand
};

// Every registered command (function-static: safe to fill from static initialisers).
inline std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

struct Registrar {
  explicit Registrar(Command c) { commands().push_back(std::move(c)); }
};

// The process exit status when no exception escapes (e.g. a check that found problems).
inline int& exit_code() {
  static int code = 0;
  return code;
}

}  // namespace dptree::cli
