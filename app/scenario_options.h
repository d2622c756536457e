// The options every scenario-driven subcommand shares: --scenario, --set, --seed, --json.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace metronome::cli {

struct ScenarioOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::optional<uint64_t> seed;
  bool json = false;

  void add_to(CLI::App& app);
  Scenario load() const;
};

}  // namespace metronome::cli
