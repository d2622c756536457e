#include "calibrate/calibration_writer.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <utility>

#include "base/config_error.h"
#include "base/output_file.h"

namespace metronome::calibrate {

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json calibration_json(const CalibrationMeta& meta, const FitResult& fit) {
  using nlohmann::json;
  json terms = json::array();
  for (const auto& t : fit.terms) {
    json term = {{"name", term_name(t.term)},
                 {"coefficient", t.coefficient},
                 {"unit", term_unit(t.term)},
                 {"dropped", t.dropped}};
    if (!t.origin.empty()) term["origin"] = t.origin;
    terms.push_back(term);
  }
  json points = json::array();
  for (size_t i = 0; i < fit.samples.size(); ++i) {
    const auto& s = fit.samples[i];
    json p = point_json(s.point, s.shape);
    p["name"] = s.name;
    p[meta.measured ? "measured_s" : "analytic_s"] = s.seconds;
    p["fitted_s"] = fit.predicted[i];
    p["set"] = fit.heldout[i] ? "heldout" : "train";
    points.push_back(std::move(p));
  }
  json warnings = fit.warnings;
  json out = {
      {"kind", kCalibrationKind},
      {"schema_version", kCalibrationSchemaVersion},
      {"measured", meta.measured},
      {"backend", meta.backend},
      {"label", meta.label},
      {"comment", meta.comment},
      {"date", meta.date.empty() ? utc_now_iso8601() : meta.date},
      {"model",
       {{"name", meta.model_name},
        {"layers", meta.model.layers},
        {"experts", meta.model.experts},
        {"experts_active", meta.model.experts_active}}},
      {"device",
       {{"name", meta.device_name},
        {"driver", meta.driver},
        {"cuda_runtime", meta.cuda_runtime},
        {"host", meta.host}}},
      {"source", meta.source},
      {"grid", meta.grid},
      {"fit",
       {{"method", !meta.fit_method.empty()
                       ? meta.fit_method
                       : "least squares on relative error (Eigen column-pivoting QR), non-negative "
                         "by dropping terms; every " +
                             std::to_string(fit.heldout_every) + "th point by shape held out"},
        {"terms", terms},
        {"r2", fit.r2},
        {"train_points", fit.train_points},
        {"heldout_points", fit.heldout_points},
        {"heldout_median_ape", fit.heldout_median_ape},
        {"heldout_max_ape", fit.heldout_max_ape},
        {"warnings", warnings}}},
      {"points", points}};
  if (!meta.scaling.is_null()) out["scaling"] = meta.scaling;
  return out;
}

void check_json_target(const std::string& path, const std::string& option) {
  if (path.empty()) throw ConfigError(option + ": expected a file path, got an empty one");
  require_writable_target(path, option);
  // The folder: an existing one must be a writable folder; a missing one is created on writing.
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  for (; !dir.empty(); dir = dir.parent_path()) {
    if (std::filesystem::exists(dir, ec)) break;
    if (dir == dir.parent_path()) break;
  }
  if (std::filesystem::exists(dir, ec) &&
      (!std::filesystem::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)) {
    throw ConfigError(option + " " + path + ": cannot write into " + dir.string() +
                      " (expected a writable folder)");
  }
}

void write_json_file(const std::string& path, const nlohmann::json& j, const std::string& option) {
  check_json_target(path, option);
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) {
    throw ConfigError(option + " " + path + ": cannot create its folder (" + ec.message() + ")");
  }
  write_file_atomically(path, j.dump(2) + "\n", option);
}

}  // namespace metronome::calibrate
