#include "sim/fleet/fleet_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "base/output_number.h"
#include "base/version.h"
#include "sim/fleet/fleet_config.h"

namespace metronome {
namespace {

using nlohmann::json;

json ms_or_null(double s) { return std::isfinite(s) ? json(s * 1e3) : json(nullptr); }
json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
double fraction(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

json opt_s(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The columns of a replica's row, in order (replicas.csv and the JSON rows); an autoscaled fleet's
// rows add each replica's life.
json replica_row(size_t i, const ReplicaOutcome& o, bool scaled) {
  const RunResult& r = o.run;
  json row{{"replica", i},
           {"group", o.group},
           {"index_in_group", o.index_in_group},
           {"routed", o.routed},
           {"gateway_rejected", o.gateway_rejected},
           {"replica_rejected", r.sessions_rejected},
           {"placed", o.placed()},
           {"peak_live_sessions", r.peak_live_sessions},
           {"frames_due", r.frames_due},
           {"frames_served", r.frames_served},
           {"frames_on_time", r.frames_on_time},
           {"frames_silent", r.frames_silent},
           {"frames_reported_late", r.frames_reported_late},
           {"reported_p50_ms", ms_or_null(r.reported_latency.output_percentile(0.50))},
           {"reported_p99_ms", ms_or_null(r.reported_latency.output_percentile(0.99))},
           {"true_p50_ms", ms_or_null(r.true_latency.output_percentile(0.50))},
           {"true_p99_ms", ms_or_null(r.true_latency.output_percentile(0.99))},
           {"peak_pool_blocks", r.peak_pool_blocks},
           {"first_stall_s", opt(r.first_stall_s)},
           {"engine_steps", r.engine_steps}};
  if (scaled) {
    row["started_s"] = o.started_s;
    row["ready_s"] = o.ready_s;
    row["drained_s"] = opt_s(o.drained_s);
    row["gone_s"] = opt_s(o.gone_s);
    row["first_call_s"] = opt_s(o.first_call_s);
    row["last_call_s"] = opt_s(o.last_call_s);
  }
  return row;
}

std::string ms_text(double s) {
  return std::isfinite(s) ? fmt::format("{:.1f} ms", s * 1e3) : std::string("censored");
}

}  // namespace

json fleet_json(const Scenario& s, const FleetResult& r) {
  const RunResult t = r.totals();
  const FleetConfig& f = *s.fleet;
  int64_t stalled = 0;
  json rows = json::array();
  const bool scaled = f.autoscale != nullptr;
  for (size_t i = 0; i < r.replicas.size(); ++i) {
    rows.push_back(replica_row(i, r.replicas[i], scaled));
    if (r.replicas[i].run.first_stall_s) ++stalled;
  }
  json rejected = json::object();
  for (const auto& [reason, n] : r.rejected) rejected[reason] = n;
  json fleet = {{"replicas", r.replicas.size()},
                {"router", f.router->type()},
                {"gateway", f.gateway->type()},
                {"calls_offered", r.offered},
                {"calls_placed", r.placed},
                {"calls_rejected", r.rejected_total()},
                {"rejected_by_reason", rejected},
                {"frames_due", t.frames_due},
                {"frames_served", t.frames_served},
                {"frames_on_time", t.frames_on_time},
                {"frames_silent", t.frames_silent},
                {"frames_reported_late", t.frames_reported_late},
                {"silent_fraction", fraction(t.frames_silent, t.frames_due)},
                {"goodput_frames_per_s", static_cast<double>(t.frames_on_time) / r.horizon_s},
                {"reported_p50_ms", ms_or_null(t.reported_latency.output_percentile(0.50))},
                {"reported_p99_ms", ms_or_null(t.reported_latency.output_percentile(0.99))},
                {"true_p50_ms", ms_or_null(t.true_latency.output_percentile(0.50))},
                {"true_p99_ms", ms_or_null(t.true_latency.output_percentile(0.99))},
                {"true_censored_frames", t.true_latency.censored()},
                {"replicas_stalled", stalled},
                {"first_stall_s", opt(t.first_stall_s)},
                {"engine_steps", t.engine_steps},
                {"replica_seconds", r.replica_seconds()},
                {"gpu_seconds", r.gpu_seconds()}};
  if (scaled) {
    json counts = json::array();
    int64_t peak = 0;
    for (const ReplicaCount& c : r.replica_counts()) {
      counts.push_back({c.time_s, c.provisioned, c.ready});
      peak = std::max(peak, c.provisioned);
    }
    fleet["autoscale"] = {{"replicas_started", r.scale_ups},
                          {"replicas_drained", r.drains},
                          {"peak_replicas", peak},
                          {"replica_counts", counts},
                          {"replica_counts_columns", {"time_s", "provisioned", "ready"}}};
  }
  if (r.gateway_initial_cap) {
    // The series is gateway_control.csv's; the summary says how far and how often the cap moved.
    int64_t lo = *r.gateway_initial_cap, hi = lo, cuts = 0, raises = 0, prev = lo;
    for (const GatewayReading& g : r.gateway_readings) {
      lo = std::min(lo, g.cap);
      hi = std::max(hi, g.cap);
      cuts += g.cap < prev ? 1 : 0;
      raises += g.cap > prev ? 1 : 0;
      prev = g.cap;
    }
    fleet["gateway_control"] = {{"readings", r.gateway_readings.size()},
                                {"cap_initial", *r.gateway_initial_cap},
                                {"cap_final", prev},
                                {"cap_min", lo},
                                {"cap_max", hi},
                                {"cuts", cuts},
                                {"raises", raises}};
  }
  json j = {{"metronome_version", version_string()},
            {"scenario", to_json(s)},
            {"fleet", fleet},
            {"replicas", rows}};
  if (!s.warnings.empty()) j["warnings"] = s.warnings;
  return j;
}

std::string replica_counts_csv(const FleetResult& r) {
  std::ostringstream o;
  o << "time_s,provisioned,ready\n";
  for (const ReplicaCount& c : r.replica_counts()) {
    o << output_text(json(c.time_s)) << "," << c.provisioned << "," << c.ready << "\n";
  }
  return o.str();
}

std::string gateway_control_csv(const FleetResult& r) {
  std::ostringstream o;
  o << "time_s,cap,live_sessions,signal_ms\n";
  for (const GatewayReading& g : r.gateway_readings) {
    // As the engines' time series write a signal: empty where there is no finite one (no replica
    // held a session, or one's frames were never served).
    o << csv_number(g.time_s) << "," << g.cap << "," << g.live << ","
      << (std::isfinite(g.signal_s) ? csv_number(g.signal_s * 1e3) : std::string()) << "\n";
  }
  return o.str();
}

std::string replicas_csv(const Scenario& s, const FleetResult& r) {
  std::ostringstream o;
  const bool scaled = s.fleet->autoscale != nullptr;
  const json header = replica_row(0, ReplicaOutcome{}, scaled);
  std::string line;
  for (const auto& item : header.items()) line += (line.empty() ? "" : ",") + item.key();
  // nlohmann orders object keys alphabetically; the header and the rows share that order.
  o << line << "\n";
  for (size_t i = 0; i < r.replicas.size(); ++i) {
    line.clear();
    const json row = replica_row(i, r.replicas[i], scaled);
    for (const auto& item : row.items()) {
      const json& v = item.value();
      line += line.empty() ? "" : ",";
      line += v.is_null() ? "" : v.is_string() ? v.get<std::string>() : output_text(v);
    }
    o << line << "\n";
  }
  return o.str();
}

std::string fleet_text(const Scenario& s, const FleetResult& r) {
  const FleetConfig& f = *s.fleet;
  const RunResult t = r.totals();
  std::ostringstream o;
  std::string groups;
  for (const auto& g : f.groups) {
    groups += fmt::format("{}{} x {}{} ({} on {}, {} KV)", groups.empty() ? "" : ", ", g.count,
                          g.name, f.autoscale ? " at 0 s" : "", g.replica->model.name,
                          g.replica->gpu.name, g.replica->kv_policy.policy->describe());
  }
  o << fmt::format("fleet      {}: {} replica{}{}: {}\n", s.name, r.replicas.size(),
                   r.replicas.size() == 1 ? "" : "s",
                   f.autoscale ? " over the run, autoscaled" : "", groups);
  o << fmt::format("gateway    router {}, admission {}; per replica: admission {}\n",
                   f.router->type(), f.gateway->type(), s.admission.type());
  std::string why;
  for (const auto& [reason, n] : r.rejected) {
    why += fmt::format("{}{} {}", why.empty() ? ": " : ", ", n, reason);
  }
  o << fmt::format("calls      {} offered, {} placed, {} rejected{}\n", r.offered, r.placed,
                   r.rejected_total(), why);
  o << fmt::format(
      "simulated  {} s, seed {}\n"
      "frames     {} due, {} served, {:.1f}% silent, {:.1f}% reported late; goodput {:.1f} "
      "frames/s on time\n",
      csv_number(r.horizon_s), s.seed, t.frames_due, t.frames_served,
      100 * fraction(t.frames_silent, t.frames_due),
      100 * fraction(t.frames_reported_late, t.frames_due),
      static_cast<double>(t.frames_on_time) / r.horizon_s);
  o << fmt::format("latency    reported p50 {} p99 {}; true p50 {} p99 {}\n",
                   ms_text(t.reported_latency.output_percentile(0.50)),
                   ms_text(t.reported_latency.output_percentile(0.99)),
                   ms_text(t.true_latency.output_percentile(0.50)),
                   ms_text(t.true_latency.output_percentile(0.99)));
  std::vector<int64_t> placed;
  int64_t stalled = 0;
  for (const auto& x : r.replicas) {
    placed.push_back(x.placed());
    if (x.run.first_stall_s) ++stalled;
  }
  std::sort(placed.begin(), placed.end());
  o << fmt::format(
      "replicas   calls placed per replica: min {} median {} max {}; {} of {} "
      "stalled{}\n",
      placed.front(), placed[placed.size() / 2], placed.back(), stalled, placed.size(),
      t.first_stall_s ? fmt::format(" (first at {:.2f} s)", *t.first_stall_s) : "");
  if (const AutoscaleConfig* a = f.autoscale.get()) {
    int64_t peak = 0, least = std::numeric_limits<int64_t>::max();
    for (const ReplicaCount& c : r.replica_counts()) {
      peak = std::max(peak, c.provisioned);
      least = std::min(least, c.ready);
    }
    o << fmt::format(
        "autoscale  signal {} (up above {:g}, down below {:g}) every {:g} s, {} to {} replicas, "
        "start-up {:g} s: {} started, {} drained; ready {} to {} at once (peak provisioned {})\n",
        a->signal, a->scale_up_above, a->scale_down_below, a->interval_s, a->min_replicas,
        a->max_replicas, a->startup_s, r.scale_ups, r.drains, least, peak, peak);
  }
  o << fmt::format("cost       {:.1f} replica-hours, {:.1f} GPU-hours over {:.0f} s\n",
                   r.replica_seconds() / 3600, r.gpu_seconds() / 3600, r.horizon_s);
  return o.str();
}

}  // namespace metronome
