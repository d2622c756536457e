// libFuzzer target over command-line parsing: each input line is one argument of
// `metronome predict|capacity ...` (the subcommands' own option definitions, validators and --set
// handling), and each line is also tried alone as a --set assignment on the default scenario and
// against the numeric option validators (app/option_checks.h). Any outcome but success, a
// CLI11 parse error or a ConfigError is a finding, and so is a validator that accepts text that is
// not a finite number or not a plain decimal integer. An accepted `predict` is run (cheap; its
// stdout goes to /dev/null); `capacity` is only parsed, since its probes simulate.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/commands.h"
#include "app/option_checks.h"
#include "base/config_error.h"
#include "sim/config/scenario.h"
#include "tests/fuzz/fuzz_input.h"

using namespace metronome;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!std::freopen("/dev/null", "w", stdout)) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  {
    std::string text(reinterpret_cast<const char*>(data), size);
    size_t start = 0;
    while (start <= text.size() && args.size() < 64) {
      const size_t end = text.find('\n', start);
      args.push_back(
          text.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  for (std::string a : args) {
    std::string s = a;
    if (cli::kFiniteNumber(s).empty()) {
      char* end = nullptr;
      const double x = std::strtod(a.c_str(), &end);
      if (!std::isfinite(x) || end != a.c_str() + a.size())
        fuzz::wrong("FINITE accepted a non-finite number");
    }
    s = a;
    if (cli::kDecimalInteger(s).empty()) {
      if (a.empty() || a.size() > 19 || a.find_first_not_of("0123456789") != std::string::npos ||
          (a.size() > 1 && a[0] == '0')) {
        fuzz::wrong("UINT accepted a non-decimal");
      }
    }
    if (a.find('=') != std::string::npos) {
      try {
        nlohmann::json j = read_scenario_json("");
        apply_set(j, a, "");
        parse_scenario(j, "fuzz");
      } catch (const ConfigError&) {
      }
    }
  }
  CLI::App app{"metronome", "metronome"};
  app.require_subcommand(1);
  const cli::Run predict = cli::add_predict(app);
  CLI::App* predict_cmd = app.get_subcommands({}).back();
  // The returned Run owns the options the parser writes into: it must outlive parse().
  const cli::Run capacity = cli::add_capacity(app);
  std::vector<std::string> argv_text = {"metronome"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_text) argv.push_back(s.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    if (predict_cmd->parsed()) predict();
  } catch (const CLI::ParseError&) {
  } catch (const ConfigError&) {
  }
  return 0;
}
