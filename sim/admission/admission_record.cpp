#include "sim/admission/admission_record.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/admission/admission_controller.h"
#include "sim/engine/frame_ledger.h"

namespace metronome {

void AdmissionRecord::interval(Time now, int64_t before, int64_t after) {
  ++intervals_;
  if (after > before) ++increases_;
  if (after < before) {
    ++decreases_;
    if (!first_decrease_s_) first_decrease_s_ = to_seconds(now);
  }
  max_cap_ = std::max(max_cap_, after);
  if (2 * now >= horizon_) ++last_half_caps_[after];
}

void AdmissionRecord::summarise(AdmissionSummary& a, const End& end) const {
  a.capped = end.cap != kNoCap;
  a.adaptive = end.adaptive;
  a.control_intervals = intervals_;
  a.increases = increases_;
  a.decreases = decreases_;
  a.first_decrease_s = first_decrease_s_;
  if (!a.capped) return;
  a.initial_cap = end.adaptive ? end.initial_cap : end.cap;
  a.final_cap = end.cap;
  a.max_cap = std::max(a.initial_cap, max_cap_);
  std::map<int64_t, int64_t> caps = last_half_caps_;
  if (caps.empty()) caps[end.cap] = 1;
  std::map<int64_t, int64_t> live = *end.last_half_live;
  if (live.empty()) live[end.live] = 1;
  a.n_star = counted_quantile(live, 0.5);
  a.live_p5 = counted_quantile(live, 0.05);
  a.live_p95 = counted_quantile(live, 0.95);
  a.cap_median = counted_quantile(caps, 0.5);
  a.cap_p5 = counted_quantile(caps, 0.05);
  a.cap_p25 = counted_quantile(caps, 0.25);
  a.cap_p75 = counted_quantile(caps, 0.75);
  a.cap_p95 = counted_quantile(caps, 0.95);
  auto flag = [&](const char* name, std::string why) {
    a.flags.push_back(name);
    a.flag_reasons.push_back(std::move(why));
  };
  if (end.first_stall_s) {
    flag("stalled", fmt::format("the pool refused an allocation at {:.6g} s", *end.first_stall_s));
  }
  if (static_cast<double>(end.cap) < 0.5 * *a.n_star) {
    flag("collapsed",
         fmt::format("the cap ended at {}, below half of N* = {:.6g}", end.cap, *a.n_star));
  }
  if (end.missed_deadlines) {
    flag("missed_deadlines", "over 1% of the last half's due frames were late or silent");
  }
  // A controller that never raised its cap measured nothing: N* is where it started (or below),
  // not a concurrency it found the engine could serve.
  if (end.adaptive && a.increases == 0) {
    flag("never_raised",
         fmt::format("the cap never rose above its initial {} in {} control intervals: N* is the "
                     "starting cap, not a concurrency the controller found (no interval had "
                     "headroom with the cap in use)",
                     a.initial_cap, a.control_intervals));
  }
}

}  // namespace metronome
