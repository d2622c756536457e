// libFuzzer target over the scenario loader and the --set parser. The input is a scenario JSON
// text, optionally followed by a line "--" and one --set assignment per line. Any outcome but
// success or a ConfigError (a crash, a sanitizer report, another exception, a hang) is a finding.
// Valid scenarios are also sized, predicted and simulated briefly, so hostile numbers reach the
// engine. The clamps below bound only the run's length, never a field that a past finding came
// from (bandwidths, FLOP/s, token counts, pool sizes reach the cost bounds as given).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/config_error.h"
#include "base/json_file.h"
#include "sim/closed_form/first_order.h"
#include "sim/config/scenario.h"
#include "sim/engine/engine.h"

using namespace metronome;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  if (auto cut = text.find("\n--\n"); cut != std::string::npos) {
    std::string rest = text.substr(cut + 4);
    text.resize(cut);
    size_t start = 0;
    while (start <= rest.size()) {
      const size_t end = rest.find('\n', start);
      std::string line =
          rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!line.empty()) sets.push_back(line);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  try {
    // The strict reader (base/json_file.h): duplicate keys, 1e309 and deep nesting are
    // ConfigErrors.
    auto parsed = parse_json_if_json(text, "fuzz.json");
    // Not JSON: fuzz the --set lines on the default.
    nlohmann::json j = parsed ? std::move(*parsed) : read_scenario_json("");
    if (!j.is_object()) return 0;
    for (const char* key : {"model", "gpu"}) {
      if (j.contains(key) && j[key].is_string())
        apply_set(j, std::string(key) + "=" + j[key].get<std::string>(), "");
    }
    for (const auto& s : sets) apply_set(j, s, "");
    // Keep each execution short: at most 200 callers, or 50 a second.
    if (auto w = j.find("workload"); w != j.end() && w->is_object()) {
      if (auto a = w->find("arrival"); a != w->end() && a->is_object()) {
        if (auto n = a->find("sessions"); n != a->end() && n->is_number() && *n > 200) *n = 200;
        if (auto r = a->find("rate_per_s"); r != a->end() && r->is_number() && *r > 50) *r = 50;
      }
    }
    Scenario s = parse_scenario(j, "fuzz");
    // Keep each execution short: the engine's cost grows with sessions x horizon / period.
    if (s.horizon_s > 5) s.horizon_s = 5;
    if (s.workload.frame_period_s < 0.01) s.workload.frame_period_s = 0.01;
    if (s.output.sample_period_s < 0.5) s.output.sample_period_s = 0.5;
    if (s.workload.frame_jitter_s >= s.workload.frame_period_s) s.workload.frame_jitter_s = 0;
    predict_first_order(s);
    simulate(s);
  } catch (const ConfigError&) {
  }
  return 0;
}
