#include "sim/admission/gradient.h"

#include <algorithm>
#include <cmath>

namespace metronome {

Gradient::Gradient(const AdmissionConfig& c) : c_(c), cap_(static_cast<double>(c.initial_cap)) {}

int64_t Gradient::cap() const { return static_cast<int64_t>(std::floor(cap_ + 1e-9)); }

void Gradient::on_interval(const ControlSignal& s) {
  if (s.frames == 0) return;
  // A censored (infinite) quantile is the worst signal there is: take the gradient's floor.
  const double short_s = s.latency_s;
  if (!primed_) {
    if (!std::isfinite(short_s)) return;
    long_s_ = short_s;
    primed_ = true;
  } else if (std::isfinite(short_s)) {
    const double a = 1.0 / c_.long_window;
    long_s_ = (1.0 - a) * long_s_ + a * short_s;
    if (long_s_ > 2.0 * short_s) long_s_ *= 0.95;
  }
  const double g = std::isfinite(short_s) && short_s > 0
                       ? std::clamp(c_.tolerance * long_s_ / short_s, 0.5, 1.0)
                       : (std::isfinite(short_s) ? 1.0 : 0.5);
  double target = cap_ * g + std::sqrt(cap_);
  if (target > cap_ && 2.0 * static_cast<double>(s.live) < cap_) target = cap_;
  cap_ = (1.0 - c_.smoothing) * cap_ + c_.smoothing * target;
  cap_ = std::clamp(cap_, static_cast<double>(c_.floor), static_cast<double>(c_.max_cap));
}

}  // namespace metronome
