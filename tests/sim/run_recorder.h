// For tests of exact optimisations (cohorts, the usual ring): a run's outputs as
// text, every summary number and every time-series sample, step, stall and preemption, so that two
// runs can be compared whole and the first difference shown.
#pragma once

#include <functional>
#include <sstream>
#include <string>

#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/engine/engine.h"

namespace metronome::testing {

class RunRecorder : public RunObserver {
 public:
  void on_sample(const Sample& x) override {
    out << "S " << x.t_s << ' ' << x.pool_used_blocks << ' ' << x.live_sessions << ' '
        << x.stalled_sessions << ' ' << x.frames_due << ' ' << x.frames_served << ' '
        << x.frames_on_time << ' ' << x.tokens_produced << ' ' << x.reported_p99_s << ' '
        << x.true_p50_s << ' ' << x.silent_fraction << ' ' << x.sessions_rejected << ' '
        << x.admission_cap << ' ' << x.admission_signal_s << '\n';
  }
  void on_step(Time a, Time b, int64_t n, int64_t used) override {
    out << "T " << a << ' ' << b << ' ' << n << ' ' << used << '\n';
  }
  void on_stall(Time t, int64_t n) override { out << "B " << t << ' ' << n << '\n'; }
  void on_preempt(Time t, int64_t id, int64_t freed) override {
    out << "P " << t << ' ' << id << ' ' << freed << '\n';
  }
  std::ostringstream out;
};

struct RecordedRun {
  std::string summary;  // run_json
  std::string trace;    // the recorder's lines
};

// One run of s, with `configure` applied to the engine before it runs (set_cohorts).
inline RecordedRun record_run(const Scenario& s, const std::function<void(Engine&)>& configure) {
  const auto cost = make_cost_model(s);
  RunRecorder rec;
  Engine e(s, *cost, &rec);
  configure(e);
  const RunResult r = e.run();
  return {run_json(s, predict_first_order(s), r, cost->label()).dump(), rec.out.str()};
}

// The first line where two traces differ, with a few lines after it, for a failure message.
inline std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string lx, ly, shown;
  for (int k = 0; std::getline(x, lx) && std::getline(y, ly); ++k) {
    if (lx == ly) continue;
    shown = "line " + std::to_string(k) + ":\n  " + lx + "\n  " + ly + "\n";
    for (int m = 0; m < 4 && std::getline(x, lx) && std::getline(y, ly); ++m) {
      shown += "  " + lx + "\n  " + ly + "\n";
    }
    return shown;
  }
  return "one trace is a prefix of the other";
}

}  // namespace metronome::testing
