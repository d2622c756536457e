#include "sim/analysis/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/output_number.h"
#include "base/version.h"

namespace metronome {
namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> relative_error(const std::optional<double>& simulated,
                                     const std::optional<double>& predicted) {
  if (!simulated || !predicted || *predicted <= 0) return std::nullopt;
  return (*simulated - *predicted) / *predicted;
}

// JSON has no infinity: a percentile among censored frames is null, with the censored count beside
// it. A latency is a duration against the frame: milliseconds, under the names timeseries.csv and
// runs.csv use (reported_p50_ms, true_p99_ms, ...), flat in the result so every output agrees.
json ms_or_null(double s) { return std::isfinite(s) ? json(s * 1e3) : json(nullptr); }

void add_latency(json& j, const std::string& prefix, const LatencyHistogram& h) {
  j[prefix + "_p50_ms"] = ms_or_null(h.output_percentile(0.50));
  j[prefix + "_p95_ms"] = ms_or_null(h.output_percentile(0.95));
  j[prefix + "_p99_ms"] = ms_or_null(h.output_percentile(0.99));
  j[prefix + "_observed_frames"] = h.count();
  j[prefix + "_censored_frames"] = h.censored();
}

json admission_cap_json(const AdmissionSummary& a) {
  if (!a.capped) {
    // The memory guard refuses callers under any controller, "none" included.
    if (!a.memory_guard) return {{"capped", false}};
    return {{"capped", false},
            {"memory_guard", true},
            {"memory_cap", opt(a.memory_cap)},
            {"rejected_by_memory", a.rejected_by_memory}};
  }
  return {{"capped", true},
          {"adaptive", a.adaptive},
          {"n_star", opt(a.n_star)},
          {"live_p5", opt(a.live_p5)},
          {"live_p95", opt(a.live_p95)},
          {"flags", a.flags},
          {"flag_reasons", a.flag_reasons},
          {"memory_guard", a.memory_guard},
          {"memory_cap", opt(a.memory_cap)},
          {"rejected_by_memory", a.rejected_by_memory},
          {"cap_median", opt(a.cap_median)},
          {"cap_p5", opt(a.cap_p5)},
          {"cap_p25", opt(a.cap_p25)},
          {"cap_p75", opt(a.cap_p75)},
          {"cap_p95", opt(a.cap_p95)},
          {"initial_cap", a.initial_cap},
          {"final_cap", a.final_cap},
          {"max_cap", a.max_cap},
          {"increases", a.increases},
          {"decreases", a.decreases},
          {"control_intervals", a.control_intervals},
          {"first_decrease_s", opt(a.first_decrease_s)},
          {"cap_at_first_stall", opt(a.cap_at_first_stall)},
          {"live_at_first_stall", opt(a.live_at_first_stall)}};
}

json admission_json(const AdmissionSummary& a) {
  json j = admission_cap_json(a);
  if (a.join_spread) {
    j["join"] = "spread";
    j["join_delay_mean_ms"] = a.join_delay_mean_ms;
    j["join_delay_max_ms"] = a.join_delay_max_ms;
  }
  return j;
}

std::string secs(const std::optional<double>& v) {
  return v ? fmt::format("{:.2f} s", *v) : std::string("never (within the horizon)");
}
// Three significant digits: the histogram's bins are 2^(1/64) wide (about 1.1%), so a fourth digit
// would be the bin's centre, not the data.
std::string ms(double v) {
  if (std::isnan(v)) return "none (no frames)";
  if (!std::isfinite(v)) return "censored";
  const double x = v * 1e3;
  if (x >= 1000) return fmt::format("{:.0f} ms", std::round(x / 10) * 10);
  if (x >= 100) return fmt::format("{:.0f} ms", x);
  if (x >= 10) return fmt::format("{:.1f} ms", x);
  return fmt::format("{:.2f} ms", x);
}
// A percentile of frames that met the deadline, printed as at most the deadline when its bin's
// centre lies past it (the bin straddles the deadline): p50 1008 ms with no misses reads wrong.
std::string ms_within(double v, double p, double on_time_fraction, double deadline_s) {
  if (std::isfinite(v) && v > deadline_s && on_time_fraction >= p) {
    return "<= " + ms(deadline_s);
  }
  return ms(v);
}
double frac(int64_t a, int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}
// vLLM's goodput: requests (here frames) served within their deadline per second of the run.
double goodput(int64_t on_time, double seconds) {
  return seconds > 0 ? static_cast<double>(on_time) / seconds : 0.0;
}
std::string pct(double f) { return fmt::format("{:.1f}%", 100.0 * f); }

}  // namespace

json prediction_json(const Scenario& s, const FirstOrderPrediction& p) {
  json j = {{"num_blocks", p.pool.num_blocks},
            {"num_blocks_overridden", p.pool.overridden},
            {"block_size_tokens", s.engine.block_size},
            {"block_bytes", p.pool.block_bytes},
            {"kv_bytes_per_token", p.pool.kv_bytes_per_token},
            {"usable_kv_bytes", std::llround(p.pool.usable_bytes)},
            {"pool_tokens", p.pool.num_blocks * s.engine.block_size},
            {"tokens_per_s_per_session", p.tokens_per_s_per_session},
            {"r_per_s", p.r_per_s},
            {"rho0", p.rho0},
            {"sessions", p.sessions},
            {"peak_concurrent_sessions", p.peak_concurrent_sessions},
            {"t_sat_continuous_s", opt(p.t_sat_continuous_s)},
            {"t_sat_blocks_s", opt(p.t_sat_blocks_s)},
            {"max_blocks_per_session", opt(p.max_blocks_per_session)},
            {"memory_cap_sessions", opt(p.memory_cap_sessions)}};
  if (p.service) {
    const ServiceCheck& c = *p.service;
    j["service"] = {{"sessions", c.sessions},
                    {"context_tokens", c.context},
                    {"frame_period_ms", c.period_s * 1e3},
                    {"work_per_period_ms", c.work_s * 1e3},
                    {"keeps_up", c.keeps_up},
                    {"step_sessions", c.step_sessions},
                    {"ttft_ms", c.ttft_s * 1e3},
                    {"tpot_ms", c.tpot_s ? json(*c.tpot_s * 1e3) : json()},
                    {"decode_passes", c.decode_passes},
                    {"t_sat_service_limited_s", opt(c.t_sat_service_limited_s)}};
  }
  return j;
}

json run_result_json(const RunResult& r) {
  json j = {{"crashed", r.crashed()},
            {"first_stall_s", opt(r.first_stall_s)},
            {"first_preempt_s", opt(r.first_preempt_s)},
            {"sessions_arrived", r.sessions_arrived},
            {"sessions_departed", r.sessions_departed},
            {"sessions_rejected", r.sessions_rejected},
            {"peak_live_sessions", r.peak_live_sessions},
            {"preemptions", r.preemptions},
            {"frames_due", r.frames_due},
            {"frames_served", r.frames_served},
            {"frames_on_time", r.frames_on_time},
            {"frames_silent", r.frames_silent},
            {"silent_frame_fraction", frac(r.frames_silent, r.frames_due)},
            {"deadline_miss_rate_reported", frac(r.frames_reported_late, r.frames_due)},
            {"deadline_miss_rate_true", frac(r.frames_due - r.frames_on_time, r.frames_due)},
            {"goodput_frames_per_s", goodput(r.frames_on_time, r.end_s)},
            {"tokens_produced", r.tokens_produced},
            {"engine_steps", r.engine_steps},
            {"engine_busy_fraction", r.end_s > 0 ? r.busy_s / r.end_s : 0.0},
            {"pool_peak_blocks", r.peak_pool_blocks},
            {"pool_final_blocks", r.final_pool_blocks},
            {"blocks_allocated", r.blocks_allocated},
            {"blocks_released", r.blocks_released},
            {"max_resident_blocks_per_session", r.max_resident_blocks_per_session},
            {"admission", admission_json(r.admission)}};
  // Only under a context cap, so that every other summary keeps its keys.
  if (r.sessions_context_capped) j["sessions_context_capped"] = *r.sessions_context_capped;
  add_latency(j, "reported", r.reported_latency);
  add_latency(j, "true", r.true_latency);
  return j;
}

json run_json(const Scenario& s, const FirstOrderPrediction& p, const RunResult& r,
              const std::string& cost_label) {
  const double deadline = s.workload.deadline();
  json result = run_result_json(r);
  // What the prediction adds: the first stall against t_sat, the pool peak against the pool.
  result.update(
      {{"t_sat_error_vs_blocks", opt(relative_error(r.first_stall_s, p.t_sat_blocks_s))},
       {"t_sat_error_vs_continuous", opt(relative_error(r.first_stall_s, p.t_sat_continuous_s))},
       {"pool_peak_fraction", frac(r.peak_pool_blocks, p.pool.num_blocks)}});
  json j = {{"metronome_version", version_string()}, {"cost_model", cost_label},
            {"deadline_ms", deadline * 1e3},         {"scenario", to_json(s)},
            {"prediction", prediction_json(s, p)},   {"result", result}};
  if (!s.warnings.empty()) j["warnings"] = s.warnings;
  return j;
}

namespace {

// The text's sections, one function each; each returns whole lines ("\n"-ended), or nothing where
// its section does not apply.

std::string scenario_line(const Scenario& s) {
  return fmt::format("scenario   {} ({} on {}, {} KV)\n", s.name, s.model.name, s.gpu.name,
                     s.kv_policy.policy->describe());
}

// A model given by path: what was read and what was derived, so the user can check it.
std::string model_lines(const ModelConfig& m) {
  if (m.loaded_from.empty() && m.notes.empty()) return "";
  std::string o = fmt::format(
      "model      {}{}: {} layers, hidden {}, {} heads ({} KV) x {}, FFN {}{}, vocab {}, {:.2f} "
      "GB "
      "of weights\n",
      m.name, m.loaded_from.empty() ? "" : " from " + m.loaded_from, m.layers, m.hidden_size,
      m.attention_heads, m.kv_heads, m.head_dim, m.ffn_size,
      m.moe() ? fmt::format(", {} experts of {} (top {})", m.experts, m.expert_ffn_size,
                            m.experts_active)
              : std::string(),
      m.vocab_size, m.weight_bytes / 1e9);
  for (const auto& n : m.notes) o += "  derived  " + n + "\n";
  return o;
}

// Where the KV pool's bytes come from: given outright, or the GPU's memory less weights and
// activations.
std::string memory_line(const Scenario& s, const PoolSizing& pool) {
  if (pool.overridden) {
    return fmt::format(
        "memory     engine.num_gpu_blocks = {} given (vLLM's \"# GPU blocks\"): the "
        "sizing rule is not used\n",
        pool.num_blocks);
  }
  if (const int64_t k = s.engine.tensor_parallel; k > 1) {
    return fmt::format(
        "memory     {} x {} {:.2f} GB x {:.2f} - {:.2f} GB weights - {} x {:.2f} GB activations = "
        "{:.2f} GB for KV (tensor parallel {}: weights and KV heads split over the GPUs)\n",
        k, s.gpu.name, s.gpu.memory_bytes / 1e9, s.engine.gpu_memory_utilization,
        s.model.weight_bytes / 1e9, k, s.engine.activation_reserve_bytes / 1e9,
        pool.usable_bytes / 1e9, k);
  }
  return fmt::format(
      "memory     {} {:.2f} GB{} x {:.2f} - {:.2f} GB weights - {:.2f} GB activations = {:.2f} "
      "GB for KV\n",
      s.gpu.name, s.gpu.memory_bytes / 1e9,
      s.gpu.memory_source.empty()
          ? std::string()
          : fmt::format(" as the device reports it ({:.0f} MiB)", s.gpu.memory_bytes / (1 << 20)),
      s.engine.gpu_memory_utilization, s.model.weight_bytes / 1e9,
      s.engine.activation_reserve_bytes / 1e9, pool.usable_bytes / 1e9);
}

std::string pool_line(const Scenario& s, const PoolSizing& pool) {
  return fmt::format(
      "pool       {} blocks x {} tokens = {} tokens ({:.1f} MiB per block, {}){}\n",
      pool.num_blocks, s.engine.block_size, pool.num_blocks * s.engine.block_size,
      static_cast<double>(pool.block_bytes) / (1 << 20),
      fmt::format("{:.1f} KiB per token", static_cast<double>(pool.kv_bytes_per_token) / 1024),
      pool.overridden ? " [num_blocks override]" : "");
}

std::string load_line(const FirstOrderPrediction& p) {
  return fmt::format(
      "load       {} sessions (peak {} at once), {:.2f} tokens/s each, r = {:.3e} of the pool per "
      "s\n",
      p.sessions, p.peak_concurrent_sessions, p.tokens_per_s_per_session, p.r_per_s);
}

std::string context_cap_line(const Scenario& s) {
  const auto cap = s.kv_rule().cap_frames();
  if (!cap) return "";
  return fmt::format("cap        a call ends at {} tokens of context: after {} frames ({:g} s)\n",
                     *s.kv_policy.policy->context_cap(), *cap,
                     static_cast<double>(*cap) * s.workload.frame_period_s);
}

// When the pool fills: t_sat both ways where KV grows without bound, else the per-session bound.
std::string saturation_lines(const Scenario& s, const FirstOrderPrediction& p) {
  if (!s.kv_policy.bounded()) {
    return fmt::format("t_sat      {} (first-order, summed ages); {} (whole blocks)\n",
                       secs(p.t_sat_continuous_s), secs(p.t_sat_blocks_s));
  }
  return fmt::format("bound      at most {} blocks per session: memory cap {} sessions\n",
                     *p.max_blocks_per_session, *p.memory_cap_sessions) +
         fmt::format("t_sat      {} (whole blocks)\n", secs(p.t_sat_blocks_s));
}

std::string keep_up_warning(const FirstOrderPrediction& p) {
  if (!p.service || p.service->keeps_up) return "";
  const ServiceCheck& c = *p.service;
  return fmt::format(
      "warning    the engine cannot keep up: one frame of {} sessions at {} cached tokens takes "
      "{:.1f} ms of engine time in full steps of {} per {:.1f} ms period; frames fall further "
      "behind every period, the KV grows at the service rate and the pool fills later than "
      "t_sat{}\n",
      c.sessions, c.context, c.work_s * 1e3, c.step_sessions, c.period_s * 1e3,
      c.t_sat_service_limited_s
          ? fmt::format(" (service-limited estimate {})", secs(c.t_sat_service_limited_s))
          : std::string());
}

// What the first-order model does not know of vLLM's scheduler (docs/vllm.md): it counts a paused
// streaming session as running, so callers past max_num_seqs wait while the first ones stay.
std::string vllm_seqs_warning(const Scenario& s, const FirstOrderPrediction& p) {
  if (s.engine.scheduler != "vllm_v1" || s.engine.session_model != "resumable" ||
      p.peak_concurrent_sessions <= s.engine.max_sessions_per_step) {
    return "";
  }
  return fmt::format(
      "warning    engine.max_num_seqs {} is below the {} callers live at once: vLLM counts a "
      "paused "
      "streaming session as running, so the rest wait while the first {} stay, and the pool "
      "fills later than this t_sat, which counts every caller (simulate models it; docs/vllm.md)\n",
      s.engine.max_sessions_per_step, p.peak_concurrent_sessions, s.engine.max_sessions_per_step);
}

}  // namespace

std::string prediction_text(const Scenario& s, const FirstOrderPrediction& p) {
  return scenario_line(s) + model_lines(s.model) + memory_line(s, p.pool) + pool_line(s, p.pool) +
         load_line(p) + context_cap_line(s) + saturation_lines(s, p) + keep_up_warning(p) +
         vllm_seqs_warning(s, p);
}

std::string frame_passes_text(const Scenario& s, const FirstOrderPrediction& p) {
  if (!p.service) return "";
  const ServiceCheck& c = *p.service;
  const double step = c.ttft_s + static_cast<double>(c.decode_passes) * c.tpot_s.value_or(0);
  const std::string where = fmt::format(
      "a step of {} sessions at {} cached tokens{}; waiting for the step comes on top",
      c.step_sessions, c.context,
      s.engine.scheduler == "vllm_v1" ? ", priced as the frame scheduler's passes" : "");
  if (!c.tpot_s) {
    return fmt::format(
        "per frame  TTFT {:.3g} ms once its step starts, its only output token ({})\n",
        c.ttft_s * 1e3, where);
  }
  return fmt::format(
      "per frame  TTFT {:.3g} ms, then {} x {:.3g} ms per output token = {:.3g} ms once its step "
      "starts ({})\n",
      c.ttft_s * 1e3, c.decode_passes, *c.tpot_s * 1e3, step * 1e3, where);
}

namespace {

// The run's outcome: how long, whether the pool ran out, and the first stall against the
// predictions.
std::string outcome_lines(const Scenario& s, const FirstOrderPrediction& p, const RunResult& r) {
  std::string o =
      fmt::format("simulated  {} s, seed {}: {}\n", csv_number(r.end_s), s.seed,
                  r.crashed() ? fmt::format("CRASHED: pool exhausted at {}", secs(r.first_stall_s))
                              : std::string("no stall"));
  if (!r.first_stall_s) return o;
  auto err = [&](const std::optional<double>& pred) {
    return pred && *pred > 0 ? fmt::format("{:+.2f}%", 100.0 * (*r.first_stall_s - *pred) / *pred)
                             : std::string("n/a");
  };
  o += fmt::format("           saturation vs first-order: {} (whole blocks), {} (continuous)\n",
                   err(p.t_sat_blocks_s), err(p.t_sat_continuous_s));
  if (p.service && p.service->t_sat_service_limited_s) {
    o += fmt::format("           saturation vs service-limited estimate {}: {}\n",
                     secs(p.service->t_sat_service_limited_s),
                     err(p.service->t_sat_service_limited_s));
  }
  return o;
}

// Silent: no output by silence_after_s, so the serving layer sent silence. Of those, some got
// their output later (late) and some never did before the caller left or the run ended.
std::string frames_line(const RunResult& r) {
  const int64_t never = std::max<int64_t>(0, r.frames_due - r.frames_served);
  const int64_t late = std::max<int64_t>(0, r.frames_silent - never);
  return fmt::format(
      "frames     {} due, {} served, {} silent ({} answered late, {} never answered); deadline "
      "misses: {} reported, {} true; goodput {:.1f} frames/s on time\n",
      r.frames_due, r.frames_served, pct(frac(r.frames_silent, r.frames_due)),
      pct(frac(late, r.frames_due)), pct(frac(never, r.frames_due)),
      pct(frac(r.frames_reported_late, r.frames_due)),
      pct(frac(r.frames_due - r.frames_on_time, r.frames_due)), goodput(r.frames_on_time, r.end_s));
}

std::string context_capped_line(const Scenario& s, const RunResult& r) {
  if (!r.sessions_context_capped) return "";
  return fmt::format("calls      {} ended: {} at the context cap of {} tokens, {} hung up\n",
                     r.sessions_departed, *r.sessions_context_capped,
                     *s.kv_policy.policy->context_cap(),
                     r.sessions_departed - *r.sessions_context_capped);
}

std::string latency_line(const Scenario& s, const RunResult& r) {
  const double dl = s.workload.deadline();
  const double reported_ok = 1 - frac(r.frames_reported_late, r.frames_due);
  const double true_ok = frac(r.frames_on_time, r.frames_due);
  const double r50 = r.reported_latency.output_percentile(0.5);
  const double r99 = r.reported_latency.output_percentile(0.99);
  const double t50 = r.true_latency.output_percentile(0.5);
  const double t99 = r.true_latency.output_percentile(0.99);
  return fmt::format("latency    reported p50 {} p99 {}; true p50 {} p99 {}\n",
                     ms_within(r50, 0.5, reported_ok, dl), ms_within(r99, 0.99, reported_ok, dl),
                     ms_within(t50, 0.5, true_ok, dl), ms_within(t99, 0.99, true_ok, dl));
}

std::string same_wait_note(const RunResult& r) {
  const double t50 = r.true_latency.output_percentile(0.5);
  const double t99 = r.true_latency.output_percentile(0.99);
  if (!(std::isfinite(t50) && std::isfinite(t99) && t50 == t99 && r.true_latency.count() > 100)) {
    return "";
  }
  return "           p50 = p99: nearly every frame waits the same time (callers on a few phases "
         "of the period, served in the same steps); admission.join=spread spreads them\n";
}

std::string admission_lines(const Scenario& s, const RunResult& r) {
  const auto& a = r.admission;
  if (!a.capped) {
    if (!a.memory_guard) return "";
    return fmt::format(
        "admission  {} with the memory guard: {} of {} callers rejected by the guard{}\n",
        s.admission.type(), a.rejected_by_memory, r.sessions_arrived,
        a.memory_cap ? fmt::format(" (memory cap {})", *a.memory_cap) : "");
  }
  std::string flags;
  for (const auto& f : a.flags) flags += (flags.empty() ? "" : ", ") + f;
  std::string o = fmt::format(
      "admission  {}: N* = {} sessions served (median live over the last half; p5 {} p95 {}); "
      "cap median {}; {} of {} callers rejected ({} by the memory guard{}), {} increases, {} "
      "decreases{}\n",
      s.admission.type(), *a.n_star, *a.live_p5, *a.live_p95, *a.cap_median, r.sessions_rejected,
      r.sessions_arrived, a.rejected_by_memory,
      a.memory_guard ? (a.memory_cap ? fmt::format(", memory cap {}", *a.memory_cap) : "")
                     : ", off",
      a.increases, a.decreases, flags.empty() ? "" : "; FLAGGED: " + flags);
  for (const auto& why : a.flag_reasons) o += "           flagged: " + why + "\n";
  return o;
}

std::string pool_use_line(const FirstOrderPrediction& p, const RunResult& r) {
  return fmt::format("pool       peak {} of {} blocks ({}); {} tokens produced; {} engine steps\n",
                     r.peak_pool_blocks, p.pool.num_blocks,
                     pct(frac(r.peak_pool_blocks, p.pool.num_blocks)), r.tokens_produced,
                     r.engine_steps);
}

}  // namespace

std::string run_text(const Scenario& s, const FirstOrderPrediction& p, const RunResult& r,
                     const std::string& cost_label) {
  return prediction_text(s, p) + fmt::format("cost model {}\n", cost_label) +
         outcome_lines(s, p, r) + frames_line(r) + context_capped_line(s, r) + latency_line(s, r) +
         frame_passes_text(s, p) + same_wait_note(r) + admission_lines(s, r) + pool_use_line(p, r);
}

}  // namespace metronome
