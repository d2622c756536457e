// Traffic over time: callers arriving at a rate that follows a profile, a list of (time_s,
// calls_per_s) points. The rate is piecewise constant: point i's rate holds from its time until
// the next point's, and the last point's rate holds from its time on, to the end of the run (a
// profile shorter than the horizon is not an error: its last rate holds). The first point is at
// 0 s. Within the profile arrivals are a Poisson process of that rate.
//
// workload.arrival.type = "profile". A profile is given inline (`workload.arrival.profile:
// [[0, 1.5], [3600, 4.0], ...]`) or as a CSV file (`workload.arrival.profile_file`, relative to the
// scenario file) whose first line is the header `time_s,calls_per_s` and each further line one
// point; blank lines and lines starting with '#' are skipped.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/workload/arrivals.h"

namespace metronome {

struct RatePoint {
  double time_s = 0;
  double calls_per_s = 0;

  bool operator==(const RatePoint&) const = default;
};

// Throws ConfigError, `where(i)` naming point i, unless the points are a profile: at least one,
// the first at 0 s, times strictly increasing and at most 1e9 s, rates in [0, 1e9].
void check_rate_profile(const std::vector<RatePoint>& points,
                        const std::function<std::string(size_t)>& where);

// The inline form, `field` naming it for messages ("file: workload.arrival.profile").
std::vector<RatePoint> parse_rate_profile(const nlohmann::json& points, const std::string& field);
// The CSV form; messages name the file and line.
std::vector<RatePoint> read_rate_profile_csv(const std::string& path);
nlohmann::json rate_profile_json(const std::vector<RatePoint>& points);

// Expected callers over [from_s, to_s]: the integral of the rate.
double expected_calls(const std::vector<RatePoint>& points, double from_s, double to_s);
// The highest rate any point states.
double peak_rate(const std::vector<RatePoint>& points);

// Poisson arrivals under the profile from `start_s` on, by inverting the cumulative rate: each gap
// is one unit exponential draw spent against the rate interval by interval, so a run draws one
// number per caller whatever the profile, and the same seed gives the same calls.
class ProfileArrivals final : public ArrivalPolicy {
 public:
  // `file`: the absolute path of the CSV the points were read from; empty where given inline.
  ProfileArrivals(double start_s, std::vector<RatePoint> points, std::string file = "")
      : start_s_(start_s), points_(std::move(points)), file_(std::move(file)) {}

  std::string type() const override { return "profile"; }
  void write(nlohmann::json& a) const override;
  std::unique_ptr<ArrivalProcess> make_process() const override;
  double start_s() const override { return start_s_; }
  bool random() const override { return true; }
  // Little's law at the peak rate, which the pool must hold.
  double live_callers(double call_s) const override { return peak_rate(points_) * call_s; }
  double expected_callers(double horizon_s) const override {
    return expected_calls(points_, start_s_, horizon_s);
  }
  std::string check_size(double horizon_s) const override;

  const std::vector<RatePoint>& points() const { return points_; }
  const std::string& file() const { return file_; }

  static std::shared_ptr<const ArrivalPolicy> parse(JsonSection& a);

 private:
  double start_s_;
  std::vector<RatePoint> points_;
  std::string file_;
};

}  // namespace metronome
