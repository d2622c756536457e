#include "calibrate/benchmarks.h"

#include <benchmark/benchmark.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "calibrate/bench_model.h"
#include "calibrate/cpu_step.h"
#if defined(METRONOME_HAVE_CUDA)
#include "calibrate/gpu_benchmarks.h"
#endif

namespace metronome::calibrate {
namespace {

void set_counters(benchmark::State& state, const GridPoint& p, int32_t layers) {
  state.counters["sessions"] = p.sessions;
  state.counters["q_len"] = p.q_len;
  state.counters["ctx"] = p.ctx;
  state.counters["window"] = static_cast<double>(p.window);
  state.counters["sinks"] = static_cast<double>(p.sinks);
  state.counters["layers"] = layers;
}

// The reference kernels run on one thread. On a machine shared with other work (CI, a developer's
// VM) wall time counts the spells the scheduler gives the core to someone else; the thread's CPU
// time does not, so it measures the step as a dedicated core would run it.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void cpu_benchmark(benchmark::State& state, kernels::ModelShape m, GridPoint p, int warmup) {
  std::unique_ptr<CpuStep> step;
  try {
    step = std::make_unique<CpuStep>(m, p);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  const auto once = [&] {
    switch (p.kind) {
      case BenchKind::kStep:
        step->run();
        break;
      case BenchKind::kAttention:
        step->run_attention();
        break;
      case BenchKind::kGemm:
        step->run_gemms();
        break;
    }
  };
  for (int i = 0; i < warmup; ++i) once();
  for (auto _ : state) {
    const double t0 = thread_cpu_seconds();
    once();
    state.SetIterationTime(thread_cpu_seconds() - t0);
  }
  if (!step->outputs_finite()) {
    state.SkipWithError("non-finite output after timing");
    return;
  }
  set_counters(state, p, p.kind == BenchKind::kStep ? m.layers : 1);
}

// Google Benchmark writes the coefficient of variation of an all-zero counter (sinks = 0) as -nan,
// which is not JSON; null keeps the file readable by any JSON reader (those aggregates are unused).
void sanitize_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  in.close();
  static const std::regex kNonFinite(R"((:\s*)-?(nan|inf)\b)", std::regex::icase);
  const std::string text = ss.str(), clean = std::regex_replace(text, kNonFinite, "$1null");
  if (clean != text) std::ofstream(path) << clean;
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

int run_benchmarks(const BenchRequest& r) {
  const auto model = bench_model(r.model);
  if (!model) {
    std::string known;
    for (const auto& n : bench_model_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("--model \"" + r.model + "\": unknown model (known: " + known +
                                ")");
  }
  const auto grid = find_grid(r.grid);
  if (!grid) {
    std::string known;
    for (const auto& n : grid_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("--grid \"" + r.grid + "\": unknown grid (known: " + known + ")");
  }
  if (r.backend != "cpu" && r.backend != "gpu") {
    throw std::invalid_argument("--backend \"" + r.backend + "\": expected cpu or gpu");
  }
  benchmark::ClearRegisteredBenchmarks();
  std::string device, driver = "", runtime = "";
  const std::string prefix = r.model + "/" + r.backend + "/";
  if (r.backend == "cpu") {
    device = cpu_model_name();
    for (const auto& p : grid->points) {
      benchmark::RegisterBenchmark((prefix + point_name(p)).c_str(), cpu_benchmark, *model, p,
                                   grid->warmup)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(grid->min_time_s)
          ->Repetitions(grid->repetitions);
    }
  } else {
#if defined(METRONOME_HAVE_CUDA)
    GpuInfo info;
    std::string why;
    if (!register_gpu_benchmarks(*model, *grid, info, why)) {
      std::cerr << "calibrate: no GPU: " << why << "\n";
      return 2;
    }
    device = info.name;
    driver = info.driver;
    runtime = info.runtime;
#elif defined(METRONOME_CPU_ONLY_EXECUTABLE)
    std::cerr
        << "calibrate: `metronome calibrate run` times the CPU backend only (it does not load "
           "the CUDA libraries); time the GPU with metronome_calibrate_bench --backend gpu "
           "(built beside it where nvcc exists; scripts/gpu_calibrate.sh runs it on a "
           "device), then fit its JSON with `metronome calibrate fit`\n";
    return 2;
#else
    std::cerr << "calibrate: this build has no CUDA kernels (configured without nvcc); use "
                 "--backend cpu or build where nvcc exists\n";
    return 2;
#endif
  }
  benchmark::AddCustomContext("metronome_model", r.model);
  benchmark::AddCustomContext("metronome_backend", r.backend);
  benchmark::AddCustomContext("metronome_device", device);
  benchmark::AddCustomContext("metronome_driver", driver);
  benchmark::AddCustomContext("metronome_cuda_runtime", runtime);
  benchmark::AddCustomContext("metronome_grid", grid->name);
  benchmark::AddCustomContext(
      "metronome_protocol",
      "manual time (" +
          std::string(r.backend == "gpu" ? "CUDA events"
                                         : "thread CPU time, repetitions randomly interleaved") +
          "), " + std::to_string(grid->warmup) + " warm-up, " + std::to_string(grid->repetitions) +
          " repetitions, median");

  // Google Benchmark opens the file but does not create its folder.
  if (const auto dir = std::filesystem::path(r.out).parent_path(); !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  std::vector<std::string> args = {"metronome-calibrate", "--benchmark_out=" + r.out,
                                   "--benchmark_out_format=json"};
  // On a CPU shared with other work, load drifts over seconds: interleaving the repetitions of all
  // points in random order turns that drift into scatter the median removes, instead of a bias on
  // whichever points ran during a busy spell. (Not on the GPU, where each repetition would rebuild
  // a LayerStep of gigabytes and the device has the machine to itself.)
  if (r.backend == "cpu") args.push_back("--benchmark_enable_random_interleaving=true");
  args.insert(args.end(), r.benchmark_args.begin(), r.benchmark_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
  benchmark::Initialize(&argc, argv.data());
  if (benchmark::ReportUnrecognizedArguments(argc, argv.data())) return 2;
  const size_t ran = benchmark::RunSpecifiedBenchmarks();
  benchmark::ClearRegisteredBenchmarks();
  sanitize_json_file(r.out);
  if (ran == 0) {
    std::cerr << "calibrate: no benchmark ran (check --benchmark_filter)\n";
    return 2;
  }
  return 0;
}

}  // namespace metronome::calibrate
