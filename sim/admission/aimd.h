// admission.type = "aimd": deadline-aware additive-increase / multiplicative-decrease.
//
// Each control interval the engine reports q = the admission.quantile (default p95) of per-frame
// latency, reported (default) or true. With D the frame deadline:
//   q > high_fraction x D            cap <- max(floor, cap x decrease_factor)        (congestion)
//   q < low_fraction  x D            cap <- min(max_cap, cap + increase)             (headroom)
//                                    only while the cap is in use: 2 x live >= cap, so an idle
//                                    engine does not inflate a cap it never tested
//   otherwise                        hold
// An interval without frames holds. The cap is kept as a real number and admits floor(cap).
#pragma once

#include "sim/admission/admission_controller.h"

namespace metronome {

class Aimd : public AdmissionController {
 public:
  Aimd(const AdmissionConfig& c, double deadline_s);
  int64_t cap() const override;
  bool adaptive() const override { return true; }
  void on_interval(const ControlSignal& s) override;

 private:
  AdmissionConfig c_;
  double low_s_, high_s_;
  double cap_;
};

}  // namespace metronome
