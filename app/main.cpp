// metronome: when does a real-time serving engine fall off its memory cliff?
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>

#include "app/commands.h"
#include "app/list_option.h"
#include "base/config_error.h"
#include "base/nearest_name.h"
#include "base/output_file.h"
#include "base/progress.h"
#include "base/version.h"
#include "sim/analysis/report.h"

namespace {

// For a rejected command line: the nearest subcommand to a word that is not one, or the nearest
// option to an option the subcommand does not have, as "did you mean" lines.
std::string suggestions(CLI::App& app, int argc, char** argv) {
  std::string out;
  CLI::App* cmd = &app;
  bool leading = true;  // every word so far named a subcommand
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("-", 0) != 0) {
      if (!leading) continue;  // an option's value
      CLI::App* sub = nullptr;
      for (CLI::App* c : cmd->get_subcommands({})) {
        if (c->check_name(arg)) sub = c;
      }
      if (sub) {
        cmd = sub;
        continue;
      }
      leading = false;
      std::vector<std::string> names;
      for (const CLI::App* c : cmd->get_subcommands({})) names.push_back(c->get_name());
      if (!names.empty()) {
        const std::string n = metronome::nearest_name(arg, names);
        out += n.empty() ? "metronome: \"" + arg + "\" is not a command of " + cmd->get_name() +
                               " (--help lists them)\n"
                         : "metronome: did you mean \"" + n + "\" for \"" + arg + "\"?\n";
      }
      continue;
    }
    leading = false;
    if (arg.rfind("--", 0) != 0 || arg == "--") continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (name == "--help" || name == "--version" || cmd->get_option_no_throw(name)) continue;
    std::vector<std::string> names;
    for (const CLI::Option* opt : cmd->get_options()) {
      for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    }
    const std::string n = metronome::nearest_name(name, names);
    if (!n.empty()) out += "metronome: did you mean \"" + n + "\" for \"" + name + "\"?\n";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace metronome;
  // A closed pipe (`metronome ... | head -1`) is a failed write like any other: reported and exit 1
  // (stdout_ok, OutputFile), never a silent death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
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
  commands.emplace_back(nullptr, cli::add_plan(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.push_back(cli::add_calibrate(app));
  commands.emplace_back(nullptr, cli::add_replay(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_quality(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_admit(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_list(app));
  commands.back().first = app.get_subcommands({}).back();
  commands.emplace_back(nullptr, cli::add_book(app));
  commands.back().first = app.get_subcommands({}).back();
  // --quiet on every command (and its subcommands): no progress lines on stderr.
  const std::function<void(CLI::App&)> add_quiet = [&](CLI::App& a) {
    a.add_flag_callback(
        "--quiet", [] { set_progress_quiet(true); },
        "No progress on stderr (long work otherwise shows its rate and ETA)");
    for (CLI::App* sub : a.get_subcommands({})) add_quiet(*sub);
  };
  add_quiet(app);
  const auto stdout_failed = [] {
    std::cerr << "metronome: error: cannot write standard output: "
              << (errno ? std::strerror(errno) : "write failed") << "\n";
    return 1;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and --version exit 0; every rejected option is bad input, exit 2 like the rest (CLI11's
    // own codes, 106 for a missing value, 109 for an unexpected argument, are not ours).
    // The help or version text to a full disk or a closed pipe is a failed write too.
    if (app.exit(e) == 0) return stdout_ok() ? 0 : stdout_failed();
    std::cerr << suggestions(app, argc, argv);
    return 2;
  }
  // Two rules of every option's values, checked once here. A value given as "" is no value:
  // `--out ""` would otherwise read as no --out at all. A list names each value once: `--windows
  // 240 240` would price the same candidate twice and rank it against itself. (--set may repeat a
  // key: the last one wins, as in a file edited twice.)
  const std::function<std::string(const CLI::App&)> bad_value = [&](const CLI::App& a) {
    for (const CLI::Option* opt : a.get_options()) {
      if (opt->count() == 0 || opt->get_expected_max() == 0) continue;  // not given, or a flag
      const std::vector<std::string>& values = opt->results();
      for (const std::string& v : values) {
        if (v.empty()) return opt->get_name() + ": expected a value, got an empty string";
      }
      if (std::string why = cli::repeated_value(values);
          !why.empty() && opt->get_name() != "--set") {
        return opt->get_name() + ": " + why;
      }
    }
    for (const CLI::App* sub : a.get_subcommands()) {
      if (std::string why = bad_value(*sub); !why.empty()) return why;
    }
    return std::string();
  };
  if (const std::string why = bad_value(app); !why.empty()) {
    std::cerr << "metronome: error: " << why << "\n";
    return 2;
  }
  try {
    for (auto& [cmd, run] : commands) {
      if (!cmd->parsed()) continue;
      const int rc = run();
      // stdout to a full disk (or a closed pipe) must not look like success.
      return stdout_ok() ? rc : stdout_failed();
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
