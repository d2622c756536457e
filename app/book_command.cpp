// `metronome book`: a run recorded on a real engine (scripts/vllm_live.py's folder) booked by the
// simulator's own ledger (sim/output/recorded_run.h), written as `simulate --out` writes a run:
// summary.json, timeseries.csv and the resolved scenario.json. Whatever reads a simulation then
// reads the live run by the same definitions of due, served, silent and late.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <utility>

#include "app/commands.h"
#include "app/run_folder.h"
#include "app/scenario_options.h"
#include "base/config_error.h"
#include "base/json_file.h"
#include "base/output_dir.h"
#include "base/output_file.h"
#include "base/output_number.h"
#include "base/time.h"
#include "calibrate/csv_table.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/output/recorded_run.h"
#include "sim/output/time_series_writer.h"

namespace metronome::cli {

namespace {

using calibrate::CsvTable;

bool exists(const std::string& path) { return std::filesystem::exists(path); }

// A row's instant on the run's clock: within the simulator's range and not before the row above.
double run_instant(double t, double& last, const std::string& where) {
  if (!(t >= last && t <= kMaxSeconds)) {
    throw ConfigError(
        fmt::format("{}: t_s: expected {} to 1e9 (rows in time order), got {}", where, last, t));
  }
  last = t;
  return t;
}

RecordedRun read_records(const std::string& dir, double* origin, nlohmann::json* run) {
  RecordedRun r;
  r.source = dir;
  const std::string run_path = dir + "/run.json";
  *run = read_json_file(run_path, "live run record (run.json)");
  if (!run->is_object() || !(*run)["clock_origin_monotonic_s"].is_number()) {
    throw ConfigError(run_path +
                      ": field 'clock_origin_monotonic_s': expected a number (the "
                      "driver's clock origin on the engine's monotonic clock)");
  }
  *origin = (*run)["clock_origin_monotonic_s"].get<double>();

  const CsvTable frames = CsvTable::read(dir + "/frames.csv");
  const size_t cs = frames.require("session", "the caller"),
               cf = frames.require("frame", "the frame's index in its call"),
               cr = frames.require("release_s", "the frame's release"),
               cd = frames.require("done_s", "its last token, empty if never"),
               ct = frames.require("tokens", "tokens produced");
  for (size_t i = 0; i < frames.rows(); ++i) {
    RecordedRun::Frame f;
    f.session = frames.integer(i, cs);
    f.frame = frames.integer(i, cf);
    f.release_s = frames.number(i, cr);
    if (!frames.empty_cell(i, cd)) f.done_s = frames.number(i, cd);
    f.tokens = frames.integer(i, ct);
    f.where = frames.source() + ":" + std::to_string(frames.line(i));
    if (f.done_s && *f.done_s < f.release_s) {
      throw ConfigError(f.where + ": done_s " + std::to_string(*f.done_s) +
                        ": expected at or after release_s " + std::to_string(f.release_s));
    }
    // On the run's clock (seconds from its origin), within the simulator's range.
    for (const auto& [name, v] : {std::pair{"session", static_cast<double>(f.session)},
                                  {"frame", static_cast<double>(f.frame)},
                                  {"tokens", static_cast<double>(f.tokens)},
                                  {"release_s", f.release_s},
                                  {"done_s", f.done_s.value_or(0)}}) {
      if (v < 0 || v > kMaxSeconds) {
        throw ConfigError(fmt::format("{}: {}: expected 0 to 1e9, got {}", f.where, name, v));
      }
    }
    r.frames.push_back(std::move(f));
  }

  // Engine steps on the engine's monotonic clock (vllm_live_hooks.py), moved to the run's.
  const std::string steps_path = dir + "/steps.jsonl";
  if (exists(steps_path)) {
    const std::string text = read_text_file(steps_path, "engine step log (steps.jsonl)");
    size_t line = 0, at = 0;
    while (at < text.size()) {
      const size_t nl = std::min(text.find('\n', at), text.size());
      const std::string_view row(text.data() + at, nl - at);
      at = nl + 1;
      ++line;
      if (row.empty()) continue;
      const std::string where = steps_path + ":" + std::to_string(line);
      const nlohmann::json j = parse_json(row, where);
      auto num = [&](const char* k) {
        if (!j.is_object() || !j.contains(k) || !j[k].is_number()) {
          throw ConfigError(where + ": field '" + k + "': expected a number");
        }
        return j[k].get<double>();
      };
      // A schedule() call that scheduled nothing (as when its only allocation failed) is no
      // engine step, but what it refused counts.
      const bool scheduled = !(j.contains("q") && j["q"].is_array() && j["q"].empty());
      r.steps.push_back({num("t0") - *origin, num("t1") - *origin, scheduled, num("fail") > 0,
                         static_cast<int64_t>(num("pre"))});
    }
  }

  const std::string metrics_path = dir + "/metrics.csv";
  if (exists(metrics_path)) {
    const CsvTable m = CsvTable::read(metrics_path);
    const size_t t = m.require("t_s", "the sample instant"),
                 u = m.require("kv_cache_usage_perc", "vLLM's KV cache usage (0 to 1)"),
                 w = m.require("num_requests_waiting", "vLLM's waiting requests");
    double last = 0;
    for (size_t i = 0; i < m.rows(); ++i) {
      const std::string where = metrics_path + ":" + std::to_string(m.line(i));
      const double usage = m.number(i, u);
      if (usage < 0 || usage > 1) {
        throw ConfigError(where + ": kv_cache_usage_perc: expected a fraction in [0, 1], got " +
                          std::to_string(usage));
      }
      const double at = run_instant(m.number(i, t), last, where);
      const int64_t waiting = m.integer(i, w);
      if (waiting < 0) {
        throw ConfigError(
            fmt::format("{}: num_requests_waiting: expected >= 0, got {}", where, waiting));
      }
      r.gauges.push_back({at, usage, waiting});
    }
  }

  const std::string admission_path = dir + "/admission.csv";
  if (exists(admission_path)) {
    const CsvTable a = CsvTable::read(admission_path);
    const size_t t = a.require("t_s", "the control instant"),
                 sig = a.require("signal_ms", "the controller's signal, empty if censored"),
                 cap = a.require("cap", "the cap after the interval, -1 for none");
    double last = 0;
    for (size_t i = 0; i < a.rows(); ++i) {
      const std::string where = admission_path + ":" + std::to_string(a.line(i));
      const double at = run_instant(a.number(i, t), last, where);
      const int64_t c = a.integer(i, cap);
      if (c < -1)
        throw ConfigError(fmt::format("{}: cap: expected -1 (none) or >= 0, got {}", where, c));
      const double signal_ms = a.empty_cell(i, sig) ? INFINITY : a.number(i, sig);
      if (!(signal_ms >= 0)) {
        throw ConfigError(
            fmt::format("{}: signal_ms: expected a latency >= 0 (empty if censored), got {}", where,
                        signal_ms));
      }
      r.controls.push_back({at, signal_ms / 1e3, c < 0 ? kNoCap : c});
    }
  }
  return r;
}

// The engine, model and callers are what the recording ran, which its records do not all say
// (engine.num_gpu_blocks=5 would book vLLM's usage against a 5-block pool): --set may change only
// how the run is read.
void check_reading_sets(const std::vector<std::string>& sets) {
  static constexpr std::string_view kReading[] = {"horizon_s", "output", "workload.deadline_s",
                                                  "engine.silence_after_s"};
  for (const std::string& a : sets) {
    const std::string key = a.substr(0, a.find('='));
    const bool reading = std::ranges::any_of(kReading, [&](std::string_view k) {
      return key == k || (key.starts_with(k) && key[k.size()] == '.');
    });
    if (!reading) {
      throw ConfigError(fmt::format(
          "--set {}: book reads a run as it was recorded; --set may change only how it is read "
          "(horizon_s, up to the recording's; output.*; workload.deadline_s; "
          "engine.silence_after_s), not what ran (give the scenario the run drove)",
          key));
    }
  }
}

}  // namespace

Run add_book(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "book",
      "Book a run recorded on a real engine (the folder scripts/vllm_live.py writes: frames.csv, "
      "run.json, and steps.jsonl, metrics.csv, admission.csv where present) with the simulator's "
      "own ledger, and write what `simulate --out` writes: summary.json, timeseries.csv and "
      "scenario.json. The scenario must be the one the run drove (its callers are checked against "
      "the recording).");
  struct Options {
    ScenarioOptions scenario;
    std::string records;
    std::string out;
  };
  auto o = std::make_shared<Options>();
  o->scenario.add_to(*cmd);
  cmd->add_option("--records", o->records, "The live run's folder (scripts/vllm_live.py --out)")
      ->required();
  cmd->add_option("--out", o->out,
                  "Directory for summary.json, timeseries.csv and scenario.json (summary.json "
                  "last); the records' folder itself will do");
  return [o]() {
    check_reading_sets(o->scenario.sets);
    const Scenario s = o->scenario.load();
    require_regular_file(o->records + "/frames.csv", "live frames (frames.csv)");
    double origin = 0;
    nlohmann::json run;
    const RecordedRun records = read_records(o->records, &origin, &run);
    // The driver writes the name of the scenario it drove: another scenario's callers may keep the
    // same schedule (a window or a cap changes no release), so the frames alone cannot tell.
    if (const auto it = run.find("scenario"); it != run.end() && it->is_string() && *it != s.name) {
      throw ConfigError(fmt::format(
          "{}/run.json: scenario: the run drove \"{}\", not the scenario given (\"{}\"); book it "
          "with the scenario it drove",
          o->records, it->get<std::string>(), s.name));
    }
    const FirstOrderPrediction prediction = predict_first_order(s);
    // Records from a driver that wrote what vLLM was started with (older ones did not) are
    // checked against the scenario's pool, which vLLM's usage is a fraction of.
    if (const auto e = run.find("engine_config"); e != run.end() && e->is_object()) {
      for (const auto& [key, ours] : {std::pair{"num_gpu_blocks", prediction.pool.num_blocks},
                                      {"block_size", s.engine.block_size}}) {
        if (const auto v = e->find(key); v != e->end() && *v != ours) {
          throw ConfigError(fmt::format(
              "{}/run.json: engine_config.{}: vLLM ran with {}, the scenario's is {}; book the "
              "run with the scenario it drove",
              o->records, key, v->dump(), ours));
        }
      }
    }

    std::unique_ptr<RunFolder> out;
    if (!o->out.empty()) out = std::make_unique<RunFolder>(o->out);
    const RunResult r =
        book_recorded_run(s, prediction.pool.num_blocks, records, out ? &out->series() : nullptr);
    std::string engine = "a recorded engine";
    if (run.contains("vllm_version") && run["vllm_version"].is_string()) {
      engine = "vLLM " + run["vllm_version"].get<std::string>();
    }
    auto j = run_json(s, prediction, r, "none: " + engine + ", recorded live");
    // What the engine's records do not hold is not reported as a zero.
    auto& result = j["result"];
    for (const char* k :
         {"blocks_allocated", "blocks_released", "max_resident_blocks_per_session"}) {
      result.erase(k);
    }
    j["recorded"] = {{"records", o->records},
                     {"not_recorded",
                      {"blocks_allocated", "blocks_released", "max_resident_blocks_per_session"}},
                     {"pool_blocks_from", "vllm:kv_cache_usage_perc x the scenario's pool"},
                     {"stalled_sessions_from",
                      "vllm:num_requests_waiting (every waiting request, short of blocks or "
                      "queued behind a running step)"},
                     {"run", run}};
    if (out) out->finish(s, j);
    if (o->scenario.json) {
      std::cout << output_text(j) << "\n";
    } else {
      std::cout << run_text(s, prediction, r, engine + ", recorded live");
    }
    return 0;
  };
}

}  // namespace metronome::cli
