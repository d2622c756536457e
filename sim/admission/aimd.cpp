#include "sim/admission/aimd.h"

#include <algorithm>
#include <cmath>

namespace metronome {

Aimd::Aimd(const AdmissionConfig& c, double deadline_s)
    : c_(c),
      low_s_(c.low_fraction * deadline_s),
      high_s_(c.high_fraction * deadline_s),
      cap_(static_cast<double>(c.initial_cap)) {}

int64_t Aimd::cap() const { return static_cast<int64_t>(std::floor(cap_ + 1e-9)); }

void Aimd::on_interval(const ControlSignal& s) {
  if (s.frames == 0) return;
  const double floor = static_cast<double>(c_.floor);
  const double max_cap = static_cast<double>(c_.max_cap);
  if (s.latency_s > high_s_) {
    if (cap_ >= static_cast<double>(s.live)) cap_ = std::max(floor, cap_ * c_.decrease_factor);
  } else if (s.latency_s < low_s_ && s.settled_latency_s <= 0.5 * (low_s_ + high_s_) &&
             2.0 * static_cast<double>(s.live) >= cap_) {
    cap_ = std::min(max_cap, cap_ + c_.increase);
  }
}

}  // namespace metronome
