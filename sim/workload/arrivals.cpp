#include "sim/workload/arrivals.h"

#include "sim/workload/rate_profile.h"

namespace metronome {
namespace {

// N callers at the same instant: the worst case for a shared pool, and the first-order model's
// form.
class AllAtOnce final : public ArrivalProcess {
 public:
  explicit AllAtOnce(const ArrivalConfig& c) : left_(c.sessions), at_(from_seconds(c.start_s)) {}
  std::optional<Time> next(Rng&) override {
    if (left_ == 0) return std::nullopt;
    --left_;
    return at_;
  }

 private:
  int64_t left_;
  Time at_;
};

// One caller every interval: the paper's story (a new caller every 2 s).
class FixedInterval final : public ArrivalProcess {
 public:
  explicit FixedInterval(const ArrivalConfig& c)
      : n_(c.sessions), start_(c.start_s), interval_(c.interval_s) {}
  std::optional<Time> next(Rng&) override {
    if (i_ >= n_) return std::nullopt;
    // Computed from the index, not accumulated, so the schedule does not drift.
    const double t = start_ + static_cast<double>(i_++) * interval_;
    if (t > kMaxSeconds) return std::nullopt;
    return from_seconds(t);
  }

 private:
  int64_t n_;
  int64_t i_ = 0;
  double start_;
  double interval_;
};

class Poisson final : public ArrivalProcess {
 public:
  explicit Poisson(const ArrivalConfig& c)
      : rate_(c.rate_per_s), max_(c.max_sessions), t_(c.start_s) {}
  std::optional<Time> next(Rng& rng) override {
    if (rate_ <= 0 || (max_ > 0 && count_ >= max_)) return std::nullopt;
    t_ += rng.exponential(1.0 / rate_);
    if (t_ > kMaxSeconds) return std::nullopt;
    ++count_;
    return from_seconds(t_);
  }

 private:
  double rate_;
  int64_t max_;
  int64_t count_ = 0;
  double t_;
};

}  // namespace

std::unique_ptr<ArrivalProcess> make_arrival_process(const ArrivalConfig& c) {
  if (c.type == "all_at_once") return std::make_unique<AllAtOnce>(c);
  if (c.type == "fixed_interval") return std::make_unique<FixedInterval>(c);
  if (c.type == "profile") return make_profile_arrivals(c.profile, c.start_s);
  return std::make_unique<Poisson>(c);  // the loader admits no other type
}

}  // namespace metronome
