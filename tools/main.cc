// `dptree`: the project's command-line tool. Subcommands are registered by the cmd_*.cc
// files (see commands.h). Exit status: 0 success, 1 the run failed, 2 usage (checks.h).
#include <fmt/core.h>

#include <algorithm>
#include <exception>

#include "checks.h"
#include "commands.h"
#include "dptree/error.h"

namespace {
constexpr int kFailed = 1;  // the run failed: a corrupt or full pool, a failed check, I/O
constexpr int kUsage = 2;   // a bad flag or value (an invalid_argument): nothing was run
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dptree: tools for the DPTree persistent-memory index and its peers"};
  app.require_subcommand(1);
  app.footer(dptree::cli::kExitStatusHelp);
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
    sub->footer(dptree::cli::kExitStatusHelp);
    c.setup(*sub);
    sub->preparse_callback([&running, name = c.name](std::size_t) { running = name; });
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes (105, 109, ...) become the usual 2; --help stays 0.
    return app.exit(e) == 0 ? 0 : kUsage;
  } catch (const dptree::Error& e) {
    fmt::print(stderr, "dptree {}: error: {}\n", running, e.what());
    return e.code() == dptree::Errc::invalid_argument ? kUsage : kFailed;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dptree {}: unexpected error: {}\n", running, e.what());
    return kFailed;
  }
  return dptree::cli::exit_code();
}
