// metronome: when does a real-time serving engine fall off its memory cliff?
#include <iostream>

#include "sim/cli/commands.h"
#include "sim/config_error.h"
#include "sim/report.h"

int main(int argc, char** argv) {
  using namespace metronome;
  CLI::App app{
      "metronome " + version_string() +
          ": simulate real-time sessions (audio frames every T seconds) on a serving engine with a "
          "paged KV block pool, and predict when unbounded per-session KV fills it (the cliff) or "
          "how windowed KV with attention sinks bounds it (the ramp).\n"
          "Times are in seconds, sizes in bytes or tokens, unless an option says otherwise.",
      "metronome"};
  app.set_version_flag("--version", version_string());
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, cli::Run>> commands;
  commands.emplace_back(nullptr, cli::add_simulate(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_predict(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_sweep(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_sweep_merge(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_capacity(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.push_back(cli::add_calibrate(app));
  commands.emplace_back(nullptr, cli::add_replay(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_quality(app));
  commands.back().first = app.get_subcommands({}).back();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [cmd, run] : commands) {
      if (cmd->parsed()) return run();
    }
  } catch (const ConfigError& e) {
    std::cerr << "metronome: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "metronome: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
