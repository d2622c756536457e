// A run's time series as Prometheus text exposition (format 0.0.4; not OpenMetrics, which ends
// with # EOF and states timestamps in seconds), under vLLM's metric names, so a dashboard or alert
// rule built for a vLLM server can be pointed at a simulated run. One sample per
// output.sample_period_s, each with its timestamp in integer milliseconds on the run's clock (0 =
// the run's start):
//   vllm:kv_cache_usage_perc     gauge    pool blocks in use / pool blocks (a fraction, as vLLM's)
//   vllm:num_requests_running    gauge    live sessions not waiting for blocks
//   vllm:num_requests_waiting    gauge    live sessions whose frame waits for blocks (stalled)
//   vllm:num_preemptions_total   counter  preemptions since the start
// The exposition format groups every sample of a metric under its TYPE line, so the samples are
// kept (four numbers per sample) and written by close().
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/output_file.h"
#include "base/output_number.h"
#include "sim/output/run_observer.h"

namespace metronome {

class MetricsWriter : public RunObserver {
 public:
  MetricsWriter(const std::string& path, std::string model_name)
      : out_(path, "--metrics"), model_(std::move(model_name)) {}

  void on_sample(const Sample& x) override {
    rows_.push_back({std::llround(x.t_s * 1e3), x.pool_fraction,
                     x.live_sessions - x.stalled_sessions, x.stalled_sessions, preemptions_});
  }
  void on_preempt(Time /*t*/, int64_t /*session*/, int64_t /*freed_blocks*/) override {
    ++preemptions_;
  }

  void close() {
    const std::string label = fmt::format("{{model_name=\"{}\"}}", escaped(model_));
    auto metric = [&](const char* name, const char* type, const char* help, auto value) {
      out_ << fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
      for (const Row& r : rows_) out_ << fmt::format("{}{} {} {}\n", name, label, value(r), r.t_ms);
    };
    metric("vllm:kv_cache_usage_perc", "gauge",
           "KV-cache usage. 1 means 100 percent usage (simulated: pool blocks in use).",
           [](const Row& r) { return csv_number(r.kv_usage); });
    metric("vllm:num_requests_running", "gauge",
           "Number of requests in model execution batches (simulated: live sessions not waiting "
           "for KV blocks).",
           [](const Row& r) { return std::to_string(r.running); });
    metric("vllm:num_requests_waiting", "gauge",
           "Number of requests waiting to be processed (simulated: sessions whose frame waits for "
           "KV blocks).",
           [](const Row& r) { return std::to_string(r.waiting); });
    metric("vllm:num_preemptions_total", "counter",
           "Cumulative number of preemption from the engine.",
           [](const Row& r) { return std::to_string(r.preemptions); });
    out_.close();
  }

 private:
  struct Row {
    int64_t t_ms;
    double kv_usage;
    int64_t running, waiting, preemptions;
  };
  // A label value escapes backslash, double quote and newline.
  static std::string escaped(const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '\\' || c == '"') o += '\\';
      if (c == '\n') {
        o += "\\n";
        continue;
      }
      o += c;
    }
    return o;
  }
  OutputFile out_;
  std::string model_;
  std::vector<Row> rows_;
  int64_t preemptions_ = 0;
};

}  // namespace metronome
