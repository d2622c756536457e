// Everything that decides whether a caller gets in and when its frame clock starts: the admission
// controller's cap and its control loop (with the settled forecast), the memory guard's reserved
// blocks, phase-aware joins, and the record of the cap's moves. The engine asks it at each arrival,
// tells it of each departure and each control instant, and has it write the run's admission
// summary; it never sees the engine's queues or steps.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "base/time.h"
#include "sim/admission/admission_controller.h"
#include "sim/admission/admission_record.h"
#include "sim/admission/phase_spread.h"
#include "sim/config/scenario.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/call_span.h"
#include "sim/engine/frame_ledger.h"
#include "sim/engine/frame_rule.h"
#include "sim/engine/session.h"
#include "sim/output/latency_histogram.h"
#include "sim/output/run_result.h"

namespace metronome {

// Whether the scenario's memory guard refuses callers: "on", or "auto" under a controller that
// limits with a bound on each session's blocks (bounded KV, or calls of a fixed length).
bool memory_guard_on(const Scenario& s);

class AdmissionGate {
 public:
  // `pool_blocks`: the blocks the guard may reserve. `forecast`: the controller's settled forecast
  // applies (the frame scheduler's periodic regime; vLLM's scheduler has none). `s` and `cost`
  // must outlive the gate.
  AdmissionGate(const Scenario& s, const FrameRule& rule, const CostModel& cost,
                int64_t pool_blocks, Time period, Time horizon, bool forecast);

  enum class Verdict { kAdmitted, kCapped, kNoMemory };
  struct Entry {
    Verdict verdict;
    Time start = 0;               // the caller's frame clock starts here (admitted)
    CallSpan call{};              // its call from `start` (admitted)
    int64_t reserve = 0;          // the worst-case blocks the guard reserved for it
    bool context_capped = false;  // the KV policy's context cap ends the call (even if refused)
  };
  // A caller arriving at `now` with a call of `duration_s`, `live` sessions admitted.
  Entry admit(Time now, double duration_s, int64_t live);
  // An admitted session (of `s.count` callers) left: its reserve and its phase come back.
  void depart(const Session& s);
  // Whether the next caller is turned away whatever its call's length: at the cap, or by the
  // memory guard where every call reserves a window's fixed bound.
  bool turns_away_any_caller(int64_t live) const;

  // The control loop: adaptive controllers want a control instant every control_period().
  bool adaptive() const { return adaptive_; }
  Time control_period() const { return control_period_; }
  // Whether the control signal is the true latency (padded frames censored) or the reported one.
  bool true_signal() const { return true_signal_; }
  // One control interval ended at `now` with the interval's frames in `hist`.
  void control(Time now, const LatencyHistogram& hist, int64_t live,
               const std::vector<Session>& sessions);

  int64_t cap() const { return controller_->cap(); }
  double last_signal_s() const { return last_signal_s_; }
  // The run's admission summary into `r.admission`, at the run's end.
  void summarise(RunResult& r, const FrameLedger& ledger, int64_t live) const;

 private:
  bool reserve_fits(int64_t reserve) const { return reserved_ + reserve <= pool_blocks_; }
  int64_t reserve_for(int64_t frames) const;
  double settled_latency(double observed, int64_t live, const std::vector<Session>& sessions) const;

  const Scenario& scenario_;
  const CostModel& cost_;
  FrameRule rule_;
  int64_t pool_blocks_;
  Time period_, horizon_;
  bool forecast_;

  // The cap, and for adaptive controllers a control loop fed by the ledger's per-interval latency
  // histogram (no event per frame).
  std::unique_ptr<AdmissionController> controller_;
  bool adaptive_;
  bool true_signal_;
  Time control_period_;
  double last_signal_s_ = std::numeric_limits<double>::quiet_NaN();  // the controller's last read
  AdmissionRecord record_;  // the cap's moves, summarised at the end
  // Memory guard (AdmissionConfig::memory_guard): the worst-case blocks of every admitted session.
  bool memory_guard_ = false;
  int64_t reserved_ = 0;
  int64_t window_reserve_ = 0;         // bounded KV: the per-session bound
  std::optional<int64_t> memory_cap_;  // bounded KV with the guard: pool / per-session bound
  // Phase-aware joining (AdmissionConfig::join "spread"): the live callers' phases.
  std::optional<PhaseSpread> spread_;
  Time join_delay_sum_ = 0, join_delay_max_ = 0;
};

}  // namespace metronome
