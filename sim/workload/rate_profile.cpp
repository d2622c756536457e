#include "sim/workload/rate_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include "base/config_error.h"
#include "base/time.h"
#include "sim/config/config_limits.h"

namespace metronome {
namespace {

constexpr double kMaxRate = 1e9;  // callers per second, as workload.arrival.rate_per_s

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

// A whole cell as a finite number, or nullopt.
std::optional<double> cell_number(const std::string& cell) {
  double v = 0;
  const char* end = cell.data() + cell.size();
  const auto [p, ec] = std::from_chars(cell.data(), end, v);
  if (ec != std::errc() || p != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

class ProfileProcess final : public ArrivalProcess {
 public:
  ProfileProcess(std::vector<RatePoint> points, double start_s)
      : p_(std::move(points)), t_(start_s) {
    while (i_ + 1 < p_.size() && p_[i_ + 1].time_s <= t_) ++i_;
  }

  std::optional<Time> next(Rng& rng) override {
    // The cumulative rate from t_ to the next arrival is a unit exponential: spend it interval by
    // interval (the process is memoryless, so a rate change mid-gap needs no second draw).
    double left = rng.exponential(1.0);
    while (true) {
      const double rate = p_[i_].calls_per_s;
      const double end =
          i_ + 1 < p_.size() ? p_[i_ + 1].time_s : std::numeric_limits<double>::infinity();
      if (rate > 0 && left < rate * (end - t_)) {
        t_ += left / rate;
        break;
      }
      if (!std::isfinite(end)) return std::nullopt;  // the last rate is 0: no caller is left
      left -= rate * (end - t_);
      t_ = end;
      ++i_;
    }
    if (t_ > kMaxSeconds) return std::nullopt;
    return from_seconds(t_);
  }

 private:
  std::vector<RatePoint> p_;
  size_t i_ = 0;  // the point whose interval holds t_
  double t_;
};

}  // namespace

void check_rate_profile(const std::vector<RatePoint>& points,
                        const std::function<std::string(size_t)>& where) {
  if (points.empty()) {
    throw ConfigError(where(0) +
                      ": expected at least one point (time_s, calls_per_s); the "
                      "profile is empty");
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const RatePoint& p = points[i];
    if (!(p.time_s >= 0 && p.time_s <= kMaxSeconds)) {
      throw ConfigError(
          fmt::format("{}: time_s: expected 0 to 1e9 s, got {:g}", where(i), p.time_s));
    }
    if (i == 0 && p.time_s != 0) {
      throw ConfigError(fmt::format(
          "{}: time_s: expected the first point at 0 s (the rate before it would be unstated), "
          "got {:g}",
          where(i), p.time_s));
    }
    if (i > 0 && !(p.time_s > points[i - 1].time_s)) {
      throw ConfigError(
          fmt::format("{}: time_s: expected times in increasing order, got {:g} after {:g}",
                      where(i), p.time_s, points[i - 1].time_s));
    }
    if (!(p.calls_per_s >= 0 && p.calls_per_s <= kMaxRate)) {
      throw ConfigError(
          fmt::format("{}: calls_per_s: expected 0 to 1e9 callers per second, got {:g}", where(i),
                      p.calls_per_s));
    }
  }
}

std::vector<RatePoint> parse_rate_profile(const nlohmann::json& j, const std::string& field) {
  auto at = [&](size_t i) { return fmt::format("{}[{}]", field, i); };
  if (!j.is_array()) {
    throw ConfigError(field + ": expected an array of [time_s, calls_per_s] points");
  }
  std::vector<RatePoint> points;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& p = j[i];
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
      throw ConfigError(at(i) + ": expected a point [time_s, calls_per_s] of two numbers, got " +
                        p.dump());
    }
    points.push_back({p[0].get<double>(), p[1].get<double>()});
  }
  check_rate_profile(points, [&](size_t i) { return points.empty() ? field : at(i); });
  return points;
}

std::vector<RatePoint> read_rate_profile_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw ConfigError(path + ": cannot open the traffic profile (a CSV of time_s,calls_per_s)");
  std::vector<RatePoint> points;
  std::vector<int64_t> lines;  // the file line of each point, for messages
  std::string line;
  int64_t n = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++n;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto comma = t.find(',');
    const std::string a = trim(t.substr(0, comma));
    const std::string b = comma == std::string::npos ? "" : trim(t.substr(comma + 1));
    if (!header) {
      if (a != "time_s" || b != "calls_per_s") {
        throw ConfigError(
            fmt::format("{}:{}: expected the header time_s,calls_per_s, got \"{}\"", path, n, t));
      }
      header = true;
      continue;
    }
    const auto time = cell_number(a);
    const auto rate = comma == std::string::npos ? std::nullopt : cell_number(b);
    if (!time || !rate) {
      throw ConfigError(fmt::format(
          "{}:{}: expected two finite numbers time_s,calls_per_s, got \"{}\"", path, n, t));
    }
    points.push_back({*time, *rate});
    lines.push_back(n);
  }
  if (in.bad()) throw ConfigError(path + ": read error");
  if (!header)
    throw ConfigError(path + ": expected the header time_s,calls_per_s; the file is empty");
  check_rate_profile(points, [&](size_t i) {
    return points.empty() ? path : fmt::format("{}:{}", path, lines[i]);
  });
  return points;
}

nlohmann::json rate_profile_json(const std::vector<RatePoint>& points) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : points) j.push_back({p.time_s, p.calls_per_s});
  return j;
}

double expected_calls(const std::vector<RatePoint>& points, double from_s, double to_s) {
  double sum = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const double a = std::max(from_s, points[i].time_s);
    const double b = i + 1 < points.size() ? std::min(to_s, points[i + 1].time_s) : to_s;
    if (b > a) sum += points[i].calls_per_s * (b - a);
  }
  return sum;
}

double peak_rate(const std::vector<RatePoint>& points) {
  double most = 0;
  for (const auto& p : points) most = std::max(most, p.calls_per_s);
  return most;
}

void ProfileArrivals::write(nlohmann::json& a) const {
  a["start_s"] = start_s_;
  if (file_.empty()) {
    a["profile"] = rate_profile_json(points_);
  } else {
    a["profile_file"] = file_;
  }
}

std::unique_ptr<ArrivalProcess> ProfileArrivals::make_process() const {
  return std::make_unique<ProfileProcess>(points_, start_s_);
}

std::string ProfileArrivals::check_size(double horizon_s) const {
  const double expected = expected_callers(horizon_s);
  if (expected <= kMaxCallers) return "";
  return "profile: expected at most 1e7 callers per run, got the profile's integral to "
         "horizon_s = " +
         nlohmann::json(expected).dump() + "; lower the rates or the horizon";
}

std::shared_ptr<const ArrivalPolicy> ProfileArrivals::parse(JsonSection& a) {
  const double start = parse_start_s(a);
  if (a.has("profile") == a.has("profile_file")) {
    a.fail("profile",
           "either profile (inline [time_s, calls_per_s] points) or profile_file (a "
           "CSV of time_s,calls_per_s), not both or neither");
  }
  if (a.has("profile")) {
    return std::make_shared<ProfileArrivals>(
        start, parse_rate_profile(a.raw("profile"), a.source() + ": " + a.field("profile")));
  }
  // Absolute, so the resolved scenario beside the results still finds it (a file's own relative
  // path was made absolute at load; a --set one is relative to the working folder).
  std::string file =
      std::filesystem::absolute(a.string("profile_file", std::nullopt)).lexically_normal().string();
  try {
    std::vector<RatePoint> points = read_rate_profile_csv(file);
    return std::make_shared<ProfileArrivals>(start, std::move(points), std::move(file));
  } catch (const ConfigError& e) {
    throw ConfigError(a.source() + ": " + a.field("profile_file") + ": " + e.what());
  }
}

}  // namespace metronome
