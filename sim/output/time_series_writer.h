// Streams a run's samples to CSV as they happen (memory does not grow with the horizon). Every
// write is checked (base/output_file.h); close() reports a write that failed late. Column names are
// the ones summary.json uses for the same quantity over the whole run (docs/outputs.md); numbers
// follow the one rounding rule (base/output_number.h).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "base/output_file.h"
#include "base/output_number.h"
#include "sim/output/run_observer.h"

namespace metronome {

class TimeSeriesWriter : public RunObserver {
 public:
  explicit TimeSeriesWriter(const std::string& path) : out_(path, "time series") {
    out_ << "t_s,pool_used_blocks,pool_fraction,live_sessions,stalled_sessions,frames_due,"
            "frames_served,frames_on_time,goodput_frames_per_s,tokens_produced,tokens_per_frame,"
            "silent_frame_fraction,deadline_miss_rate_reported,reported_p50_ms,reported_p99_ms,"
            "true_p50_ms,true_p99_ms,admission_cap,sessions_rejected,admission_signal_ms\n";
  }

  void on_sample(const Sample& x) override {
    // Samples close intervals that start where the previous one ended (the first at 0).
    const double interval = x.t_s - last_t_s_;
    last_t_s_ = x.t_s;
    out_ << fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_number(x.t_s),
        x.pool_used_blocks, csv_number(x.pool_fraction), x.live_sessions, x.stalled_sessions,
        x.frames_due, x.frames_served, x.frames_on_time,
        csv_number(interval > 0 ? static_cast<double>(x.frames_on_time) / interval : 0.0),
        x.tokens_produced, csv_number(x.tokens_per_frame), csv_number(x.silent_fraction),
        csv_number(x.reported_miss_rate), ms(x.reported_p50_s, x.frames_due),
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
    return n > 0 && std::isfinite(s) ? csv_number(s * 1e3) : std::string();
  }
  OutputFile out_;
  double last_t_s_ = 0;
};

}  // namespace metronome
