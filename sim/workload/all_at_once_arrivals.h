// workload.arrival.type = "all_at_once": N callers at the same instant, the worst case for a
// shared pool and the first-order model's form.
#pragma once

#include "sim/workload/arrivals.h"

namespace metronome {

class AllAtOnceArrivals final : public ArrivalPolicy {
 public:
  AllAtOnceArrivals(double start_s, int64_t sessions) : start_s_(start_s), sessions_(sessions) {}

  std::string type() const override { return "all_at_once"; }
  void write(nlohmann::json& a) const override {
    a["start_s"] = start_s_;
    a["sessions"] = sessions_;
  }
  std::unique_ptr<ArrivalProcess> make_process() const override {
    return std::make_unique<Process>(sessions_, from_seconds(start_s_));
  }
  double start_s() const override { return start_s_; }
  bool random() const override { return false; }
  bool one_cohort() const override { return true; }
  double live_callers(double) const override { return static_cast<double>(sessions_); }
  double expected_callers(double) const override { return static_cast<double>(sessions_); }
  std::string check_size(double) const override { return check_sessions_size(sessions_); }

  static std::shared_ptr<const ArrivalPolicy> parse(JsonSection& a) {
    const double start = parse_start_s(a);
    return std::make_shared<AllAtOnceArrivals>(start, parse_sessions(a));
  }

 private:
  class Process final : public ArrivalProcess {
   public:
    Process(int64_t n, Time at) : left_(n), at_(at) {}
    std::optional<Time> next(Rng&) override {
      if (left_ == 0) return std::nullopt;
      --left_;
      return at_;
    }

   private:
    int64_t left_;
    Time at_;
  };

  double start_s_;
  int64_t sessions_;
};

}  // namespace metronome
