#include "sim/sweep/sweep_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "base/config_error.h"
#include "base/json_file.h"
#include "base/output_dir.h"
#include "base/output_file.h"
#include "base/output_number.h"
#include "base/progress.h"
#include "base/version.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/step_time.h"
#include "sim/engine/engine.h"
#include "sim/sweep/wilson.h"

namespace metronome {
namespace {

using ojson = nlohmann::ordered_json;

ojson opt(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }
ojson finite(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

std::string axis_column(const GridAxis& a) { return "grid." + a.key; }

// The first-order prediction depends on the seed only through random arrivals or durations.
bool seed_free_schedule(const Scenario& s) {
  return !s.workload.arrival.random() && s.workload.duration.fixed_s().has_value();
}

// The cost models of a sweep's points: one per distinct model, GPU and cost_model section, built
// once and shared by every run of every point using it (a CostModel is immutable, so the worker
// threads share it). Each point's step bounds are still checked against its own workload.
struct PointCosts {
  std::vector<std::shared_ptr<const CostModel>> of_point;
  std::string label;  // the distinct labels, "; " between them: the sweep's "cost_model"
};

PointCosts cost_models_of(const std::vector<Scenario>& points) {
  PointCosts c;
  std::map<std::string, std::shared_ptr<const CostModel>> built;
  for (const Scenario& p : points) {
    const nlohmann::json j = to_json(p);
    const std::string key = j["model"].dump() + j["gpu"].dump() + j["cost_model"].dump();
    auto it = built.find(key);
    if (it == built.end()) {
      it = built.emplace(key, make_unchecked_cost_model(p)).first;
      c.label += (c.label.empty() ? "" : "; ") + it->second->label();
    }
    check_step_bounds(p, *it->second);
    c.of_point.push_back(it->second);
  }
  return c;
}

ojson row_for(const SweepSpec& spec, int64_t run, Scenario s, const CostModel& cost,
              const std::optional<FirstOrderPrediction>& cached = std::nullopt) {
  s.seed = spec.seed_of(run);
  const auto p = cached ? *cached : predict_first_order(s);
  const RunResult r = simulate(s, cost, p.pool);
  const auto frac = [](int64_t a, int64_t b) {
    return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  ojson row;
  row["run"] = run;
  row["point"] = spec.point_of(run);
  row["seed"] = s.seed;
  const auto values = spec.values_of(spec.point_of(run));
  for (size_t i = 0; i < spec.axes.size(); ++i) row[axis_column(spec.axes[i])] = values[i];
  row["crashed"] = r.crashed();
  row["first_stall_s"] = opt(r.first_stall_s);
  row["t_sat_predicted_s"] = opt(p.t_sat_blocks_s);
  row["sessions_arrived"] = r.sessions_arrived;
  row["sessions_rejected"] = r.sessions_rejected;
  row["peak_live_sessions"] = r.peak_live_sessions;
  row["preemptions"] = r.preemptions;
  row["n_star"] = opt(r.admission.n_star);
  {
    std::string flags;
    for (const auto& f : r.admission.flags) flags += (flags.empty() ? "" : "+") + f;
    row["admission_flags"] = flags;
  }
  row["cap_p5"] = opt(r.admission.cap_p5);
  row["cap_p95"] = opt(r.admission.cap_p95);
  row["frames_due"] = r.frames_due;
  row["frames_silent"] = r.frames_silent;
  row["silent_frame_fraction"] = frac(r.frames_silent, r.frames_due);
  row["goodput_frames_per_s"] = r.end_s > 0 ? static_cast<double>(r.frames_on_time) / r.end_s : 0.0;
  row["reported_p50_ms"] = finite(1e3 * r.reported_latency.output_percentile(0.50));
  row["reported_p99_ms"] = finite(1e3 * r.reported_latency.output_percentile(0.99));
  row["true_p50_ms"] = finite(1e3 * r.true_latency.output_percentile(0.50));
  row["true_p99_ms"] = finite(1e3 * r.true_latency.output_percentile(0.99));
  row["pool_peak_fraction"] = frac(r.peak_pool_blocks, p.pool.num_blocks);
  row["engine_busy_fraction"] = r.end_s > 0 ? r.busy_s / r.end_s : 0.0;
  // Rounded here, not when written: aggregates are computed from the rows as runs.jsonl holds
  // them, so a merged set of shards aggregates to the same bytes as one process.
  round_output(row);
  return row;
}

// Nearest-rank quantile of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

std::vector<double> column(const std::vector<ojson>& rows, const char* key) {
  std::vector<double> v;
  for (const auto& r : rows) {
    if (r.contains(key) && r[key].is_number()) v.push_back(r[key].get<double>());
  }
  std::sort(v.begin(), v.end());
  return v;
}

ojson stat(const std::vector<double>& v, double q) {
  return v.empty() ? ojson(nullptr) : ojson(quantile(v, q));
}
ojson mean(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

std::string csv_cell(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  if (v.is_object() || v.is_array()) return csv_cell(ojson(v.dump()));
  return v.dump();
}

std::string csv_header(const ojson& row) {
  std::string line;
  for (const auto& [k, v] : row.items()) {
    if (!line.empty()) line += ',';
    line += csv_cell(ojson(k));
  }
  line += '\n';
  return line;
}

std::string csv_line(const ojson& row) {
  std::string line;
  bool first = true;
  for (const auto& [k, v] : row.items()) {
    if (!first) line += ',';
    line += csv_cell(v);
    first = false;
  }
  line += '\n';
  return line;
}

// A file written whole: to a temporary name, then renamed, so readers never see half of it and a
// failed write never replaces the previous good file.
void write_whole(const std::string& path, const std::string& text) {
  write_file_atomically(path, text, path.substr(path.find_last_of('/') + 1));
}

// The files a finished sweep leaves besides its marker, sweep.json (OutputDir::kMarkers); removed
// with it when a new sweep opens the folder, so that an interrupted rerun cannot leave the old
// "complete": true beside its partial rows.
const std::vector<std::string> kSummaryFiles = {"aggregate.json", "aggregate.csv", "scenario.json"};

// Row streams: the header goes with the first row, every row is handed to the kernel whole, and
// every write is checked.
class RowWriter {
 public:
  explicit RowWriter(const OutputDir& dir)
      : jsonl_(dir.file("runs.jsonl"), "runs.jsonl"), csv_(dir.file("runs.csv"), "runs.csv") {}
  void write(const ojson& row) {
    std::string csv = csv_line(row);
    if (!header_done_) {
      csv = csv_header(row) + csv;
      header_done_ = true;
    }
    jsonl_.write(row.dump() + "\n");
    jsonl_.flush();
    csv_.write(csv);
    csv_.flush();
  }
  void close() {
    jsonl_.close();
    csv_.close();
  }

 private:
  OutputFile jsonl_, csv_;
  bool header_done_ = false;
};

// `scenario` is the resolved scenario's text, read before the folder was opened: the folder may
// have held the file it came from.
void write_summary_files(const SweepSpec& spec, const std::string& scenario, const std::string& dir,
                         const Shard& shard, int64_t planned, const std::vector<ojson>& rows,
                         bool complete, bool with_aggregate, const std::string& cost_label) {
  ojson meta;
  meta["metronome_version"] = version_string();
  meta["cost_model"] = cost_label;
  meta["spec"] = spec.to_json();
  meta["points"] = spec.points();
  meta["runs_total"] = spec.runs();
  if (shard.count > 1) meta["shard"] = fmt::format("{}/{}", shard.index, shard.count);
  meta["runs_planned"] = planned;
  meta["runs_written"] = static_cast<int64_t>(rows.size());
  meta["complete"] = complete;
  write_whole(dir + "/scenario.json", scenario);
  // sweep.json, the completion marker, goes last.
  if (!with_aggregate) {
    write_whole(dir + "/sweep.json", output_text(meta) + "\n");
    return;
  }
  // Aggregate every point whose seeds are all present.
  const auto nseeds = static_cast<size_t>(spec.seeds.size());
  ojson agg = ojson::array();
  std::string csv;
  std::vector<ojson> group;
  int64_t current = -1;
  auto flush = [&] {
    if (group.size() == nseeds) {
      ojson a = aggregate_point(spec, current, group);
      round_output(a);
      if (csv.empty()) csv = csv_header(a);
      csv += csv_line(a);
      agg.push_back(std::move(a));
    }
    group.clear();
  };
  for (const auto& r : rows) {
    const int64_t point = r["point"].get<int64_t>();
    if (point != current) {
      flush();
      current = point;
    }
    group.push_back(r);
  }
  flush();
  // No point complete (a sweep stopped early): the header alone, from a point of no runs.
  if (csv.empty()) csv = csv_header(aggregate_point(spec, 0, {}));
  write_whole(dir + "/aggregate.json", output_text(agg) + "\n");
  write_whole(dir + "/aggregate.csv", csv);
  write_whole(dir + "/sweep.json", output_text(meta) + "\n");
}

}  // namespace

ojson run_row(const SweepSpec& spec, int64_t run) {
  const Scenario s = spec.load_point(spec.point_of(run));
  return row_for(spec, run, s, *make_cost_model(s));
}

ojson aggregate_point(const SweepSpec& spec, int64_t point, const std::vector<ojson>& rows) {
  ojson a;
  a["point"] = point;
  const auto values = spec.values_of(point);
  for (size_t i = 0; i < spec.axes.size(); ++i) a[axis_column(spec.axes[i])] = values[i];
  const auto n = static_cast<int64_t>(rows.size());
  int64_t crashes = 0;
  for (const auto& r : rows) crashes += r["crashed"].get<bool>() ? 1 : 0;
  const Interval w = wilson_interval(crashes, n);
  a["runs"] = n;
  a["crashes"] = crashes;
  a["crash_probability"] = n > 0 ? static_cast<double>(crashes) / static_cast<double>(n) : 0.0;
  a["crash_wilson95_lo"] = w.lo;
  a["crash_wilson95_hi"] = w.hi;
  const auto stall = column(rows, "first_stall_s");
  const auto pred = column(rows, "t_sat_predicted_s");
  a["t_sat_mean_s"] = mean(stall);
  a["t_sat_p5_s"] = stat(stall, 0.05);
  a["t_sat_p95_s"] = stat(stall, 0.95);
  a["t_sat_predicted_mean_s"] = mean(pred);
  a["t_sat_error_of_mean"] =
      stall.empty() || pred.empty()
          ? ojson(nullptr)
          : ojson(mean(stall).get<double>() / mean(pred).get<double>() - 1.0);
  const auto nstar = column(rows, "n_star");
  a["n_star_median"] = stat(nstar, 0.5);
  a["n_star_p5"] = stat(nstar, 0.05);
  a["n_star_p95"] = stat(nstar, 0.95);
  a["n_star_min"] = stat(nstar, 0.0);
  a["n_star_max"] = stat(nstar, 1.0);
  // Runs whose N* is not a schedulable concurrency (stalled, collapsed, missed deadlines).
  int64_t flagged = 0;
  for (const auto& r : rows) flagged += r["admission_flags"].get<std::string>().empty() ? 0 : 1;
  a["admission_flagged_runs"] = flagged;
  const auto rp50 = column(rows, "reported_p50_ms");
  const auto rp99 = column(rows, "reported_p99_ms");
  const auto tp99 = column(rows, "true_p99_ms");
  a["reported_p50_median_ms"] = stat(rp50, 0.5);
  a["reported_p99_median_ms"] = stat(rp99, 0.5);
  {
    // Over every run, a censored p99 (frames never answered) ranking above any number: the
    // median of the uncensored runs alone would leave out the worst.
    std::vector<double> all = tp99;
    all.resize(rows.size(), std::numeric_limits<double>::infinity());
    const ojson m = stat(all, 0.5);
    a["true_p99_median_ms"] = m.is_number() && std::isfinite(m.get<double>()) ? m : ojson(nullptr);
  }
  a["true_p99_censored_runs"] = n - static_cast<int64_t>(tp99.size());
  a["goodput_frames_per_s_mean"] = mean(column(rows, "goodput_frames_per_s"));
  a["silent_frame_fraction_mean"] = mean(column(rows, "silent_frame_fraction"));
  a["sessions_rejected_mean"] = mean(column(rows, "sessions_rejected"));
  a["peak_live_sessions_mean"] = mean(column(rows, "peak_live_sessions"));
  return a;
}

std::vector<std::string> grid_warnings(const std::vector<Scenario>& points) {
  std::vector<std::pair<std::string, std::vector<size_t>>> seen;  // in first-seen order
  for (size_t p = 0; p < points.size(); ++p) {
    for (const auto& w : points[p].warnings) {
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& e) { return e.first == w; });
      if (it == seen.end()) {
        seen.push_back({w, {p}});
      } else if (it->second.back() != p) {
        it->second.push_back(p);
      }
    }
  }
  std::vector<std::string> out;
  for (const auto& [w, at] : seen) {
    if (at.size() == points.size()) {
      out.push_back(w);
      continue;
    }
    std::string list;
    for (size_t i = 0; i < at.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(at[i]);
    if (at.size() > 8) list += ", ...";
    out.push_back(fmt::format("{} (grid point{} {} of {})", w, at.size() == 1 ? "" : "s", list,
                              points.size()));
  }
  return out;
}

SweepOutcome run_sweep(const SweepSpec& spec, const SweepOptions& o) {
  if (spec.seeds.empty()) throw ConfigError("sweep: no seeds (use --seeds N or --seeds a..b)");
  if (o.out_dir.empty()) throw ConfigError("sweep: --out DIR is required");
  spec.check_limits();
  const auto stopped = [&] { return o.stop && o.stop->load(); };
  // Load and validate every grid point before running anything (or touching the output folder).
  std::vector<Scenario> points;
  std::vector<std::optional<FirstOrderPrediction>> predictions;
  for (int64_t p = 0; p < spec.points(); ++p) {
    // Stopped while loading: no worker starts a run (the flag stays set), and the files below
    // say so.
    if (stopped()) break;
    points.push_back(spec.load_point(p));
    predictions.emplace_back();
    if (seed_free_schedule(points.back())) predictions.back() = predict_first_order(points.back());
  }
  if (o.warn && !stopped()) {
    for (const auto& w : grid_warnings(points)) o.warn(w);
  }
  const PointCosts costs = cost_models_of(points);
  std::vector<int64_t> mine;
  for (int64_t r = 0; r < spec.runs(); ++r) {
    if (o.shard.owns(r)) mine.push_back(r);
  }
  const std::string scenario = to_json(load_scenario(spec.scenario, spec.sets)).dump(2) + "\n";
  const OutputDir dir(o.out_dir, "--out", kSummaryFiles);
  RowWriter writer(dir);

  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int jobs = std::max(1, std::min<int>(o.jobs > 0 ? o.jobs : hw,
                                             static_cast<int>(std::max<size_t>(1, mine.size()))));
  std::vector<std::optional<ojson>> done(mine.size());
  const auto progress =
      o.progress ? stderr_progress("sweep", static_cast<int64_t>(mine.size()), "runs") : nullptr;
  std::mutex m;
  std::condition_variable cv;
  std::atomic<size_t> next{0};
  std::atomic<bool> abort{false};  // the writer failed (a full disk): take no new runs
  std::exception_ptr error;
  size_t finished_workers = 0;
  auto worker = [&] {
    while (true) {
      if ((o.stop && o.stop->load()) || abort.load()) break;
      const size_t i = next.fetch_add(1);
      if (i >= mine.size()) break;
      std::optional<ojson> row;
      try {
        const auto point = static_cast<size_t>(spec.point_of(mine[i]));
        row = row_for(spec, mine[i], points[point], *costs.of_point[point], predictions[point]);
      } catch (...) {
        std::lock_guard lock(m);
        if (!error) error = std::current_exception();
        break;
      }
      {
        std::lock_guard lock(m);
        done[i] = std::move(row);
        cv.notify_one();
      }
      if (progress)
        progress->add();  // counted as runs finish, not as the in-order writer gets them
    }
    std::lock_guard lock(m);
    ++finished_workers;
    cv.notify_one();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t) threads.emplace_back(worker);

  // The calling thread writes rows in run order as soon as each prefix is complete.
  std::vector<ojson> written;
  size_t w = 0;
  {
    std::unique_lock lock(m);
    while (true) {
      while (w < done.size() && done[w]) {
        ojson row = std::move(*done[w]);
        done[w].reset();
        lock.unlock();
        try {
          writer.write(row);
        } catch (...) {
          // Stop the workers and join them before the error leaves: a joinable std::thread
          // destroyed by unwinding would terminate the process.
          abort.store(true);
          for (auto& t : threads) t.join();
          throw;
        }
        written.push_back(std::move(row));
        ++w;
        lock.lock();
      }
      if (w == done.size() || finished_workers == static_cast<size_t>(jobs)) break;
      cv.wait(lock);
    }
  }
  for (auto& t : threads) t.join();
  // Runs that finished after the writer stopped waiting (a stop or an error): write the prefix.
  while (w < done.size() && done[w]) {
    writer.write(*done[w]);
    written.push_back(std::move(*done[w]));
    ++w;
  }
  if (progress) progress->finish();
  writer.close();
  if (error) std::rethrow_exception(error);
  SweepOutcome out;
  out.planned = static_cast<int64_t>(mine.size());
  out.written = static_cast<int64_t>(written.size());
  out.complete = out.written == out.planned;
  write_summary_files(spec, scenario, o.out_dir, o.shard, out.planned, written, out.complete,
                      o.shard.count == 1, costs.label);
  return out;
}

namespace {

// A shard's rows as row_for wrote them: the first row's fields in every row, point and seed those
// of the run, and each result null or a number >= 0 (a hand-edited or foreign row is refused, never
// copied into the merge and its aggregates).
void check_merged_rows(const SweepSpec& spec, const std::map<int64_t, ojson>& rows) {
  if (rows.empty()) return;
  std::set<std::string> axes;
  for (const auto& a : spec.axes) axes.insert(axis_column(a));
  std::vector<std::string> fields;
  for (const auto& [k, v] : rows.begin()->second.items()) fields.push_back(k);
  for (const auto& [run, row] : rows) {
    const std::string where = fmt::format("sweep-merge: run {}", run);
    std::vector<std::string> keys;
    for (const auto& [k, v] : row.items()) keys.push_back(k);
    if (keys != fields) {
      throw ConfigError(where + ": its fields differ from run " +
                        std::to_string(rows.begin()->first) +
                        "'s; expected the rows of one sweep, as it wrote them");
    }
    if (run >= spec.runs() || !row.contains("point") || row.at("point") != spec.point_of(run) ||
        !row.contains("seed") || row.at("seed") != spec.seed_of(run)) {
      throw ConfigError(where + ": point or seed is not that run's in this sweep");
    }
    for (const auto& [k, v] : row.items()) {
      if (k == "run" || k == "point" || k == "seed" || axes.count(k)) continue;
      const char* want = k == "crashed"           ? "true or false"
                         : k == "admission_flags" ? "a string"
                                                  : "null or a number >= 0";
      const bool ok = k == "crashed"           ? v.is_boolean()
                      : k == "admission_flags" ? v.is_string()
                                               : v.is_null() || (v.is_number() && v >= 0);
      if (!ok) throw ConfigError(where + ": " + k + ": expected " + want + ", got " + v.dump());
    }
  }
}

}  // namespace

void merge_sweeps(const std::vector<std::string>& dirs, const std::string& out_dir) {
  if (dirs.empty()) throw ConfigError("sweep-merge: no shard directories given");
  // Writing the merge into a shard would replace the shard's own files, and lose its runs.
  for (const auto& d : dirs) {
    std::error_code ec;
    if (std::filesystem::equivalent(d, out_dir, ec)) {
      throw ConfigError("sweep-merge --out " + out_dir + ": is the shard directory " + d +
                        "; expected a directory of its own");
    }
  }
  std::optional<ojson> spec_json;
  // The scenario the shards ran, as each resolved it when it started: the spec names a file, which
  // may have changed between shards, or be relative to another folder than this one.
  std::string scenario;
  std::string cost_label;  // the shards ran the same spec, so the same cost models
  std::map<int64_t, ojson> rows;
  // A spec names its scenario by the path its shard was given (from another folder, or spelled
  // otherwise): the file each shard ran is compared below, as it resolved it, not the path.
  const auto beside_path = [](ojson spec) {
    if (spec.is_object()) spec.erase("scenario");
    return spec;
  };
  for (const auto& d : dirs) {
    if (!std::filesystem::exists(d + "/sweep.json"))
      throw ConfigError(d + ": no sweep.json (not a sweep output directory)");
    const ojson meta =
        parse_ordered_json(read_text_file(d + "/sweep.json", "sweep summary"), d + "/sweep.json");
    if (!spec_json) {
      spec_json = meta["spec"];
      if (meta.contains("cost_model") && meta["cost_model"].is_string())
        cost_label = meta["cost_model"].get<std::string>();
    } else if (beside_path(meta["spec"]) != beside_path(*spec_json)) {
      throw ConfigError(d + ": a different sweep (its spec differs from " + dirs.front() + ")");
    }
    const std::string ran = read_text_file(d + "/scenario.json", "shard's resolved scenario");
    if (scenario.empty()) {
      scenario = ran;
    } else if (ran != scenario) {
      throw ConfigError(d + "/scenario.json: another scenario than " + dirs.front() +
                        "/scenario.json (the file changed between shards); expected shards of "
                        "one sweep of one scenario");
    }
    std::error_code ec;
    if (!std::filesystem::exists(d + "/runs.jsonl", ec)) throw ConfigError(d + ": no runs.jsonl");
    require_regular_file(d + "/runs.jsonl", "sweep rows");
    std::ifstream in(d + "/runs.jsonl");
    if (!in) throw ConfigError(d + ": cannot open runs.jsonl");
    std::string line;
    int64_t lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.empty()) continue;
      ojson row;
      try {
        row = parse_ordered_json(line, d + "/runs.jsonl");
      } catch (const ConfigError&) {
        throw ConfigError(fmt::format("{}/runs.jsonl:{}: a torn or invalid row", d, lineno));
      }
      if (!row.is_object() || !row.contains("run") || !row["run"].is_number_integer()) {
        throw ConfigError(
            fmt::format("{}/runs.jsonl:{}: a row without an integer \"run\"", d, lineno));
      }
      const int64_t run = row["run"].get<int64_t>();
      if (!rows.emplace(run, std::move(row)).second) {
        throw ConfigError(fmt::format("{}: run {} also appears in another shard", d, run));
      }
    }
  }
  SweepSpec spec;
  spec.scenario = (*spec_json)["scenario"].get<std::string>();
  spec.sets = (*spec_json)["set"].get<std::vector<std::string>>();
  for (const auto& ax : (*spec_json)["grid"]) {
    GridAxis a;
    a.key = ax["key"].get<std::string>();
    for (const auto& v : ax["values"]) a.values.push_back(nlohmann::json::parse(v.dump()));
    spec.axes.push_back(std::move(a));
  }
  spec.seeds = (*spec_json)["seeds"].get<std::vector<uint64_t>>();
  check_merged_rows(spec, rows);
  for (int64_t r = 0; r < spec.runs(); ++r) {
    if (!rows.count(r)) {
      throw ConfigError(
          fmt::format("sweep-merge: run {} of {} is missing (a shard not given, or "
                      "interrupted)",
                      r, spec.runs()));
    }
  }
  const OutputDir dir(out_dir, "sweep-merge --out", kSummaryFiles);
  std::vector<ojson> all;
  {
    RowWriter writer(dir);
    for (auto& [run, row] : rows) {
      writer.write(row);
      all.push_back(std::move(row));
    }
    writer.close();
  }
  write_summary_files(spec, scenario, out_dir, Shard{}, spec.runs(), all, true, true, cost_label);
}

}  // namespace metronome
