#include "sim/admission/gradient.h"

#include <algorithm>
#include <cmath>

namespace metronome {

Gradient::Gradient(const GradientParams& c)
    : c_(c), cap_(static_cast<double>(c.loop.initial_cap)) {}

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
  cap_ = std::clamp(cap_, static_cast<double>(c_.loop.floor), static_cast<double>(c_.loop.max_cap));
}

std::shared_ptr<const AdmissionPolicy> GradientPolicy::parse(JsonSection& a) {
  GradientParams p;
  p.loop = ControlLoop::parse(a);
  p.tolerance = a.in_range("tolerance", p.tolerance, 1, 100);
  p.smoothing = a.in_range("smoothing", p.smoothing, 0, 1);
  p.long_window = a.in_range("long_window", p.long_window, 1, 1e9);
  return std::make_shared<GradientPolicy>(p);
}

void GradientPolicy::write(nlohmann::json& section) const {
  p_.loop.write(section);
  section.update(
      {{"tolerance", p_.tolerance}, {"smoothing", p_.smoothing}, {"long_window", p_.long_window}});
}

}  // namespace metronome
