#include <filesystem>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "app/commands.h"
#include "app/fleet_run.h"
#include "app/run_folder.h"
#include "app/scenario_options.h"
#include "base/config_error.h"
#include "base/output_dir.h"
#include "base/output_file.h"
#include "base/output_number.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/closed_form/service_rate.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/output/metrics_writer.h"
#include "sim/output/time_series_writer.h"
#include "sim/output/trace_writer.h"

namespace metronome::cli {

Run add_simulate(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "simulate",
      "Simulate one run of a scenario: sessions on one engine with a paged KV pool. Reports the "
      "crash (first stall) beside the first-order t_sat, reported vs true latency, silent frames.");
  struct Options {
    ScenarioOptions scenario;
    std::string out;
    std::string trace;
    std::string metrics;
    int jobs = 1;
  };
  auto o = std::make_shared<Options>();
  o->scenario.add_to(*cmd);
  cmd->add_option("--out", o->out,
                  "Directory for summary.json, timeseries.csv (one row per output.sample_period_s "
                  "seconds) and the resolved scenario.json; created if missing. summary.json is "
                  "written last: a folder without it holds an unfinished run");
  cmd->add_option(
      "--trace", o->trace,
      "Write a Chrome/Perfetto trace (JSON) of engine steps, stalls and pool occupancy");
  cmd->add_option(
      "--metrics", o->metrics,
      "Write the run's time series (one sample per output.sample_period_s) as Prometheus text "
      "under vLLM's names: vllm:kv_cache_usage_perc, vllm:num_requests_running, "
      "vllm:num_requests_waiting, vllm:num_preemptions_total; timestamps in ms from the start");
  cmd->add_option("-j,--jobs", o->jobs,
                  "A fleet scenario: threads that run its replicas on after the last call "
                  "(default 1); the result is the same for any number")
      ->check(CLI::Range(1, 1024));
  return [o]() {
    const Scenario s = o->scenario.load();
    if (s.fleet) {
      for (const auto& [flag, value] :
           {std::pair{"--trace", &o->trace}, {"--metrics", &o->metrics}}) {
        if (!value->empty()) {
          throw ConfigError(std::string(flag) + ": not for a fleet scenario (" + s.source +
                            " has a fleet section); --out DIR writes each replica's time series "
                            "under DIR/replicas/");
        }
      }
      return simulate_fleet(s, {o->out, o->scenario.json, o->jobs});
    }
    auto prediction = predict_first_order(s);
    auto cost = make_cost_model(s);
    prediction.service = check_service(s, prediction, *cost);

    // Two outputs on one path would leave only the one written last, and no error.
    std::vector<std::pair<std::string, std::filesystem::path>> outputs;
    if (!o->trace.empty()) outputs.emplace_back("--trace " + o->trace, o->trace);
    if (!o->metrics.empty()) outputs.emplace_back("--metrics " + o->metrics, o->metrics);
    if (!o->out.empty()) {
      for (const std::string_view f : RunFolder::kFiles) {
        outputs.emplace_back("--out " + o->out + " (its " + std::string(f) + ")",
                             std::filesystem::path(o->out) / f);
      }
      outputs.emplace_back("--out " + o->out + " (its lock file)",
                           std::filesystem::path(o->out) / OutputDir::kLockName);
    }
    // Absolute first: weakly_canonical leaves a relative path relative where no part of it exists
    // yet (an --out folder still to be created), and "run1/x" would not meet "$PWD/run1/x".
    for (auto& [label, path] : outputs) {
      std::error_code ec;
      path = std::filesystem::absolute(path, ec);
      const auto full = std::filesystem::weakly_canonical(path, ec);
      path = ec ? path.lexically_normal() : full;
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      for (size_t k = 0; k < i; ++k) {
        if (outputs[i].second == outputs[k].second) {
          throw ConfigError(outputs[k].first + " and " + outputs[i].first +
                            ": the same file; expected a path of its own for each output");
        }
      }
    }
    ObserverList observers;
    std::unique_ptr<RunFolder> out;
    std::unique_ptr<TraceWriter> trace;
    std::unique_ptr<MetricsWriter> metrics;
    if (!o->out.empty()) {
      out = std::make_unique<RunFolder>(o->out);
      remove_fleet_outputs(out->dir());
      observers.add(&out->series());
    }
    if (!o->metrics.empty()) {
      metrics = std::make_unique<MetricsWriter>(o->metrics, s.model.name);
      observers.add(metrics.get());
    }
    if (!o->trace.empty()) {
      trace = std::make_unique<TraceWriter>(o->trace);
      observers.add(trace.get());
    }
    Engine engine(s, *cost, prediction.pool, observers.empty() ? nullptr : &observers);
    const RunResult r = engine.run();
    auto j = run_json(s, prediction, r, cost->label());
    if (!s.cost_model.chosen.empty()) j["cost_model_chosen"] = s.cost_model.chosen;
    if (trace) trace->close();
    if (metrics) metrics->close();
    if (out) out->finish(s, j);
    if (o->scenario.json) {
      std::cout << output_text(j) << "\n";
    } else {
      std::cout << run_text(s, prediction, r, cost->label()) << cost_model_choice(s)
                << cost_model_spread(s, prediction);
    }
    return 0;
  };
}

}  // namespace metronome::cli
