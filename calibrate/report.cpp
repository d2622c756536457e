#include "calibrate/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "calibrate/fit.h"
#include "calibrate/step_shape.h"
#include "sim/cost/roofline_cost_model.h"

namespace metronome::calibrate {
namespace {

// A point field of the calibration's own points (written by us, but the file may have been edited):
// missing gives `def`, anything but an integer in [lo, hi] drops the point.
std::optional<int64_t> point_int(const nlohmann::json& pj, const char* key, int64_t def, int64_t lo,
                                 int64_t hi) {
  const auto it = pj.find(key);
  if (it == pj.end()) return def;
  if (!it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi)) return {};
  const auto v = it->get<int64_t>();
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

// JSON has no inf or NaN, and the text report prints none either.
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }
std::string ms_or_dash(double s) {
  return std::isfinite(s) ? fmt::format("{:.4f} ms", s * 1e3) : "-";
}
std::string ratio_text(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : "-"; }

}  // namespace

CalibrationReport compare_with_roofline(const nlohmann::json& file_json, const Calibration& c,
                                        const Scenario& s, const std::optional<Grid>& grid) {
  CalibrationReport r;
  const RooflineCostModel roofline(s.model, s.gpu, 0.0);
  r.roofline = roofline.label();
  CalibratedCostModel cal(c, 0.0);
  r.calibration = cal.label();
  if (grid) {
    r.grid = "grid " + grid->name;
    for (const auto& p : grid->points) {
      if (p.kind == BenchKind::kStep) r.rows.push_back({p, step_pass_shape(p), std::nullopt, 0, 0});
    }
  } else {
    r.grid = "the calibration's own points";
    const auto it = file_json.find("points");
    if (it != file_json.end() && it->is_array()) {
      for (const auto& pj : *it) {
        if (!pj.is_object()) continue;
        // Shapes beyond a million sessions or tokens are no benchmark point (and would overflow
        // the features).
        constexpr int64_t kBig = 1'000'000'000;
        const auto sessions = point_int(pj, "sessions", 0, 0, 1'000'000);
        const auto q_len = point_int(pj, "q_len", 0, 0, 1'000'000);
        const auto ctx = point_int(pj, "ctx", -1, -1, kBig);
        const auto window = point_int(pj, "window", -1, -1, kBig);
        const auto sinks = point_int(pj, "sinks", 0, 0, kBig);
        if (!sessions || !q_len || !ctx || !window || !sinks) continue;
        GridPoint p;
        p.sessions = static_cast<int32_t>(*sessions);
        p.q_len = static_cast<int32_t>(*q_len);
        p.ctx = static_cast<int32_t>(*ctx);
        p.window = *window;
        p.sinks = *sinks;
        if (p.sessions < 1 || p.q_len < 1 || p.ctx < 0) continue;
        ReportRow row{p, step_pass_shape(p), std::nullopt, 0, 0};
        if (auto m = pj.find("measured_s"); m != pj.end() && m->is_number())
          row.measured_s = m->get<double>();
        r.rows.push_back(row);
      }
    }
  }
  std::vector<double> ratios, ape;
  for (auto& row : r.rows) {
    row.calibrated_s = cal.pass_seconds(row.shape);
    row.roofline_s = roofline.pass_seconds(row.shape);
    if (row.roofline_s > 0) ratios.push_back(row.calibrated_s / row.roofline_s);
    if (row.measured_s && *row.measured_s > 0) {
      ape.push_back(std::fabs(row.roofline_s - *row.measured_s) / *row.measured_s);
    }
  }
  if (!ratios.empty()) {
    r.median_ratio = median_of(ratios);
    r.min_ratio = *std::min_element(ratios.begin(), ratios.end());
    r.max_ratio = *std::max_element(ratios.begin(), ratios.end());
  }
  if (!ape.empty()) r.roofline_median_ape = median_of(ape);
  return r;
}

nlohmann::json report_json(const CalibrationReport& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json j = point_json(row.point, row.shape);
    // Step times are durations against the frame: milliseconds, as in every output.
    j["measured_ms"] =
        row.measured_s ? finite_or_null(*row.measured_s * 1e3) : nlohmann::json(nullptr);
    j["calibrated_ms"] = finite_or_null(row.calibrated_s * 1e3);
    j["roofline_ms"] = finite_or_null(row.roofline_s * 1e3);
    j["calibrated_over_roofline"] =
        row.roofline_s > 0 ? finite_or_null(row.calibrated_s / row.roofline_s) : nullptr;
    rows.push_back(std::move(j));
  }
  return {
      {"calibration", r.calibration},
      {"roofline", r.roofline},
      {"grid", r.grid},
      {"calibrated_over_roofline",
       {{"median", finite_or_null(r.median_ratio)},
        {"min", finite_or_null(r.min_ratio)},
        {"max", finite_or_null(r.max_ratio)}}},
      {"roofline_median_ape_vs_measured",
       r.roofline_median_ape ? finite_or_null(*r.roofline_median_ape) : nlohmann::json(nullptr)},
      {"rows", rows}};
}

std::string report_text(const CalibrationReport& r) {
  std::ostringstream o;
  o << "calibration " << r.calibration << "\n";
  o << "roofline    " << r.roofline << "\n";
  o << "points      " << r.grid << " (step times without the scheduler's step overhead)\n\n";
  o << fmt::format("{:>8} {:>5} {:>7} {:>11} | {:>11} {:>11} {:>11} {:>9}\n", "sessions", "q",
                   "ctx", "window", "measured", "calibrated", "roofline", "cal/roof");
  for (const auto& row : r.rows) {
    const std::string win = row.point.window < 0
                                ? "unbounded"
                                : fmt::format("W{} S{}", row.point.window, row.point.sinks);
    o << fmt::format("{:>8} {:>5} {:>7} {:>11} | {:>11} {:>11} {:>11} {:>9}\n", row.point.sessions,
                     row.point.q_len, row.point.ctx, win,
                     row.measured_s ? ms_or_dash(*row.measured_s) : "-",
                     ms_or_dash(row.calibrated_s), ms_or_dash(row.roofline_s),
                     row.roofline_s > 0 ? ratio_text(row.calibrated_s / row.roofline_s) : "-");
  }
  o << fmt::format("\ncalibrated / roofline: median {}, range {} .. {}\n",
                   ratio_text(r.median_ratio), ratio_text(r.min_ratio), ratio_text(r.max_ratio));
  if (r.roofline_median_ape && std::isfinite(*r.roofline_median_ape)) {
    o << fmt::format("roofline vs measured: median absolute error {:.1f}%\n",
                     100 * *r.roofline_median_ape);
  }
  return o.str();
}

}  // namespace metronome::calibrate
