// admission.type = "aimd": deadline-aware additive-increase / multiplicative-decrease.
//
// Each control interval the engine reports q = the admission.quantile (default p95) of per-frame
// latency, reported (default) or true. With D the frame deadline:
//   q > high_fraction x D            cap <- max(floor, cap x decrease_factor)        (congestion)
//                                    only while cap >= live: below the live count a cut admits
//                                    nobody less, and cutting on would wind the cap down to the
//                                    floor while the admitted callers stay (no windup)
//   q < low_fraction  x D            cap <- min(max_cap, cap + increase)             (headroom)
//                                    only while the cap is in use (2 x live >= cap, so an idle
//                                    engine does not inflate a cap it never tested) and while the
//                                    settled forecast (ControlSignal::settled_latency_s()) is under
//                                    low_fraction x D too: a windowed session's cost keeps
//                                    growing for W frame periods after admission, so the measured
//                                    signal lags, and callers admitted on it are never evicted.
//                                    The forecast is held to the signal's own bound, not the
//                                    band's middle: with the middle, W = 1920 and 3000 admitted a
//                                    few past the deadline cap and kept them
//   otherwise                        hold
// An interval without frames holds. The cap is kept as a real number and admits floor(cap).
#pragma once

#include "sim/admission/admission_policy.h"

namespace metronome {

struct AimdParams {
  ControlLoop loop;
  double increase = 2;           // sessions added per interval with headroom
  double decrease_factor = 0.9;  // cap multiplier on congestion
  double low_fraction = 0.8;     // headroom below low_fraction x deadline
  double high_fraction = 0.9;    // congestion above high_fraction x deadline
};

class Aimd : public AdmissionController {
 public:
  Aimd(const AimdParams& c, double deadline_s);
  int64_t cap() const override;
  bool adaptive() const override { return true; }
  void on_interval(const ControlSignal& s) override;

 private:
  AimdParams c_;
  double low_s_, high_s_;
  double cap_;
};

class AimdPolicy final : public AdmissionPolicy {
 public:
  explicit AimdPolicy(const AimdParams& p) : p_(p) {}
  std::string type() const override { return "aimd"; }
  void write(nlohmann::json& section) const override;
  std::unique_ptr<AdmissionController> make_controller(double deadline_s) const override {
    return std::make_unique<Aimd>(p_, deadline_s);
  }
  const ControlLoop* control_loop() const override { return &p_.loop; }
  double forecast_increase() const override { return p_.increase; }
  double congestion_fraction() const override { return p_.high_fraction; }
  const AimdParams& params() const { return p_; }  // the fleet's AIMD reads the same fields
  static std::shared_ptr<const AdmissionPolicy> parse(JsonSection& a);

 private:
  AimdParams p_;
};

}  // namespace metronome
