#include "replay/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/config_error.h"
#include "base/output_file.h"
#include "base/output_number.h"
#include "base/version.h"
#include "sim/analysis/report.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/output/latency_histogram.h"
#include "sim/output/time_series_writer.h"

namespace metronome::replay {
namespace {

using nlohmann::json;

constexpr double kMaxCpuPoolBytes = 4.0 * (1 << 30);  // refuse a host KV pool beyond 4 GiB

json opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}
std::optional<double> finite(double v) {
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}
double frac(int64_t a, int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

// Saturation as the measured side states it: the release time of the first frame refused blocks.
std::optional<double> measured_t_sat(const ReplayRun& r) {
  return r.measured.first_stall_release_s;
}

// A side of the replay: the run's result as simulate writes it, plus the engine's step times.
json side_json(const RunResult& x) {
  json j = run_result_json(x);
  j.update({{"frames_reported_late", x.frames_reported_late},
            {"busy_s", x.busy_s},
            {"mean_step_ms",
             x.engine_steps > 0 ? 1e3 * x.busy_s / static_cast<double>(x.engine_steps) : 0.0}});
  return j;
}

std::string secs(const std::optional<double>& v) {
  return v ? fmt::format("{:.3f} s", *v) : std::string("never");
}
std::string ms(double v) {
  if (std::isnan(v)) return "none (no frames)";
  return std::isfinite(v) ? fmt::format("{:.1f} ms", v * 1e3) : "censored";
}
std::string err(const std::optional<double>& e) {
  return e ? fmt::format("{:+.1f}%", 100 * *e) : std::string("-");
}

}  // namespace

std::optional<double> relative_error(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || !std::isfinite(*a) || !std::isfinite(*b) || *b == 0) return std::nullopt;
  return (*a - *b) / *b;
}

ReplayRun replay(const Scenario& real, const Scenario& simulated, const std::string& backend_name) {
  ReplayRun r;
  r.real = real;
  r.simulated = simulated;
  check_replay_bounds(real);  // before the prediction, which is linear in the callers
  r.prediction = predict_first_order(real);
  // Every input is checked before the wall-clock run: the calibration file (loaded and matched to
  // the model here), and the compute one frame costs by it. A step that outlives the horizon would
  // hold the wall clock that long (Moshi on the cpu backend: minutes for a 2 s run).
  auto cost = make_cost_model(simulated);
  {
    PassShape first;
    first.sessions = 1;
    first.query_tokens = std::max<int64_t>(
        1, real.workload.input_tokens_per_frame + real.workload.growth().prompt_at(0));
    first.qk_pairs =
        0.5 * static_cast<double>(first.query_tokens) * static_cast<double>(first.query_tokens + 1);
    const double t = cost->pass_seconds(first);
    if (!(t <= real.horizon_s)) {
      throw ConfigError(fmt::format(
          "{}: one session's first frame costs {:.3g} s by {}, longer than horizon_s = {:g}; "
          "expected a model the {} backend runs in real time (tiny) or a longer horizon",
          real.source, t, cost->label(), real.horizon_s, backend_name));
    }
  }
  const int64_t blocks = r.prediction.pool.num_blocks;
  if (blocks > std::numeric_limits<int32_t>::max()) {
    throw ConfigError(real.source +
                      ": the real engine's pool holds at most 2^31 - 1 blocks; set "
                      "engine.num_blocks (or --num-blocks)");
  }
  if (backend_name == "cpu") {
    // Host floats: layers x (K, V) x blocks x block_size x kv_heads x head_dim x 4 bytes.
    const double bytes =
        2.0 * 4.0 *
        static_cast<double>(real.model.layers * real.model.kv_heads * real.model.head_dim) *
        static_cast<double>(blocks * real.engine.block_size);
    if (bytes > kMaxCpuPoolBytes) {
      throw ConfigError(fmt::format(
          "{}: the cpu backend would allocate {:.1f} GiB of host memory for {} blocks of {}; "
          "expected at most {:.0f} GiB (fewer blocks with --num-blocks{})",
          real.source, bytes / (1 << 30), blocks, real.model.name, kMaxCpuPoolBytes / (1 << 30),
          real.model.name == "tiny" ? "" : ", or a small model such as tiny"));
    }
  }
  {
    BackendConfig bc;
    bc.model = model_shape(real.model);
    bc.window = replayed_window(real);
    bc.num_blocks = static_cast<int32_t>(r.prediction.pool.num_blocks);
    bc.block_size = static_cast<int32_t>(real.engine.block_size);
    bc.seed = real.seed;
    auto backend = make_backend(backend_name, bc);
    WallClock clock;
    RealtimeEngine engine(real, *backend, clock);
    r.measured = engine.run();
  }
  r.cost_label = cost->label();
  SampleCollector samples;
  Engine engine(simulated, *cost, &samples);
  r.sim = engine.run();
  r.simulated_samples = std::move(samples.samples);
  return r;
}

json replay_json(const ReplayRun& r) {
  const auto& m = r.measured;
  const auto& p = r.prediction;
  const std::optional<double> t_meas = measured_t_sat(r);
  auto lat_err = [&](const LatencyHistogram& a, const LatencyHistogram& b) {
    json j;
    for (auto [name, q] :
         {std::pair{"p50", 0.50}, std::pair{"p95", 0.95}, std::pair{"p99", 0.99}}) {
      j[name] = opt(relative_error(finite(b.output_percentile(q)), finite(a.output_percentile(q))));
    }
    return j;
  };
  const double silent_m = frac(m.run.frames_silent, m.run.frames_due);
  const double silent_s = frac(r.sim.frames_silent, r.sim.frames_due);
  const auto e_sim = relative_error(r.sim.first_stall_s, t_meas);
  json j = {
      {"kind", "metronome.replay"},
      {"version", version_string()},
      {"scenario", to_json(r.real)},
      {"backend", {{"name", m.backend}, {"device", m.device}, {"kv_pool_bytes", m.kv_pool_bytes}}},
      {"cost_model", r.cost_label},
      {"prediction", prediction_json(r.real, p)},
      {"saturation",
       {{"measured_s", opt(t_meas)},
        {"measured_wall_s", opt(m.run.first_stall_s)},
        {"measured_frame", m.first_stall_frame ? json(*m.first_stall_frame) : json(nullptr)},
        {"simulated_s", opt(r.sim.first_stall_s)},
        {"first_order_blocks_s", opt(p.t_sat_blocks_s)},
        {"first_order_continuous_s", opt(p.t_sat_continuous_s)},
        {"simulated_vs_measured", opt(e_sim)},
        {"first_order_blocks_vs_measured", opt(relative_error(p.t_sat_blocks_s, t_meas))},
        {"first_order_continuous_vs_measured", opt(relative_error(p.t_sat_continuous_s, t_meas))}}},
      {"measured", side_json(m.run)},
      {"measured_engine",
       {{"max_start_lag_ms", 1e3 * m.max_start_lag_s},
        {"steps", static_cast<int64_t>(m.steps.size())},
        {"busy_cpu_s", m.busy_cpu_s},
        {"mean_step_cpu_ms",
         m.steps.empty() ? 0.0 : 1e3 * m.busy_cpu_s / static_cast<double>(m.steps.size())}}},
      {"simulated", side_json(r.sim)},
      {"errors",
       {{"reported_latency", lat_err(m.run.reported_latency, r.sim.reported_latency)},
        {"true_latency", lat_err(m.run.true_latency, r.sim.true_latency)},
        {"silent_frame_fraction_difference", silent_s - silent_m},
        {"mean_step",
         opt(relative_error(
             r.sim.engine_steps > 0
                 ? std::optional(r.sim.busy_s / static_cast<double>(r.sim.engine_steps))
                 : std::nullopt,
             m.run.engine_steps > 0
                 ? std::optional(m.run.busy_s / static_cast<double>(m.run.engine_steps))
                 : std::nullopt))}}},
      {"agreement",
       {{"crash_outcome_same", m.run.crashed() == r.sim.crashed()},
        {"saturation_within_10pct",
         m.run.crashed() == r.sim.crashed() &&
             (!m.run.crashed() || (e_sim && std::abs(*e_sim) <= 0.10))}}},
  };
  return j;
}

std::string replay_text(const ReplayRun& r) {
  const auto& m = r.measured;
  const auto& p = r.prediction;
  const std::optional<double> t_meas = measured_t_sat(r);
  std::string o;
  o += fmt::format("scenario   {} ({} on the {} backend: {})\n", r.real.name, r.real.model.name,
                   m.backend, m.device);
  o += fmt::format(
      "pool       {} blocks x {} tokens, real memory {:.1f} MiB of KV; {} sessions, "
      "frame every {:.3f} s\n",
      p.pool.num_blocks, r.real.engine.block_size, static_cast<double>(m.kv_pool_bytes) / (1 << 20),
      p.sessions, r.real.workload.frame_period_s);
  o += fmt::format("simulated  with {}\n", r.cost_label);
  o += fmt::format("{:<24}{:>14}{:>14}{:>10}\n", "", "measured", "simulated", "error");
  o += fmt::format("{:<24}{:>14}{:>14}{:>10}\n", "crashed", m.run.crashed() ? "yes" : "no",
                   r.sim.crashed() ? "yes" : "no",
                   m.run.crashed() == r.sim.crashed() ? "same" : "DIFFER");
  o += fmt::format("{:<24}{:>14}{:>14}{:>10}\n", "saturation", secs(t_meas),
                   secs(r.sim.first_stall_s), err(relative_error(r.sim.first_stall_s, t_meas)));
  o += fmt::format("{:<24}{:>14}\n", "  (wall clock)", secs(m.run.first_stall_s));
  o += fmt::format("{:<24}{:>14}{:>14}{:>10}\n", "  first-order blocks", "", secs(p.t_sat_blocks_s),
                   err(relative_error(p.t_sat_blocks_s, t_meas)));
  o += fmt::format("{:<24}{:>14}{:>14}{:>10}\n", "  first-order continuous", "",
                   secs(p.t_sat_continuous_s), err(relative_error(p.t_sat_continuous_s, t_meas)));
  auto lat_rows = [&](const char* what, const LatencyHistogram& a, const LatencyHistogram& b) {
    for (auto [name, q] :
         {std::pair{"p50", 0.50}, std::pair{"p95", 0.95}, std::pair{"p99", 0.99}}) {
      o += fmt::format(
          "{:<24}{:>14}{:>14}{:>10}\n", fmt::format("{} latency {}", what, name),
          ms(a.output_percentile(q)), ms(b.output_percentile(q)),
          err(relative_error(finite(b.output_percentile(q)), finite(a.output_percentile(q)))));
    }
  };
  lat_rows("reported", m.run.reported_latency, r.sim.reported_latency);
  lat_rows("true", m.run.true_latency, r.sim.true_latency);
  const double sm = frac(m.run.frames_silent, m.run.frames_due);
  const double ss = frac(r.sim.frames_silent, r.sim.frames_due);
  o += fmt::format("{:<24}{:>13.1f}%{:>13.1f}%{:>+9.1f}pt\n", "silent frames", 100 * sm, 100 * ss,
                   100 * (ss - sm));
  o += fmt::format("{:<24}{:>14}{:>14}\n", "frames due / served",
                   fmt::format("{}/{}", m.run.frames_due, m.run.frames_served),
                   fmt::format("{}/{}", r.sim.frames_due, r.sim.frames_served));
  o += fmt::format("{:<24}{:>14}{:>14}\n", "peak pool blocks", m.run.peak_pool_blocks,
                   r.sim.peak_pool_blocks);
  const double ms_m =
      m.run.engine_steps ? m.run.busy_s / static_cast<double>(m.run.engine_steps) : 0;
  const double ms_s =
      r.sim.engine_steps ? r.sim.busy_s / static_cast<double>(r.sim.engine_steps) : 0;
  o += fmt::format("{:<24}{:>14}{:>14}{:>10}\n", "steps, mean step wall",
                   fmt::format("{}, {}", m.run.engine_steps, ms(ms_m)),
                   fmt::format("{}, {}", r.sim.engine_steps, ms(ms_s)),
                   err(relative_error(ms_s, ms_m)));
  const double cpu_m = m.steps.empty() ? 0 : m.busy_cpu_s / static_cast<double>(m.steps.size());
  o += fmt::format("{:<24}{:>14}{:>14}{:>10}\n", "  mean step, thread CPU", ms(cpu_m), ms(ms_s),
                   err(relative_error(ms_s, cpu_m)));
  o += fmt::format(
      "engine lag: the oldest frame of a step waited at most {} before the step began\n",
      ms(m.max_start_lag_s));
  return o;
}

void write_replay_dir(const ReplayRun& r, const std::string& dir) {
  {
    TimeSeriesWriter w(dir + "/measured.csv");
    for (const auto& x : r.measured.samples) w.on_sample(x);
    w.close();
  }
  {
    TimeSeriesWriter w(dir + "/simulated.csv");
    for (const auto& x : r.simulated_samples) w.on_sample(x);
    w.close();
  }
  {
    OutputFile f(dir + "/frames.csv", "frames.csv");
    f << "session,frame,release_s,served_s,latency_ms\n";
    for (const auto& x : r.measured.frames) {
      if (x.served == kNever) {
        f << fmt::format("{},{},{:.6f},,\n", x.session, x.frame, to_seconds(x.release));
      } else {
        f << fmt::format("{},{},{:.6f},{:.6f},{:.3f}\n", x.session, x.frame, to_seconds(x.release),
                         to_seconds(x.served), to_seconds(x.served - x.release) * 1e3);
      }
    }
    f.close();
  }
  {
    OutputFile f(dir + "/steps.csv", "steps.csv");
    f << "start_s,end_s,cpu_ms,sessions,query_tokens,passes\n";
    for (const auto& x : r.measured.steps) {
      f << fmt::format("{:.6f},{:.6f},{:.3f},{},{},{}\n", to_seconds(x.start), to_seconds(x.end),
                       to_seconds(x.cpu) * 1e3, x.sessions, x.query_tokens, x.passes);
    }
    f.close();
  }
  {
    OutputFile f(dir + "/pool.csv", "pool.csv");
    f << "t_s,pool_used_blocks,live_sessions,stalled_sessions\n";
    for (const auto& x : r.measured.pool) {
      f << fmt::format("{:.6f},{},{},{}\n", to_seconds(x.t), x.used_blocks, x.live_sessions,
                       x.stalled_sessions);
    }
    f.close();
  }
  write_file_atomically(dir + "/scenario.json", to_json(r.real).dump(2) + "\n", "scenario.json");
  write_file_atomically(dir + "/scenario_simulated.json", to_json(r.simulated).dump(2) + "\n",
                        "scenario_simulated.json");
  // Last: summary.json says the folder is complete.
  write_file_atomically(dir + "/summary.json", output_text(replay_json(r)) + "\n", "summary.json");
}

}  // namespace metronome::replay
