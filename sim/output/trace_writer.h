// A Chrome/Perfetto trace (JSON array format) of one run: engine steps as slices, stalls and
// preemptions as instants, pool occupancy and live sessions as counters. Open it at
// ui.perfetto.dev. Writes are checked; close() ends the JSON and reports a failed write. Counter
// and argument names are timeseries.csv's for the same quantity (pool_used_blocks, live_sessions,
// stalled_sessions); ts and dur are microseconds because the trace format fixes them so, and
// displayTimeUnit makes the viewer show milliseconds.
#pragma once

#include <fmt/format.h>

#include <string>

#include "base/output_file.h"
#include "sim/output/run_observer.h"

namespace metronome {

class TraceWriter : public RunObserver {
 public:
  // Steps beyond max_events are dropped (noted in the trace) so a long run cannot fill the disk.
  explicit TraceWriter(const std::string& path, int64_t max_events = 2'000'000)
      : out_(path, "--trace"), max_events_(max_events) {
    out_ << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    out_ << R"({"ph":"M","pid":1,"name":"process_name","args":{"name":"metronome engine"}})";
  }
  void close() {
    if (dropped_ > 0) {
      out_ << fmt::format(
          ",\n{{\"ph\":\"i\",\"pid\":1,\"tid\":1,\"s\":\"g\",\"ts\":{:.3f},"
          "\"name\":\"trace truncated: {} events dropped\"}}",
          last_us_, dropped_);
    }
    out_ << "\n]}\n";
    out_.close();
  }

  void on_step(Time start, Time end, int64_t batch, int64_t pool_used) override {
    if (!room()) return;
    last_us_ = us(end);
    out_ << fmt::format(
        ",\n{{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"name\":\"step\",\"ts\":{:.3f},"
        "\"dur\":{:.3f},\"args\":{{\"sessions\":{}}}}}",
        us(start), us(end) - us(start), batch);
    out_ << fmt::format(
        ",\n{{\"ph\":\"C\",\"pid\":1,\"name\":\"pool blocks used\",\"ts\":{:.3f},"
        "\"args\":{{\"pool_used_blocks\":{}}}}}",
        us(end), pool_used);
  }
  void on_stall(Time t, int64_t stalled) override {
    if (!room()) return;
    out_ << fmt::format(
        ",\n{{\"ph\":\"i\",\"pid\":1,\"tid\":1,\"s\":\"t\",\"name\":\"stall\","
        "\"ts\":{:.3f},\"args\":{{\"stalled_sessions\":{}}}}}",
        us(t), stalled);
  }
  void on_preempt(Time t, int64_t session, int64_t freed) override {
    if (!room()) return;
    out_ << fmt::format(
        ",\n{{\"ph\":\"i\",\"pid\":1,\"tid\":1,\"s\":\"t\",\"name\":\"preempt\","
        "\"ts\":{:.3f},\"args\":{{\"session\":{},\"freed_blocks\":{}}}}}",
        us(t), session, freed);
  }
  void on_sample(const Sample& x) override {
    if (!room()) return;
    out_ << fmt::format(
        ",\n{{\"ph\":\"C\",\"pid\":1,\"name\":\"sessions\",\"ts\":{:.3f},"
        "\"args\":{{\"live_sessions\":{},\"stalled_sessions\":{}}}}}",
        x.t_s * 1e6, x.live_sessions, x.stalled_sessions);
  }

 private:
  static double us(Time t) { return static_cast<double>(t) * 1e-3; }
  bool room() {
    if (events_ < max_events_) {
      ++events_;
      return true;
    }
    ++dropped_;
    return false;
  }
  OutputFile out_;
  int64_t max_events_;
  int64_t events_ = 0;
  int64_t dropped_ = 0;
  double last_us_ = 0;
};

}  // namespace metronome
