#include "calibrate/pipeline.h"

#include "calibrate/calibration_writer.h"
#include "calibrate/step_shape.h"
#include "sim/config/catalog.h"
#include "sim/cost/roofline_cost_model.h"

namespace metronome::calibrate {

ModelConfig scenario_model(const std::string& name, const std::string& referrer) {
  // An unknown name is the referrer's (a bench file's context, an option), not a --set's.
  find_catalog_entry("models", name, "", referrer);
  // The built-in default scenario with its model swapped: the catalog's own validation applies.
  return load_scenario("", {"model=" + name}).model;
}

TermModel term_model(const ModelConfig& m) { return {m.layers, m.experts, m.experts_active}; }

nlohmann::json fit_benchmarks(const BenchRun& run, const FitOptions& options, FitResult* result) {
  const ModelConfig model = scenario_model(run.model, run.source + ": context.metronome_model");
  std::vector<FitSample> samples;
  nlohmann::json diagnostics = nlohmann::json::array();
  for (const auto& b : run.samples) {
    if (b.point.kind != BenchKind::kStep) {
      diagnostics.push_back({{"name", b.name}, {"seconds", b.seconds}});
      continue;
    }
    if (b.layers != model.layers) {
      throw FitError(run.source + ": benchmark \"" + b.name + "\" timed " +
                     std::to_string(b.layers) + " layers, model \"" + model.name + "\" has " +
                     std::to_string(model.layers));
    }
    samples.push_back({b.name, b.point, step_pass_shape(b.point), b.seconds});
  }
  FitResult fit;
  try {
    fit = fit_cost_model(samples, term_model(model), options);
  } catch (const FitError& e) {
    throw FitError(run.source + ": " + e.what());
  }
  for (const auto& s : run.skipped) fit.warnings.push_back("benchmark skipped with an error: " + s);
  CalibrationMeta meta;
  meta.measured = true;
  meta.backend = run.backend;
  // PyTorch's path (calibrate/torch/torch_bench.py) writes the same JSON; its protocol says so,
  // and a merge of several runs (faster_per_shape) says which gave what.
  const bool merged = run.protocol.rfind("faster per shape of", 0) == 0;
  const bool torch = run.protocol.find("PyTorch") != std::string::npos;
  // The live engine's profile (scripts/vllm_live_profile.py) times whole vLLM steps.
  const bool vllm = run.protocol.rfind("vLLM engine steps", 0) == 0;
  const std::string how = merged  ? " (the faster per shape of several runs: source.protocol)"
                          : torch ? " with PyTorch SDPA / FlexAttention (the faster per shape)"
                                  : "";
  meta.label = run.backend == "cpu"
                   ? (vllm     ? "measured on a running vLLM's steps (its CPU backend), not a GPU: "
                      : merged ? "measured on a CPU, not a GPU: "
                      : torch  ? "measured with PyTorch on a CPU (a dry run), not a GPU: "
                               : "measured on a CPU (reference kernels), not a GPU: ") +
                         run.device + (merged ? how : "")
                   : "measured on GPU " + run.device + how;
  meta.model_name = model.name;
  meta.model = term_model(model);
  meta.device_name = run.device;
  meta.driver = run.driver;
  meta.cuda_runtime = run.cuda_runtime;
  meta.host = run.host;
  meta.date = run.date;
  meta.source = {{"benchmark_json", run.source},
                 {"protocol", run.protocol},
                 {"skipped", run.skipped},
                 {"other_benchmarks", diagnostics}};
  meta.grid = {{"name", run.grid}, {"step_points", samples.size()}};
  auto j = calibration_json(meta, fit);
  if (result) *result = std::move(fit);
  return j;
}

nlohmann::json roofline_calibration(const Scenario& s, const Grid& grid, const FitOptions& options,
                                    FitResult* result) {
  const RooflineCostModel roofline(s.model, s.gpu, 0.0);
  std::vector<FitSample> samples;
  for (const auto& p : grid.points) {
    if (p.kind != BenchKind::kStep) continue;
    const PassShape shape = step_pass_shape(p);
    samples.push_back({point_name(p), p, shape, roofline.pass_seconds(shape)});
  }
  FitResult fit = fit_cost_model(samples, term_model(s.model), options);
  CalibrationMeta meta;
  meta.measured = false;
  meta.backend = "analytic";
  meta.label = "roofline of the " + s.gpu.name + " datasheet (" + s.model.name +
               "), fitted on grid " + grid.name + "; not a measurement";
  meta.model_name = s.model.name;
  meta.model = term_model(s.model);
  meta.device_name = s.gpu.name + " (datasheet)";
  meta.source = {{"roofline",
                  {{"gpu", s.gpu.name},
                   {"memory_bandwidth_bytes_per_s", s.gpu.memory_bandwidth_bytes_per_s},
                   {"bf16_flops", s.gpu.bf16_flops}}},
                 {"scenario", s.source}};
  meta.grid = {{"name", grid.name}, {"step_points", samples.size()}};
  auto j = calibration_json(meta, fit);
  if (result) *result = std::move(fit);
  return j;
}

nlohmann::json grids_json() {
  nlohmann::json grids = nlohmann::json::object();
  for (const auto& name : grid_names()) {
    const Grid g = *find_grid(name);
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : g.points) {
      points.push_back({{"name", point_name(p)},
                        {"kind", std::string(to_string(p.kind))},
                        {"sessions", p.sessions},
                        {"q_len", p.q_len},
                        {"ctx", p.ctx},
                        {"window", p.window},
                        {"sinks", p.sinks}});
    }
    grids[name] = {{"comment", g.comment},
                   {"min_time_s", g.min_time_s},
                   {"repetitions", g.repetitions},
                   {"warmup", g.warmup},
                   {"points", points}};
  }
  return {{"kind", "metronome.grids"},
          {"comment",
           "Written by `metronome calibrate grids --out calibrate/torch/grids.json` from "
           "calibrate/grid.cpp; a test keeps the two equal."},
          {"grids", grids}};
}

}  // namespace metronome::calibrate
