// What the admission controller did over a run, summarised the same way for a simulated run (the
// engine keeps it at each control interval) and a recorded one (sim/output/recorded_run.h, from the
// live driver's admission log): cap moves, the last half's caps and live sessions, N*, and the
// flags that mark an N* that is not a schedulable concurrency (run_result.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "base/time.h"
#include "sim/output/run_result.h"

namespace metronome {

class AdmissionRecord {
 public:
  explicit AdmissionRecord(Time horizon) : horizon_(horizon) {}

  // A control interval ended at `now` and moved the cap from `before` to `after`.
  void interval(Time now, int64_t before, int64_t after);

  struct End {
    int64_t cap;                                       // the cap when the run ended (kNoCap: none)
    bool adaptive;                                     // the cap moved online
    int64_t initial_cap;                               // an adaptive controller's starting cap
    int64_t live;                                      // sessions live at the end
    const std::map<int64_t, int64_t>* last_half_live;  // FrameLedger::last_half_live()
    bool missed_deadlines;                             // FrameLedger::missed_deadlines()
    std::optional<double> first_stall_s;
  };
  // Fills the cap and N* fields of `a` and its flags; `a`'s memory guard and joins are the
  // engine's.
  void summarise(AdmissionSummary& a, const End& end) const;

 private:
  Time horizon_;
  int64_t intervals_ = 0, increases_ = 0, decreases_ = 0, max_cap_ = 0;
  std::optional<double> first_decrease_s_;
  std::map<int64_t, int64_t> last_half_caps_;  // cap -> control instants in the last half
};

}  // namespace metronome
