#include "calibrate/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "calibrate/step_shape.h"
#include "sim/cost/roofline_cost_model.h"

namespace metronome::calibrate {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

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
        GridPoint p;
        p.sessions = pj.value("sessions", 0);
        p.q_len = pj.value("q_len", 0);
        p.ctx = pj.value("ctx", -1);
        p.window = pj.value("window", int64_t{-1});
        p.sinks = pj.value("sinks", int64_t{0});
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
    rows.push_back(
        {{"sessions", row.point.sessions},
         {"q_len", row.point.q_len},
         {"ctx", row.point.ctx},
         {"window", row.point.window},
         {"sinks", row.point.sinks},
         {"query_tokens", row.shape.query_tokens},
         {"kv_read_tokens", row.shape.kv_read_tokens},
         {"qk_pairs", row.shape.qk_pairs},
         {"measured_s", row.measured_s ? nlohmann::json(*row.measured_s) : nlohmann::json(nullptr)},
         {"calibrated_s", row.calibrated_s},
         {"roofline_s", row.roofline_s},
         {"calibrated_over_roofline",
          row.roofline_s > 0 ? row.calibrated_s / row.roofline_s : 0.0}});
  }
  return {
      {"calibration", r.calibration},
      {"roofline", r.roofline},
      {"grid", r.grid},
      {"calibrated_over_roofline",
       {{"median", r.median_ratio}, {"min", r.min_ratio}, {"max", r.max_ratio}}},
      {"roofline_median_ape_vs_measured",
       r.roofline_median_ape ? nlohmann::json(*r.roofline_median_ape) : nlohmann::json(nullptr)},
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
    o << fmt::format("{:>8} {:>5} {:>7} {:>11} | {:>11} {:>11} {:>11} {:>9.2f}\n",
                     row.point.sessions, row.point.q_len, row.point.ctx, win,
                     row.measured_s ? fmt::format("{:.4f} ms", *row.measured_s * 1e3) : "-",
                     fmt::format("{:.4f} ms", row.calibrated_s * 1e3),
                     fmt::format("{:.4f} ms", row.roofline_s * 1e3),
                     row.roofline_s > 0 ? row.calibrated_s / row.roofline_s : 0.0);
  }
  o << fmt::format("\ncalibrated / roofline: median {:.2f}, range {:.2f} .. {:.2f}\n",
                   r.median_ratio, r.min_ratio, r.max_ratio);
  if (r.roofline_median_ape) {
    o << fmt::format("roofline vs measured: median absolute error {:.1f}%\n",
                     100 * *r.roofline_median_ape);
  }
  return o.str();
}

}  // namespace metronome::calibrate
