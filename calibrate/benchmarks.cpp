#include "calibrate/benchmarks.h"

#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
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
std::string sanitize_json(const std::string& text) {
  static const std::regex kNonFinite(R"((:\s*)-?(nan|inf)\b)", std::regex::icase);
  return std::regex_replace(text, kNonFinite, "$1null");
}

// The console: the same rows, without the counters whose coefficient of variation is 0/0 (a
// counter that is 0 on every repetition), which Google Benchmark prints as "sinks=-nan%".
//
// Debian builds Google Benchmark without NDEBUG, so the library warns that its timings "may be
// affected". Ours are not: every benchmark here uses manual time, our own timer read just around
// the kernel (thread CPU time, or CUDA events), and the library's code runs only outside it. The
// context says that instead of a warning that does not apply.
class FiniteConsoleReporter : public benchmark::ConsoleReporter {
 public:
  using benchmark::ConsoleReporter::ConsoleReporter;
  bool ReportContext(const Context& context) override {
    std::ostream* err = &GetErrorStream();
    std::ostringstream basic;
    SetErrorStream(&basic);
    const bool ok = benchmark::ConsoleReporter::ReportContext(context);
    SetErrorStream(err);
    std::istringstream lines(basic.str());
    for (std::string line; std::getline(lines, line);) {
      if (line.find("Library was built as DEBUG") != std::string::npos) {
        line =
            "library: Google Benchmark built without NDEBUG (Debian's build); it does not enter "
            "the times, which are our own timer around each kernel (manual time)";
      }
      *err << line << "\n";
    }
    return ok;
  }
  void ReportRuns(const std::vector<Run>& reports) override {
    std::vector<Run> clean = reports;
    for (Run& r : clean) {
      for (auto it = r.counters.begin(); it != r.counters.end();) {
        it = std::isfinite(it->second.value) ? std::next(it) : r.counters.erase(it);
      }
    }
    benchmark::ConsoleReporter::ReportRuns(clean);
  }
};

// Our own flags and the file's format are not the caller's to change: --benchmark_out and
// --benchmark_out_format would write elsewhere or write CSV into the JSON --out, --help and
// --benchmark_list_tests would exit or time nothing. Everything else is a --benchmark_* flag.
void check_benchmark_args(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    const std::string name = a.substr(0, a.find('='));
    if (name.rfind("--benchmark_", 0) != 0) {
      throw std::invalid_argument("--benchmark-arg " + a +
                                  ": expected a Google Benchmark --benchmark_* flag (e.g. "
                                  "--benchmark_filter=step)");
    }
    if (name == "--benchmark_out" || name == "--benchmark_out_format" ||
        name == "--benchmark_list_tests") {
      throw std::invalid_argument("--benchmark-arg " + a + ": " + name +
                                  " is set by calibrate run (the JSON goes to --out); expected "
                                  "another --benchmark_* flag");
    }
    // Each benchmark states its own repetitions and time (the grid's), which these would not move.
    if (name == "--benchmark_repetitions" || name == "--benchmark_min_time") {
      throw std::invalid_argument("--benchmark-arg " + a + ": " + name +
                                  " is set by the grid for each benchmark (its min_time_s and "
                                  "repetitions); expected another --benchmark_* flag");
    }
  }
}

// --out is written whole, renamed into place once the run succeeded: a device (/dev/full, which
// also reads back zeros forever) or a folder is refused before timing.
void check_out_target(const std::string& out) {
  struct stat st {};
  if (::stat(out.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw std::invalid_argument(
        "--out " + out + ": is " +
        (S_ISDIR(st.st_mode) ? std::string("a directory") : std::string("not a regular file")) +
        ", expected a regular file path for the benchmark JSON");
  }
}

bool read_whole(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return !in.bad();
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

  check_benchmark_args(r.benchmark_args);
  check_out_target(r.out);
  // Google Benchmark opens the file but does not create its folder.
  if (const auto dir = std::filesystem::path(r.out).parent_path(); !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  // The benchmark writes a temporary file of its own beside --out (a unique name: two runs never
  // share it); --out is replaced only by a complete run, so a failed or filtered-out run leaves an
  // earlier good file as it was.
  std::string tmp = r.out + ".XXXXXX";
  const int tmp_fd = ::mkstemp(tmp.data());
  if (tmp_fd < 0) {
    std::cerr << "calibrate: error: --out " << r.out << ": cannot create a file beside it ("
              << std::strerror(errno) << ")\n";
    return 2;
  }
  // mkstemp makes the file private (0600); --out gets the mode any other output file gets.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(tmp_fd, 0666 & ~mask);
  ::close(tmp_fd);
  struct Remove {
    std::string path;
    ~Remove() { ::unlink(path.c_str()); }
  } remove_tmp{tmp};
  std::vector<std::string> args = {"metronome-calibrate", "--benchmark_out=" + tmp,
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
  // The console table (the default --benchmark_format) without non-finite counters; another
  // format asked for is Google Benchmark's own.
  bool console_format = true;
  for (const auto& a : r.benchmark_args) {
    if (a.rfind("--benchmark_format=", 0) == 0) console_format = a == "--benchmark_format=console";
  }
  FiniteConsoleReporter console(::isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color
                                                        : benchmark::ConsoleReporter::OO_None);
  const size_t ran = console_format ? benchmark::RunSpecifiedBenchmarks(&console)
                                    : benchmark::RunSpecifiedBenchmarks();
  benchmark::ClearRegisteredBenchmarks();
  if (ran == 0) {
    std::cerr << "calibrate: no benchmark ran (check --benchmark_filter); " << r.out
              << " not written\n";
    return 2;
  }
  std::string text;
  if (!read_whole(tmp, text) || text.empty() || text.front() != '{' ||
      text.find_last_not_of(" \n") == std::string::npos ||
      text[text.find_last_not_of(" \n")] != '}') {
    std::cerr << "calibrate: error: cannot write " << r.out << ": the benchmark JSON (" << tmp
              << ") is missing or incomplete (a full disk?)\n";
    return 1;
  }
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    o << sanitize_json(text);
    o.close();
    if (!o) {
      std::cerr << "calibrate: error: cannot write " << tmp << ": " << std::strerror(errno) << "\n";
      return 1;
    }
  }
  check_out_target(r.out);
  if (std::rename(tmp.c_str(), r.out.c_str()) != 0) {
    std::cerr << "calibrate: error: cannot rename " << tmp << " to " << r.out << ": "
              << std::strerror(errno) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace metronome::calibrate
