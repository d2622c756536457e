// Admission control: how many sessions the engine admits at once. A caller arriving while the
// number of admitted (live) sessions is at the cap is rejected (a busy signal) and counted;
// sessions already admitted are never evicted by the controller. Controllers that learn the cap
// online see one ControlSignal per control interval (admission.interval_s); each is made by its
// AdmissionPolicy (sim/admission/admission_policy.h), chosen by admission.type.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>

#include "base/time.h"

namespace metronome {

inline constexpr int64_t kNoCap = std::numeric_limits<int64_t>::max();

// What the engine measured over one control interval.
struct ControlSignal {
  Time now = 0;
  double latency_s = 0;  // admission.quantile of the interval's per-frame latency (may be +inf)
  int64_t frames = 0;    // frames in the interval's histogram (answered, padded or censored)
  int64_t live = 0;      // sessions admitted and not departed at `now`
  // The cost model's forecast of latency_s once the live sessions and `increase` more have
  // settled (windowed KV: every context at S + W): the model's settled latency, scaled up by how
  // far latency_s exceeds the model's latency for the batch as it is (never down); infinite past
  // the engine's full-step pace. Computed when a controller asks (it replays the live callers
  // twice: most of a large AIMD run's time); empty, or where contexts do not settle (unbounded),
  // it is latency_s.
  std::function<double()> forecast;
  double settled_latency_s() const { return forecast ? forecast() : latency_s; }
};

class AdmissionController {
 public:
  virtual ~AdmissionController() = default;
  // The most sessions admitted at once now; kNoCap when unlimited.
  virtual int64_t cap() const = 0;
  // True when the controller wants control events (it adapts its cap online).
  virtual bool adaptive() const { return false; }
  // One control interval ended; called only by adaptive controllers' engines.
  virtual void on_interval(const ControlSignal& /*signal*/) {}
};

}  // namespace metronome
