// Reads Google Benchmark JSON written by `metronome calibrate run` (or the device's
// metronome_calibrate_bench): one sample per benchmark, the median over repetitions, with the grid
// point recovered from the benchmark's counters and the run's metronome_* context.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/grid.h"

namespace metronome::calibrate {

struct BenchSample {
  std::string name;  // run_name
  GridPoint point;
  int32_t layers = 0;
  double seconds = 0;  // median of repetitions (the only timing when repetitions = 1)
};

struct BenchRun {
  std::string source;  // the file
  std::string model, backend, device, driver, cuda_runtime, grid, protocol;
  std::string date, host;
  std::vector<BenchSample> samples;
  std::vector<std::string> skipped;  // "name: error message" of benchmarks skipped with an error
};

// Throws ConfigError (file, field, expected) on anything malformed.
BenchRun parse_bench_json(const nlohmann::json& j, const std::string& source);
BenchRun read_bench_json(const std::string& path);

// Several runs of one model on one kind of backend (our CUDA kernels and PyTorch's attention,
// say) as one: per shape (kind, sessions, q_len, ctx, window, sinks) the faster sample is kept, and
// the protocol says which run gave how many. ConfigError for another model or a CPU and a GPU run
// mixed.
BenchRun faster_per_shape(const std::vector<BenchRun>& runs);

}  // namespace metronome::calibrate
