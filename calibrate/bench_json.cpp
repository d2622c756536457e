#include "calibrate/bench_json.h"

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "base/config_error.h"
#include "base/json_file.h"

namespace metronome::calibrate {
namespace {

std::string context_string(const nlohmann::json& ctx, const char* key) {
  auto it = ctx.find(key);
  return it != ctx.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double unit_seconds(const std::string& unit, const std::string& where) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1.0;
  throw ConfigError(where + ".time_unit: expected ns, us, ms or s, got \"" + unit + "\"");
}

}  // namespace

BenchRun parse_bench_json(const nlohmann::json& j, const std::string& source) {
  BenchRun r;
  r.source = source;
  if (!j.is_object() || !j.contains("context") || !j.contains("benchmarks") ||
      !j["context"].is_object() || !j["benchmarks"].is_array()) {
    throw ConfigError(source +
                      ": expected Google Benchmark JSON: an object with \"context\" and "
                      "\"benchmarks\" (run `metronome calibrate run --out FILE`)");
  }
  const auto& ctx = j["context"];
  r.model = context_string(ctx, "metronome_model");
  r.backend = context_string(ctx, "metronome_backend");
  if (r.model.empty() || r.backend.empty()) {
    throw ConfigError(source +
                      ": context.metronome_model / metronome_backend: expected strings "
                      "(the file was not written by `metronome calibrate run`)");
  }
  if (r.backend != "cpu" && r.backend != "gpu") {
    throw ConfigError(source + ": context.metronome_backend: expected cpu or gpu, got \"" +
                      r.backend + "\"");
  }
  r.device = context_string(ctx, "metronome_device");
  r.driver = context_string(ctx, "metronome_driver");
  r.cuda_runtime = context_string(ctx, "metronome_cuda_runtime");
  r.grid = context_string(ctx, "metronome_grid");
  r.protocol = context_string(ctx, "metronome_protocol");
  r.date = context_string(ctx, "date");
  r.host = context_string(ctx, "host_name");

  // Prefer the median aggregate; fall back to the mean of iterations for a run without repetitions.
  std::map<std::string, BenchSample> median, single;
  std::map<std::string, int> singles;
  const auto& list = j["benchmarks"];
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& b = list[i];
    const std::string where = source + ": benchmarks[" + std::to_string(i) + "]";
    if (!b.is_object()) throw ConfigError(where + ": expected an object");
    const std::string name = b.value("run_name", b.value("name", std::string()));
    if (b.value("error_occurred", false)) {
      r.skipped.push_back(name + ": " + b.value("error_message", std::string("(no message)")));
      continue;
    }
    const std::string run_type = b.value("run_type", std::string("iteration"));
    const std::string agg = b.value("aggregate_name", std::string());
    if (run_type == "aggregate" && agg != "median") continue;
    BenchSample s;
    s.name = name;
    for (const char* key : {"sessions", "q_len", "ctx", "window", "sinks", "layers", "real_time"}) {
      if (!b.contains(key) || !b[key].is_number() || !std::isfinite(b[key].get<double>())) {
        throw ConfigError(where + "." + key + ": expected a finite number (benchmark \"" + name +
                          "\")");
      }
    }
    s.point.sessions = b["sessions"].get<int32_t>();
    s.point.q_len = b["q_len"].get<int32_t>();
    s.point.ctx = b["ctx"].get<int32_t>();
    s.point.window = static_cast<int64_t>(std::llround(b["window"].get<double>()));
    s.point.sinks = static_cast<int64_t>(std::llround(b["sinks"].get<double>()));
    s.layers = b["layers"].get<int32_t>();
    if (s.point.sessions < 1 || s.point.q_len < 1 || s.point.ctx < 0) {
      throw ConfigError(where + ": sessions >= 1, q_len >= 1, ctx >= 0 expected (benchmark \"" +
                        name + "\")");
    }
    std::optional<BenchKind> kind;
    std::stringstream parts(name);
    for (std::string part; std::getline(parts, part, '/') && !kind;) kind = bench_kind_from(part);
    if (!kind)
      throw ConfigError(where + ".run_name: expected a step, attention or gemm benchmark, got \"" +
                        name + "\"");
    s.point.kind = *kind;
    s.seconds =
        b["real_time"].get<double>() * unit_seconds(b.value("time_unit", std::string("ns")), where);
    // An hour per timed pass is no kernel timing: the fit's sums of squares would overflow.
    if (!(s.seconds > 0 && s.seconds <= 3600))
      throw ConfigError(where + ".real_time: expected a time > 0 and at most 1 hour (benchmark \"" +
                        name + "\")");
    if (run_type == "aggregate") {
      median[name] = s;
    } else {
      // Iterations of one benchmark without repetitions: keep the mean of what is there.
      auto [it, fresh] = single.try_emplace(name, s);
      if (!fresh) it->second.seconds += s.seconds;
      ++singles[name];
    }
  }
  for (auto& [name, s] : single) {
    if (median.count(name)) continue;
    s.seconds /= singles[name];
    median[name] = s;
  }
  for (auto& [name, s] : median) r.samples.push_back(s);
  return r;
}

BenchRun read_bench_json(const std::string& path) {
  const std::string raw = read_text_file(path, "benchmark JSON");
  // Google Benchmark prints the coefficient of variation of an all-zero counter (sinks = 0) as
  // -nan, which is not JSON; those aggregates are never read, so they become null.
  static const std::regex kNonFinite(R"((:\s*)-?(nan|inf)\b)", std::regex::icase);
  const std::string text = std::regex_replace(raw, kNonFinite, "$1null");
  return parse_bench_json(parse_json(text, path), path);
}

BenchRun faster_per_shape(const std::vector<BenchRun>& runs) {
  if (runs.empty()) throw ConfigError("--bench: expected at least one benchmark JSON file");
  if (runs.size() == 1) return runs[0];
  BenchRun out = runs[0];
  out.samples.clear();
  out.skipped.clear();
  using Key = std::tuple<int, int32_t, int32_t, int32_t, int64_t, int64_t>;
  std::map<Key, std::pair<BenchSample, size_t>> best;
  std::vector<int> kept(runs.size(), 0);
  for (size_t r = 0; r < runs.size(); ++r) {
    const BenchRun& run = runs[r];
    if (run.model != out.model || run.backend != out.backend) {
      throw ConfigError(run.source + ": model \"" + run.model + "\" on backend " + run.backend +
                        ", but " + runs[0].source + " is model \"" + out.model + "\" on backend " +
                        out.backend +
                        ": the faster-per-shape merge takes one model on one kind of device");
    }
    for (const auto& s : run.skipped) out.skipped.push_back(run.source + ": " + s);
    for (const auto& s : run.samples) {
      const auto& p = s.point;
      const Key k{static_cast<int>(p.kind), p.sessions, p.q_len, p.ctx, p.window, p.sinks};
      auto it = best.find(k);
      if (it == best.end() || s.seconds < it->second.first.seconds) best[k] = {s, r};
    }
  }
  for (const auto& [k, v] : best) {
    out.samples.push_back(v.first);
    ++kept[v.second];
  }
  std::string protocol = "faster per shape of " + std::to_string(runs.size()) + " runs:";
  for (size_t r = 0; r < runs.size(); ++r) {
    protocol += " [" + runs[r].source + ", kept on " + std::to_string(kept[r]) + " of " +
                std::to_string(best.size()) + " shapes: " + runs[r].protocol + "]";
    if (r > 0) out.device += " + " + runs[r].device;
  }
  out.protocol = protocol;
  out.source = runs[0].source;
  for (size_t r = 1; r < runs.size(); ++r) out.source += " + " + runs[r].source;
  return out;
}

}  // namespace metronome::calibrate
