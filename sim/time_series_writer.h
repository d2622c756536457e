// Streams a run's samples to CSV as they happen (memory does not grow with the horizon). Every
// write is checked (sim/output_file.h); close() reports a write that failed late.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "sim/output_file.h"
#include "sim/run_observer.h"

namespace metronome {

class TimeSeriesWriter : public RunObserver {
 public:
  explicit TimeSeriesWriter(const std::string& path) : out_(path, "time series") {
    out_ << "t_s,pool_used_blocks,pool_fraction,live_sessions,stalled_sessions,frames_due,"
            "frames_served,frames_on_time,tokens_produced,tokens_per_frame,silent_fraction,"
            "reported_miss_rate,reported_p50_ms,reported_p99_ms,true_p50_ms,true_p99_ms,admission_"
            "cap,"
            "sessions_rejected,admission_signal_ms\n";
  }

  void on_sample(const Sample& x) override {
    out_ << fmt::format(
        "{:.6g},{},{:.6f},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{},{},{},{},{},{},{}\n", x.t_s,
        x.pool_used_blocks, x.pool_fraction, x.live_sessions, x.stalled_sessions, x.frames_due,
        x.frames_served, x.frames_on_time, x.tokens_produced, x.tokens_per_frame, x.silent_fraction,
        x.reported_miss_rate, ms(x.reported_p50_s, x.frames_due),
        ms(x.reported_p99_s, x.frames_due), ms(x.true_p50_s, x.frames_served),
        ms(x.true_p99_s, x.frames_served),
        x.admission_cap >= 0 ? std::to_string(x.admission_cap) : std::string(), x.sessions_rejected,
        ms(x.admission_signal_s, 1));
  }
  void close() { out_.close(); }

 private:
  // Empty when no frame in the interval defines the percentile (or the controller has not read
  // one, or read a censored one), never NaN or inf.
  static std::string ms(double s, int64_t n) {
    return n > 0 && std::isfinite(s) ? fmt::format("{:.3f}", s * 1e3) : std::string();
  }
  OutputFile out_;
};

}  // namespace metronome
