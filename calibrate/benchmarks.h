// Google Benchmark microbenchmarks over a grid, for one model on one backend.
//
// Protocol (STYLE.md, Measurement): each point builds its step once (outside timing), runs
// `grid.warmup` untimed steps, then Google Benchmark times it with manual time (thread CPU time on
// the CPU, CUDA events on the benchmark's stream on the GPU) for `grid.repetitions` repetitions of
// at least `grid.min_time_s`; the fit reads the median aggregate. CPU times are the benchmark
// thread's CPU time (a dedicated core's view on a shared machine), with repetitions randomly
// interleaved. A point that cannot run (out of memory, bad shape) is skipped with the error, so a
// sweep never aborts. Outputs are checked finite after timing. GPU inputs rotate over KV pools
// larger than L2 inside LayerStep; weights are far larger than L2 for every real model.
//
// Every benchmark carries its shape as counters (sessions, q_len, ctx, window, sinks, layers) and
// the run's context names the model, backend, device, driver and grid, so the benchmark JSON alone
// is enough to fit.
#pragma once

#include <string>
#include <vector>

#include "calibrate/grid.h"

namespace metronome::calibrate {

struct BenchRequest {
  std::string model;                        // scenario model name (bench_model.h)
  std::string backend;                      // "cpu" or "gpu"
  std::string grid;                         // grid name (grid.h)
  std::string out;                          // benchmark JSON path
  std::vector<std::string> benchmark_args;  // extra --benchmark_* flags (e.g. a filter)
};

// Registers and runs the grid. Returns the process exit status (0 ok; 2 bad request or no such
// device). Throws std::invalid_argument for an unknown model, grid or backend.
int run_benchmarks(const BenchRequest& r);

// "Intel(R) Xeon(R) ..." from /proc/cpuinfo, or "unknown CPU".
std::string cpu_model_name();

}  // namespace metronome::calibrate
