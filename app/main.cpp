// metronome: when does a real-time serving engine fall off its memory cliff?
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "sim/config_error.h"
#include "sim/output_file.h"
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
  commands.emplace_back(nullptr, cli::add_recommend(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.push_back(cli::add_calibrate(app));
  commands.emplace_back(nullptr, cli::add_replay(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_quality(app));
  commands.back().first = app.get_subcommands({}).back();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and --version exit 0; every rejected option is bad input, exit 2 like the rest.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (auto& [cmd, run] : commands) {
      if (!cmd->parsed()) continue;
      const int rc = run();
      // stdout to a full disk (or a closed pipe) must not look like success.
      if (!stdout_ok()) {
        std::cerr << "metronome: error: cannot write standard output: "
                  << (errno ? std::strerror(errno) : "write failed") << "\n";
        return 1;
      }
      return rc;
    }
  } catch (const ConfigError& e) {
    std::cerr << "metronome: error: " << e.what() << "\n";
    return 2;
  } catch (const IoError& e) {
    std::cerr << "metronome: error: " << e.what() << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that the system refused (permissions, a file where a folder goes).
    std::cerr << "metronome: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "metronome: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
