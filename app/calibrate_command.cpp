// `metronome calibrate run|fit|roofline|report`: time a grid, fit it, write an analytic file, and
// compare a calibration with the roofline. Compiled into the metronome executable (see
// app/CMakeLists.txt), registered by one line in app/main.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "app/commands.h"
#include "app/option_checks.h"
#include "app/scenario_options.h"
#include "base/config_error.h"
#include "base/json_file.h"
#include "base/output_number.h"
#include "calibrate/benchmarks.h"
#include "calibrate/calibration_writer.h"
#include "calibrate/grid.h"
#include "calibrate/pipeline.h"
#include "calibrate/report.h"
#include "calibrate/roofline_transfer_fit.h"
#include "calibrate/vidur_import.h"
#include "calibrate/vidur_profile.h"
#include "sim/cost/calibrated_cost_model.h"

namespace metronome::cli {
namespace {

using namespace metronome::calibrate;

std::vector<CostTerm> parse_terms(const std::string& list) {
  std::vector<CostTerm> terms;
  std::stringstream ss(list);
  for (std::string name; std::getline(ss, name, ',');) {
    CostTerm t{};
    if (!term_from_name(name, t)) {
      throw ConfigError("--terms: unknown term \"" + name +
                        "\" (expected fixed, sessions, query_tokens, kv_read_tokens, qk_pairs, "
                        "expert_layers)");
    }
    if (std::find(terms.begin(), terms.end(), t) != terms.end()) {
      throw ConfigError("--terms: \"" + name + "\" is given twice (expected each term once)");
    }
    terms.push_back(t);
  }
  return terms;
}

Grid grid_or_throw(const std::string& name) {
  auto g = find_grid(name);
  if (!g) {
    std::string known;
    for (const auto& n : grid_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("--grid \"" + name + "\": unknown grid (known: " + known + ")");
  }
  return *g;
}

void print_fit(const FitResult& f, std::ostream& o) {
  for (const auto& t : f.terms) {
    o << fmt::format("  {:<15} {}\n", term_name(t.term),
                     t.dropped ? std::string("dropped")
                               : fmt::format("{:.4g} {}", t.coefficient, term_unit(t.term)));
  }
  o << fmt::format("  R2 {:.4f} on {} points; held-out ({} points): median {:.1f}%, max {:.1f}%\n",
                   f.r2, f.train_points, f.heldout_points, 100 * f.heldout_median_ape,
                   100 * f.heldout_max_ape);
  for (const auto& w : f.warnings) o << "calibrate: warning: " << w << "\n";
}

struct FitFlags {
  std::string terms;
  bool allow_negative = false;
  int heldout_every = 4;
  void add_to(CLI::App& c) {
    c.add_option("--terms", terms,
                 "Comma-separated terms to fit (default: fixed,sessions,query_tokens,"
                 "kv_read_tokens,qk_pairs and expert_layers for MoE)");
    c.add_flag("--allow-negative", allow_negative,
               "Keep negative coefficients (default: drop such a term and refit, with a warning)");
    c.add_option("--heldout-every", heldout_every, "Hold out every Nth point (sorted by shape)")
        ->check(kDecimalInteger)
        ->check(CLI::Range(2, 1000));
  }
  FitOptions options() const {
    FitOptions o;
    if (!terms.empty()) o.terms = parse_terms(terms);
    o.allow_negative = allow_negative;
    o.heldout_every = heldout_every;
    return o;
  }
};

}  // namespace

std::pair<CLI::App*, Run> add_calibrate(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Turn kernel timings into the cost model the simulator runs on: time a grid of step shapes "
      "(run), fit per-pass cost terms (fit), write an analytic file from datasheets (roofline), "
      "compare a calibration with the roofline (report).");
  cmd->require_subcommand(1);

  struct RunOpts {
    std::string model, backend = "cpu", grid, out;
    std::vector<std::string> bench_args;
  };
  auto ro = std::make_shared<RunOpts>();
  auto* run = cmd->add_subcommand("run",
                                  "Time the grid on this machine's GPU or CPU; writes Google "
                                  "Benchmark JSON (a CPU run is labelled CPU everywhere)");
  run->add_option("--model", ro->model, "Model name (scenarios/models)")->required();
  run->add_option("--backend", ro->backend, "gpu (CUDA kernels) or cpu (reference kernels)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  run->add_option("--grid", ro->grid,
                  "Grid: ci, cpu, gpu, gpu-quick (default: cpu or gpu, by backend)");
  run->add_option("--out", ro->out, "Benchmark JSON to write")->required();
  run->add_option("--benchmark-arg", ro->bench_args,
                  "Passed to Google Benchmark, e.g. --benchmark-arg=--benchmark_filter=step");

  struct FitOpts {
    std::vector<std::string> bench;
    std::string out;
    FitFlags flags;
  };
  auto fo = std::make_shared<FitOpts>();
  auto* fit = cmd->add_subcommand("fit", "Fit benchmark JSON to a calibration file");
  fit->add_option("--bench", fo->bench,
                  "Benchmark JSON from `calibrate run` (or calibrate/torch/torch_bench.py); "
                  "several: the faster per shape is fitted, and the file says which gave what")
      ->required();
  fit->add_option("--out", fo->out, "Calibration file to write")->required();
  fo->flags.add_to(*fit);

  struct RoofOpts {
    ScenarioOptions scenario;
    std::string grid = "gpu", out;
    FitFlags flags;
  };
  auto oo = std::make_shared<RoofOpts>();
  auto* roof = cmd->add_subcommand(
      "roofline",
      "Write an analytic calibration file (measured: false) from the scenario's model "
      "and GPU datasheet, the roofline evaluated on a grid and fitted with the same terms");
  oo->scenario.add_to(*roof);
  roof->add_option("--grid", oo->grid, "Grid whose step points the roofline is evaluated on");
  roof->add_option("--out", oo->out, "Calibration file to write")->required();
  oo->flags.add_to(*roof);

  struct ReportOpts {
    ScenarioOptions scenario;
    std::string calibration, grid, out;
  };
  auto po = std::make_shared<ReportOpts>();
  auto* rep = cmd->add_subcommand(
      "report",
      "Compare a calibration with the roofline of the scenario's model and GPU on the same "
      "grid (the calibration's own points unless --grid); text, or JSON with --json");
  rep->add_option("--calibration", po->calibration, "Calibration file")->required();
  po->scenario.add_to(*rep);
  rep->add_option("--grid", po->grid, "Compare on this grid instead of the file's points");
  rep->add_option("--out", po->out, "Also write the JSON report to this file");

  struct GridOpts {
    std::string out;
  };
  auto go = std::make_shared<GridOpts>();
  auto* gridc = cmd->add_subcommand(
      "grids",
      "Write every named grid as JSON (calibrate/torch/grids.json is this output: the PyTorch "
      "device path reads it, so both paths time the same shapes)");
  gridc->add_option("--out", go->out, "File to write (default: stdout)");

  struct VidurOpts {
    std::string dir, model, gpu, as, out, correction_out, transfer_out, date;
    int tp = 1;
    int64_t layers = 0;
    int heldout_every = 4;
    std::vector<std::string> transfer_models;
  };
  auto vo = std::make_shared<VidurOpts>();
  auto* vid = cmd->add_subcommand(
      "import-vidur",
      "Import a measured Vidur profile (data/profiling/compute/<gpu>/<model>/mlp.csv and "
      "attention.csv if present, or a directory holding them) as a calibration file, and fit the "
      "GPU's roofline correction to it; prints the roofline's error before and after");
  vid->add_option("dir", vo->dir, "Profile directory (see above)")->required();
  vid->add_option("--model", vo->model,
                  "Vidur's model name, e.g. meta-llama/Llama-2-7b-hf (its directory)")
      ->required();
  vid->add_option("--gpu", vo->gpu,
                  "GPU: the profile directory's name and the scenario GPU file for the datasheet "
                  "(default: from the layout)");
  vid->add_option("--as", vo->as,
                  "Scenario model of the same layer shape (default: found by shape)");
  vid->add_option("--layers", vo->layers,
                  "Layer count of the profiled model when no scenario model has its shape")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  vid->add_option("--tp", vo->tp, "Tensor-parallel rows to read (default 1)")
      ->check(CLI::Range(1, 1024));
  vid->add_option("--date", vo->date, "Date recorded in the file (default: not recorded)");
  vid->add_option("--heldout-every", vo->heldout_every, "Hold out every Nth row by num_tokens")
      ->check(CLI::Range(2, 1000));
  vid->add_option("--out", vo->out, "Calibration file to write")->required();
  vid->add_option("--correction-out", vo->correction_out,
                  "Also write the GPU file's roofline_correction block (JSON) here");
  vid->add_option("--transfer-model", vo->transfer_models,
                  "Another Vidur model of the same GPU in DIR (repeatable; two or more): fit the "
                  "shape-aware correction on all the profiles, report it held out one profile at "
                  "a time, and how far to trust it for each shipped model's layer");
  vid->add_option("--transfer-out", vo->transfer_out,
                  "With --transfer-model: also write the GPU file's shape_aware_correction block "
                  "(JSON, with each profile's held-out error) here");

  Run body = [=]() -> int {
    if (gridc->parsed()) {
      if (!go->out.empty()) check_json_target(go->out, "--out");
      const auto j = grids_json();
      if (go->out.empty()) {
        std::cout << j.dump(1) << "\n";
      } else {
        write_json_file(go->out, j);
      }
      return 0;
    }
    if (vid->parsed()) {
      // Both outputs are checked before either is written: never a calibration without the
      // correction asked for beside it.
      if (vo->transfer_models.size() == 1) {
        throw ConfigError("--transfer-model " + vo->transfer_models[0] +
                          ": one other profile; expected two or more (each held-out fold fits "
                          "on two shapes)");
      }
      if (!vo->transfer_out.empty() && vo->transfer_models.empty()) {
        throw ConfigError("--transfer-out " + vo->transfer_out +
                          ": nothing to write without --transfer-model (two or more)");
      }
      check_json_target(vo->out, "--out");
      std::vector<std::pair<std::string, std::string>> outs = {{"--out", vo->out}};
      for (const auto& [flag, path] : {std::pair{"--correction-out", vo->correction_out},
                                       std::pair{"--transfer-out", vo->transfer_out}}) {
        if (path.empty()) continue;
        check_json_target(path, flag);
        for (const auto& [other_flag, other] : outs) {
          std::error_code ec;
          if (path == other || std::filesystem::equivalent(path, other, ec)) {
            throw ConfigError(std::string(flag) + " " + path + ": the same file as " + other_flag +
                              "; expected another path");
          }
        }
        outs.emplace_back(flag, path);
      }
      const VidurProfile p = read_vidur_profile(vo->dir, vo->model, vo->gpu, vo->tp);
      VidurImportOptions io;
      io.as_model = vo->as;
      io.layers = vo->layers;
      io.gpu = vo->gpu;
      io.date = vo->date;
      io.heldout_every = vo->heldout_every;
      const VidurImport r = import_vidur(p, io);
      std::vector<VidurProfile> profiles{p};
      for (const auto& m : vo->transfer_models)
        profiles.push_back(read_vidur_profile(vo->dir, m, vo->gpu, vo->tp));
      // Every fit before any file: a refused transfer fit leaves no calibration behind.
      const std::string transfer =
          profiles.size() > 1 ? transfer_report(profiles, r.gpu) : std::string();
      const nlohmann::json transfer_block =
          vo->transfer_out.empty() ? nlohmann::json() : transfer_json(profiles, r.gpu);
      write_json_file(vo->out, r.calibration);
      if (!vo->correction_out.empty()) {
        write_json_file(vo->correction_out, r.calibration["source"]["roofline_correction"],
                        "--correction-out");
      }
      if (!vo->transfer_out.empty())
        write_json_file(vo->transfer_out, transfer_block, "--transfer-out");
      std::cout << fmt::format("calibrate: {} ({} rows, {} layers as model \"{}\") -> {}\n",
                               r.calibration["label"].get<std::string>(), p.mlp.size(), r.layers,
                               r.model_name, vo->out);
      FitResult shown = r.token_fit;
      print_fit(shown, std::cout);
      if (r.attention_fit) {
        std::cout << "  attention (" << p.attention_path << "):\n";
        print_fit(*r.attention_fit, std::cout);
      } else {
        std::cout << "  attention: no attention.csv; kv_read_tokens and qk_pairs analytic "
                     "(corrected roofline)\n";
      }
      std::cout << correction_text(r.correction);
      if (!transfer.empty()) {
        std::cout << fmt::format("roofline transfer across {} profiles of {}:\n", profiles.size(),
                                 r.gpu.name)
                  << transfer;
      }
      return 0;
    }
    if (run->parsed()) {
      BenchRequest r{ro->model, ro->backend,
                     ro->grid.empty() ? (ro->backend == "gpu" ? "gpu" : "cpu") : ro->grid, ro->out,
                     ro->bench_args};
      try {
        return run_benchmarks(r);
      } catch (const std::invalid_argument& e) {
        throw ConfigError(e.what());
      }
    }
    if (fit->parsed()) {
      std::vector<BenchRun> runs;
      for (const auto& path : fo->bench) runs.push_back(read_bench_json(path));
      const BenchRun b = faster_per_shape(runs);
      FitResult f;
      const auto j = fit_benchmarks(b, fo->flags.options(), &f);
      write_json_file(fo->out, j);
      std::cout << "calibrate: " << j["label"].get<std::string>() << " -> " << fo->out << "\n";
      print_fit(f, std::cout);
      return 0;
    }
    if (roof->parsed()) {
      const Scenario s = oo->scenario.load();
      FitResult f;
      const auto j = roofline_calibration(s, grid_or_throw(oo->grid), oo->flags.options(), &f);
      write_json_file(oo->out, j);
      std::cout << "calibrate: analytic " << j["label"].get<std::string>() << " -> " << oo->out
                << "\n";
      print_fit(f, std::cout);
      return 0;
    }
    // report
    const Calibration c = read_calibration(po->calibration);
    const nlohmann::json file = read_json_file(po->calibration, "calibration file");
    Scenario s = po->scenario.scenario.empty() && po->scenario.sets.empty()
                     ? load_scenario("", {"model=" + c.model_name})
                     : po->scenario.load();
    if (s.model.name != c.model_name) {
      throw ConfigError(po->calibration + ": model \"" + c.model_name +
                        "\" differs from the scenario's \"" + s.model.name + "\"");
    }
    std::optional<Grid> grid;
    if (!po->grid.empty()) grid = grid_or_throw(po->grid);
    const auto r = compare_with_roofline(file, c, s, grid);
    if (!po->out.empty()) write_json_file(po->out, report_json(r));
    if (po->scenario.json) {
      std::cout << output_text(report_json(r)) << "\n";
    } else {
      std::cout << report_text(r);
    }
    return 0;
  };
  return {cmd, body};
}

}  // namespace metronome::cli
