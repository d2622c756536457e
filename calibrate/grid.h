// The declared grid of batch compositions a calibration times: which shapes of a step, for which
// benchmark kind, how long and how often. Plain C++ (no JSON, no CUDA): the standalone device build
// uses it too.
//
// A point is one engine step: `sessions` sessions each bringing `q_len` new tokens (1: decode;
// tens: a frame's prefill) on top of `ctx` cached tokens, under a KV window (unbounded: attention
// cost grows with ctx; windowed: capped at S + W). The fit turns a point into the simulator's
// PassShape with step_shape.h, so a grid only needs to vary what the cost terms depend on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace metronome::calibrate {

// step: all layers of a decoder step (what the fit uses); attention: append + paged attention of
// one layer; gemm: the dense linears of one layer for the step's tokens.
enum class BenchKind { kStep, kAttention, kGemm };
std::string_view to_string(BenchKind k);
std::optional<BenchKind> bench_kind_from(std::string_view s);

struct GridPoint {
  BenchKind kind = BenchKind::kStep;
  int32_t sessions = 1;
  int32_t q_len = 1;    // new tokens per session this step
  int32_t ctx = 0;      // tokens cached per session before the step
  int64_t window = -1;  // W; < 0: unbounded
  int64_t sinks = 0;    // S
};

struct Grid {
  std::string name;
  std::string comment;
  double min_time_s = 0.05;  // per repetition (Google Benchmark MinTime)
  int repetitions = 5;       // the fit reads the median over these
  int warmup = 2;            // untimed runs before the first timed one
  std::vector<GridPoint> points;
};

// Named grids: "ci" (tiny CPU, seconds), "cpu" (CPU calibration of the tiny model, about a minute),
// "gpu" (one model on the device, sized to stay under 4 minutes including the build), "gpu-quick".
std::optional<Grid> find_grid(std::string_view name);
std::vector<std::string> grid_names();

// "step/s:4/q:1/ctx:256/w:-1/sinks:0": stable, unique within a grid, parsed back only for messages
// (the fit reads the benchmark's counters).
std::string point_name(const GridPoint& p);

}  // namespace metronome::calibrate
