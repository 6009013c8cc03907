// `dptree`: the project's command-line tool. Subcommands are registered by the cmd_*.cc
// files (see commands.h).
#include <fmt/core.h>

#include <algorithm>
#include <exception>

#include "commands.h"
#include "dptree/error.h"

int main(int argc, char** argv) {
  CLI::App app{"dptree: tools for the DPTree persistent-memory index and its peers"};
  app.require_subcommand(1);
  auto& cmds = dptree::cli::commands();
  std::sort(cmds.begin(), cmds.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::string running;
  // On a bad flag: CLI11's message, then what the command accepts.
  app.failure_message([&running](const CLI::App* top, const CLI::Error& e) {
    const CLI::App* cmd = top;
    for (const CLI::App* sub : top->get_subcommands())
      if (sub->get_name() == running) cmd = sub;
    std::string accepted;
    for (const CLI::Option* opt : cmd->get_options())
      accepted += (accepted.empty() ? "" : ", ") + opt->get_name();
    if (cmd == top)
      for (const CLI::App* sub : top->get_subcommands({})) accepted += ", " + sub->get_name();
    return std::string(e.what()) + "\n" + (cmd == top ? "dptree" : "dptree " + running) +
           " accepts: " + accepted + "\nRun with --help for details.\n";
  });
  for (auto& c : cmds) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    c.setup(*sub);
    sub->preparse_callback([&running, name = c.name](std::size_t) { running = name; });
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const dptree::Error& e) {
    fmt::print(stderr, "dptree {}: error: {}\n", running, e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dptree {}: unexpected error: {}\n", running, e.what());
    return 1;
  }
  return dptree::cli::exit_code();
}
