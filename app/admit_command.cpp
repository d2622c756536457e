// `metronome admit`: the scenario's admission controller as a process, for a driver outside the
// simulator (scripts/vllm_live.py admitting callers into a running vLLM). The controller is the
// object the engine runs (admission.type through the registry), so a live run and a simulation of
// it apply one rule. A line protocol: one JSON object per control interval on stdin, the cap after
// it on stdout.
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "app/commands.h"
#include "app/scenario_options.h"
#include "base/config_error.h"
#include "base/json_file.h"
#include "base/output_file.h"
#include "sim/admission/admission_gate.h"
#include "sim/admission/admission_policy.h"

namespace metronome::cli {

namespace {

// The cap as the protocol writes it: -1 for none.
int64_t wire_cap(int64_t cap) { return cap == kNoCap ? -1 : cap; }

ControlSignal parse_signal(const std::string& line, int64_t n) {
  const std::string where = "stdin line " + std::to_string(n);
  // Read as strictly as a scenario file (a key given twice is an error, not the last one).
  const std::optional<nlohmann::json> parsed = parse_json_if_json(line, where);
  if (!parsed || !parsed->is_object()) {  // a syntax error, or an array, a number...
    throw ConfigError(where +
                      ": expected a JSON object {\"now_s\", \"latency_ms\", \"frames\", "
                      "\"live\"}, got: " +
                      line.substr(0, 80));
  }
  const nlohmann::json& j = *parsed;
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (key != "now_s" && key != "latency_ms" && key != "frames" && key != "live")
      throw ConfigError(where + ": unknown field '" + key +
                        "'; expected now_s, latency_ms, frames and live");
  }
  auto number = [&](const char* key, bool null_ok) -> double {
    if (!j.contains(key)) throw ConfigError(where + ": field '" + key + "' missing");
    const auto& v = j[key];
    if (v.is_null() && null_ok) return INFINITY;  // censored: no answer in the interval's quantile
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      throw ConfigError(where + ": field '" + key + "': expected a number >= 0" +
                        (null_ok ? " or null (censored)" : ""));
    }
    return v.get<double>();
  };
  // Counts are whole and below 1e15, so that the cast is exact; the clock stays within the
  // simulator's range.
  auto count = [&](const char* key) {
    const double v = number(key, false);
    if (v != std::floor(v) || v > 1e15)
      throw ConfigError(where + ": field '" + key + "': expected a whole number below 1e15");
    return static_cast<int64_t>(v);
  };
  ControlSignal s;
  const double now_s = number("now_s", false);
  if (now_s > kMaxSeconds)
    throw ConfigError(where + ": field 'now_s': expected at most 1e9 s on the run's clock");
  s.now = from_seconds(now_s);
  s.latency_s = number("latency_ms", true) / 1e3;
  s.frames = count("frames");
  s.live = count("live");
  // No cost model stands behind a live engine's latency here: no forecast, so the observation.
  return s;
}

}  // namespace

Run add_admit(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "admit",
      "Run the scenario's admission controller (admission.type: aimd, gradient, static, none) as "
      "a process for a driver outside the simulator, such as scripts/vllm_live.py driving a real "
      "vLLM. Prints {\"cap\": N} (-1: no cap) at start, then reads one JSON object per control "
      "interval on stdin, {\"now_s\": seconds on the run's clock, \"latency_ms\": the interval's "
      "admission.quantile of per-frame latency (null: censored), \"frames\": frames in it, "
      "\"live\": sessions admitted now}, and prints the cap after each. The settled-latency "
      "forecast of a simulation is not applied (no cost model stands behind a live latency), and "
      "a scenario whose memory guard is on is refused (admission.memory_guard=off: the guard "
      "needs the engine's blocks).");
  auto o = std::make_shared<ScenarioOptions>();
  o->add_to(*cmd, /*runs=*/false);  // no run: no seed, and its output is the protocol
  return [o]() {
    const Scenario s = o->load_engine("admit");
    // The guard reserves each admitted caller's blocks in the engine's pool, which this process
    // does not see: a cap from the controller alone would admit past it.
    if (memory_guard_on(s)) {
      throw ConfigError(
          s.source +
          ": admission.memory_guard: expected \"off\" for admit (it runs the "
          "controller alone; the memory guard needs the engine's blocks), got \"" +
          s.admission.memory_guard + "\"" +
          (s.admission.memory_guard == "auto" ? " (on under this controller and KV policy)" : ""));
    }
    auto controller = s.admission.policy->make_controller(s.workload.deadline());
    auto emit = [&] {
      std::cout << nlohmann::json{{"cap", wire_cap(controller->cap())}}.dump() << "\n"
                << std::flush;
      if (!std::cout) throw IoError("stdout: write failed");
    };
    emit();
    std::string line;
    Time last = 0;
    for (int64_t n = 1; std::getline(std::cin, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // a blank line
      const ControlSignal sig = parse_signal(line, n);
      if (sig.now < last) {
        throw ConfigError(
            fmt::format("stdin line {}: field 'now_s': expected at least the last "
                        "line's {} s (the run's clock does not go back), got {} s",
                        n, to_seconds(last), to_seconds(sig.now)));
      }
      last = sig.now;
      if (controller->adaptive()) controller->on_interval(sig);
      emit();
    }
    // The end of input is the driver's goodbye; a read that failed (a directory, a descriptor
    // not open for reading) only looks like one to the stream, so stdio's error flag is asked.
    if (std::ferror(stdin) || std::cin.bad()) {
      throw ConfigError(std::string("stdin: cannot read the driver's lines (") +
                        (errno ? std::strerror(errno) : "read failed") + ")");
    }
    return 0;
  };
}

}  // namespace metronome::cli
