// workload.arrival.type = "uniform": `sessions` callers, each at an independent time uniform over
// [start_s, start_s + within_s]. A known number of callers with random frame phases (a rush after
// an announcement), where poisson's count is random too and fixed_interval's phases are not.
//
// Drawn in order, one number per caller: after fraction u of the span with k callers left, the
// next is the least of k uniforms on [u, 1], u + (1 - u)(1 - V^(1/k)) with V uniform on (0, 1].
#pragma once

#include <algorithm>
#include <cmath>

#include "sim/workload/arrivals.h"

namespace metronome {

class UniformArrivals final : public ArrivalPolicy {
 public:
  UniformArrivals(double start_s, int64_t sessions, double within_s)
      : start_s_(start_s), sessions_(sessions), within_s_(within_s) {}

  std::string type() const override { return "uniform"; }
  void write(nlohmann::json& a) const override {
    a["start_s"] = start_s_;
    a["sessions"] = sessions_;
    a["within_s"] = within_s_;
  }
  std::unique_ptr<ArrivalProcess> make_process() const override {
    return std::make_unique<Process>(sessions_, start_s_, within_s_);
  }
  double start_s() const override { return start_s_; }
  bool random() const override { return true; }
  // Little's law at sessions / within_s callers per second, at most every caller.
  double live_callers(double call_s) const override {
    const double n = static_cast<double>(sessions_);
    return std::min(n, n * call_s / within_s_);
  }
  double expected_callers(double) const override { return static_cast<double>(sessions_); }
  std::string check_size(double) const override { return check_sessions_size(sessions_); }

  static std::shared_ptr<const ArrivalPolicy> parse(JsonSection& a) {
    const double start = parse_start_s(a);
    const int64_t sessions = parse_sessions(a);
    return std::make_shared<UniformArrivals>(
        start, sessions, a.in_range("within_s", std::nullopt, 1e-9, kMaxSeconds));
  }

 private:
  class Process final : public ArrivalProcess {
   public:
    Process(int64_t n, double start_s, double within_s)
        : left_(n), start_(start_s), within_(within_s) {}
    std::optional<Time> next(Rng& rng) override {
      if (left_ == 0) return std::nullopt;
      u_ += (1 - u_) * (1 - std::pow(rng.uniform_open(), 1.0 / static_cast<double>(left_)));
      --left_;
      const double t = start_ + u_ * within_;
      if (t > kMaxSeconds) return std::nullopt;
      return from_seconds(t);
    }

   private:
    int64_t left_;
    double start_;
    double within_;
    double u_ = 0;  // fraction of the span the last caller arrived at
  };

  double start_s_;
  int64_t sessions_;
  double within_s_;
};

}  // namespace metronome
