// libFuzzer target over the sweep spec: a sweep file's JSON (through the strict reader), then
// --grid, --seeds and --shard arguments from the lines after "--" (sim/sweep/sweep_spec.h). Any
// outcome but success or a ConfigError is a finding, and so is a spec that passes check_limits()
// with more points or runs than the limits, a seed list with a repeat, or a point count that
// wrapped. Points 0 and the last one are loaded (not run) so grid values reach the scenario parser.
#include <filesystem>
#include <set>

#include "base/config_error.h"
#include "base/json_file.h"
#include "sim/sweep/sweep_spec.h"
#include "tests/fuzz/fuzz_input.h"

using namespace metronome;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split_input(data, size);
  try {
    SweepSpec spec;
    if (!in.json.empty()) spec = parse_sweep_spec(parse_json(in.json, "fuzz.json"), "fuzz.json");
    for (const auto& line : in.lines) {
      if (line.rfind("seeds ", 0) == 0) {
        spec.seeds = parse_seeds(line.substr(6));
      } else if (line.rfind("shard ", 0) == 0) {
        const Shard s = parse_shard(line.substr(6));
        if (s.count < 1 || s.index < 0 || s.index >= s.count) fuzz::wrong("shard out of range");
      } else {
        spec.axes.push_back(parse_grid_axis(line));
      }
    }
    const std::set<uint64_t> distinct(spec.seeds.begin(), spec.seeds.end());
    if (distinct.size() != spec.seeds.size()) fuzz::wrong("a repeated seed was accepted");
    if (spec.seeds.empty()) spec.seeds = {1};
    spec.check_limits();
    if (spec.points() < 1 || spec.points() > kMaxGridPoints) fuzz::wrong("points beyond the limit");
    if (spec.runs() < spec.points() || spec.runs() > kMaxSweepRuns) fuzz::wrong("runs wrapped");
    // The base scenario must be a shipped file or the built-in one: a fuzzed path could name a
    // FIFO or /dev/stdin, which a user may mean but a fuzzer must not block on.
    std::error_code ec;
    if (!spec.scenario.empty() && !std::filesystem::is_regular_file(spec.scenario, ec)) {
      spec.scenario.clear();
    }
    (void)spec.to_json().dump();
    spec.load_point(0);
    if (spec.points() > 1) spec.load_point(spec.points() - 1);
  } catch (const ConfigError&) {
  }
  return 0;
}
