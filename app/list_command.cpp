// metronome list: what a user can name without reading the source. The shipped models and GPUs
// (with the figures that size a pool and price a step), the repository's scenarios, and every
// scenario field with its unit and default (docs/scenarios.md has the long form; cli.list checks
// that every field of a resolved scenario is listed here).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/commands.h"
#include "base/json_file.h"
#include "sim/admission/admission_policy.h"
#include "sim/config/catalog.h"
#include "sim/cost/cost_models.h"
#include "sim/exhaustion/exhaustion_policy.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/router.h"
#include "sim/kv_policy/kv_policy.h"
#include "sim/scheduler/step_scheduler.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome::cli {
namespace {

struct Field {
  const char* key;
  const char* unit;
  const char* default_value;
  std::string meaning;
};

// A kind's registered types, as the registry has them, so a new type is listed without a line here.
std::string types(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, " | "));
}

// One row per field a scenario accepts (policy fields under the type that reads them).
const std::vector<Field>& fields() {
  static const std::vector<Field> f = {
      {"name", "-", "\"unnamed\"", "free text"},
      {"comment", "-", "\"\"", "free text: the claim the scenario tests"},
      {"horizon_s", "s", "required", "simulated time"},
      {"seed", "-", "1", "drives every random stream, each derived separately"},
      {"output.sample_period_s", "s", "1", "time-series resolution (timeseries.csv, metrics)"},
      {"model", "-", "required", "a shipped name (below), PATH.json, or hf:PATH/config.json"},
      {"model.name", "-", "file name", "the model's name in outputs"},
      {"model.layers", "-", "required", "transformer layers"},
      {"model.hidden_size", "-", "required", "model width"},
      {"model.attention_heads", "-", "required", "query heads"},
      {"model.kv_heads", "-", "required", "KV heads (attention_heads a multiple of it)"},
      {"model.head_dim", "-", "required", "per head"},
      {"model.ffn_size", "-", "required", "gated MLP width (0: pure MoE)"},
      {"model.vocab_size", "-", "required", "embedding and output head rows"},
      {"model.kv_bytes_per_element", "B", "2", "KV element size (engine.kv_cache_dtype overrides)"},
      {"model.weight_bytes", "B", "derived",
       "resident weights (derived from the shapes if absent)"},
      {"model.weight_bytes_per_param", "B", "2", "for the derived weight_bytes"},
      {"model.experts", "-", "0", "MoE experts per layer"},
      {"model.experts_active", "-", "0", "MoE experts per token"},
      {"model.expert_ffn_size", "-", "0", "one expert's MLP width"},
      {"model.attention_bias", "-", "\"none\"", "none | qkv | all (derived weights)"},
      {"model.tie_word_embeddings", "-", "false", "output head shares the embeddings"},
      {"model.max_context_tokens", "tokens", "0",
       "trained context (0: not stated); a window, cap or reset past it is a warning"},
      {"model.loaded_from", "-", "-", "written: the file a model came from"},
      {"model.notes", "-", "-", "written: every derived value"},
      {"gpu", "-", "required", "a shipped name (below) or PATH.json"},
      {"gpu.name", "-", "file name", "the GPU's name in outputs"},
      {"gpu.memory_bytes", "B", "required", "memory as the device reports it (nvidia-smi)"},
      {"gpu.memory_source", "-", "\"\"", "where memory_bytes was read"},
      {"gpu.memory_bandwidth_bytes_per_s", "B/s", "required", "datasheet bandwidth"},
      {"gpu.bf16_flops", "FLOP/s", "required", "dense bf16 peak"},
      {"gpu.measured_calibration", "-", "\"\"", "a measured calibration file (cost_model auto)"},
      {"gpu.interconnect_bandwidth_bytes_per_s", "B/s", "-", "tensor parallel: link, each way"},
      {"gpu.interconnect_latency_s", "s", "-", "tensor parallel: per all-reduce"},
      {"gpu.interconnect_source", "-", "-", "where both numbers come from"},
      {"gpu.price_per_gpu_hour", "$/h", "-", "what plan prices a GPU hour at"},
      {"gpu.price_source", "-", "-", "where the price was read (with the price)"},
      {"gpu.roofline_correction.bandwidth_fraction", "-", "required", "GEMM bandwidth reached"},
      {"gpu.roofline_correction.pointwise_bandwidth_fraction", "-", "required",
       "pointwise-op bandwidth reached"},
      {"gpu.roofline_correction.flops_fraction", "-", "required", "of bf16_flops reached"},
      {"gpu.roofline_correction.layer_overhead_s", "s", "required", "kernel overhead per layer"},
      {"gpu.roofline_correction.pass_overhead_s", "s", "required", "kernel overhead per pass"},
      {"gpu.roofline_correction.fitted_on", "-", "required", "the GPU measured"},
      {"gpu.roofline_correction.source", "-", "required", "what was measured, by whom"},
      {"gpu.shape_aware_correction.gemm_memory", "x", "required",
       "shape_aware_roofline: GEMM memory time multiplier"},
      {"gpu.shape_aware_correction.gemm_compute", "x", "required", "GEMM compute time multiplier"},
      {"gpu.shape_aware_correction.gemm_overlap", "-", "required",
       "overlap of GEMM memory and compute (0-1)"},
      {"gpu.shape_aware_correction.gemm_kernel_s", "s", "required", "per-GEMM kernel overhead"},
      {"gpu.shape_aware_correction.norm", "x", "required", "norm time multiplier"},
      {"gpu.shape_aware_correction.rope", "x", "required", "rope time multiplier"},
      {"gpu.shape_aware_correction.activation", "x", "required", "activation time multiplier"},
      {"gpu.shape_aware_correction.add", "x", "required", "residual add time multiplier"},
      {"gpu.shape_aware_correction.pointwise_kernel_s", "s", "required",
       "per-pointwise-op kernel overhead"},
      {"gpu.shape_aware_correction.fitted_on", "-", "required", "the profiles fitted"},
      {"gpu.shape_aware_correction.source", "-", "required", "what was measured, by whom"},
      {"engine.block_size", "tokens", "16", "tokens per KV block"},
      {"engine.gpu_memory_utilization", "-", "0.9", "fraction of memory_bytes for the engine"},
      {"engine.activation_reserve_bytes", "B", "2e9", "peak activations kept out of the pool"},
      {"engine.num_gpu_blocks", "blocks", "sized",
       "explicit pool (vLLM's '# GPU blocks'); alias "
       "num_blocks"},
      {"engine.num_blocks", "blocks", "sized", "alias of num_gpu_blocks (the resolved form)"},
      {"engine.max_sessions_per_step", "sessions", "256", "old alias of max_num_seqs"},
      {"engine.max_num_seqs", "sessions", "256", "batch cap per step; alias max_sessions_per_step"},
      {"engine.kv_cache_dtype", "-", "\"auto\"",
       "auto | fp8 | fp8_e4m3 | fp8_e5m2 | bfloat16 | "
       "float16"},
      {"engine.exhaustion", "-", "\"stall\"",
       types(exhaustion_policies().types()) + " (frame scheduler)"},
      {"engine.scheduler", "-", "\"frame\"", types(step_scheduler_names())},
      {"engine.max_num_batched_tokens", "tokens", "8192", "vllm_v1: token budget per step"},
      {"engine.session_model", "-", "\"resumable\"", "vllm_v1: resumable | per_frame_request"},
      {"engine.enable_prefix_caching", "-", "true", "vllm_v1: prefix cache"},
      {"engine.silence_after_s", "s", "deadline", "a frame is padded with silence this late"},
      {"engine.tensor_parallel", "GPUs", "1", "1 | 2 | 4 | 8 GPUs per replica"},
      {"kv_policy.type", "-", "\"unbounded\"",
       types(kv_policies().types()) + " (docs/kv_policies.md)"},
      {"kv_policy.window_tokens", "tokens", "required", "windowed: W previous tokens visible"},
      {"kv_policy.sink_tokens", "tokens", "0", "windowed: S first tokens always visible"},
      {"kv_policy.reset_frames", "frames", "required", "periodic_reset: KV cleared every K frames"},
      {"kv_policy.cap_tokens", "tokens", "required", "context_cap: the call ends at this context"},
      {"kv_policy.segment_tokens", "tokens", "required",
       "segment_eviction: G, a whole number of blocks"},
      {"kv_policy.segments", "segments", "required",
       "segment_eviction: N kept, the one being filled included"},
      {"workload.arrival.type", "-", "required", types(arrival_policies().types())},
      {"workload.arrival.sessions", "sessions", "required",
       "all_at_once, fixed_interval, uniform: callers"},
      {"workload.arrival.interval_s", "s", "required", "fixed_interval: between callers"},
      {"workload.arrival.rate_per_s", "1/s", "required", "poisson: callers per second"},
      {"workload.arrival.max_sessions", "sessions", "0", "poisson: callers in all (0: no limit)"},
      {"workload.arrival.profile", "[s, 1/s]", "-", "profile: [[time_s, calls_per_s], ...]"},
      {"workload.arrival.profile_file", "path", "-", "profile: CSV time_s,calls_per_s"},
      {"workload.arrival.within_s", "s", "required",
       "uniform: each caller at a random time this long from start_s"},
      {"workload.arrival.start_s", "s", "0", "first caller"},
      {"workload.duration.type", "-", "required", types(duration_policies().types())},
      {"workload.duration.seconds", "s", "required", "fixed: call length"},
      {"workload.duration.mean_s", "s", "required", "exponential: mean call length"},
      {"workload.duration.median_s", "s", "required", "lognormal: median call length"},
      {"workload.duration.sigma", "-", "required", "lognormal: sigma of log seconds"},
      {"workload.frame_period_s", "s", "0.08", "one frame per period per session"},
      {"workload.deadline_s", "s", "period", "a frame is on time within this (150 ms is 0.15)"},
      {"workload.input_tokens_per_frame", "tokens", "1", "prefilled in one pass"},
      {"workload.output_tokens_per_frame", "tokens", "1",
       "first from the ingest pass, then one "
       "decode pass each"},
      {"workload.kv_tokens_per_frame", "tokens", "in + out", "appended to the KV per frame"},
      {"workload.tokens_per_s_per_session", "tokens/s", "-",
       "sets kv_tokens_per_frame = rate x "
       "period"},
      {"workload.prompt_tokens", "tokens", "0", "prefilled with the first frame"},
      {"workload.frame_jitter_s", "s", "0", "each frame released up to this late"},
      {"cost_model.type", "-", "\"auto\"",
       "auto (the best the GPU has) | " + types(cost_model_types())},
      {"cost_model.step_overhead_s", "s", "0.001", "scheduler and launch overhead per pass"},
      {"cost_model.file", "-", "\"\"", "calibrated: the calibration JSON"},
      {"admission.type", "-", "\"none\"", types(admission_policies().types())},
      {"admission.memory_guard", "-", "\"auto\"",
       "auto | on | off: refuse callers whose worst case "
       "does not fit"},
      {"admission.join", "-", "\"arrival\"", "arrival | spread (phase-aware joining)"},
      {"admission.cap", "sessions", "required", "static: the cap"},
      {"admission.interval_s", "s", "1", "aimd, gradient: control interval"},
      {"admission.signal", "-", "\"reported\"", "aimd, gradient: reported | true latency"},
      {"admission.quantile", "-", "0.95", "aimd, gradient: of the interval's latency"},
      {"admission.initial_cap", "sessions", "16", "aimd, gradient: cap at t = 0"},
      {"admission.floor", "sessions", "1", "aimd, gradient: lowest cap"},
      {"admission.max_cap", "sessions", "100000", "aimd, gradient: highest cap"},
      {"admission.increase", "sessions", "2", "aimd: added per interval with headroom"},
      {"admission.decrease_factor", "-", "0.9", "aimd: multiplier on congestion"},
      {"admission.low_fraction", "-", "0.8", "aimd: headroom below this x deadline"},
      {"admission.high_fraction", "-", "0.9", "aimd: congestion above this x deadline"},
      {"admission.tolerance", "-", "1.5", "gradient: short- to long-term latency ratio allowed"},
      {"admission.smoothing", "-", "0.2", "gradient: weight of each new target"},
      {"admission.long_window", "intervals", "60", "gradient: long-term average's length"},
      {"fleet.groups", "-", "required", "fleet: [{name, count, model, gpu, engine, kv_policy}]"},
      {"fleet.router.type", "-", "\"round_robin\"", types(router_policies().types())},
      {"fleet.router.by", "-", "\"sessions\"", "p2c: sessions | free_blocks"},
      {"fleet.gateway.type", "-", "\"none\"", types(gateway_policies().types())},
      {"fleet.gateway.rate_per_s", "calls/s", "required", "token_bucket: refill rate"},
      {"fleet.gateway.burst", "calls", "1", "token_bucket: bucket size"},
      {"fleet.gateway.max_queue_depth", "sessions", "5", "shed: waiting for blocks, above: refuse"},
      {"fleet.gateway.max_kv_usage", "-", "0.8", "shed: pool fraction in (0, 1], above: refuse"},
      {"fleet.gateway.cap", "sessions", "required", "static: live over the fleet"},
      {"fleet.gateway.<admission aimd's fields>", "-", "as aimd", "aimd: one cap over the fleet"},
      {"fleet.gateway.over_replicas", "-", "1", "aimd: quantile of the replicas' readings"},
      {"fleet.autoscale.signal", "-", "required", "sessions | kv_usage | latency (ready mean)"},
      {"fleet.autoscale.scale_up_above", "signal", "required", "start replicas above it"},
      {"fleet.autoscale.scale_down_below", "signal", "required", "drain one below it"},
      {"fleet.autoscale.min_replicas", "replicas", "1", "never drain below"},
      {"fleet.autoscale.max_replicas", "replicas", "required", "never start above"},
      {"fleet.autoscale.startup_s", "s", "required", "model load before it takes calls"},
      {"fleet.autoscale.interval_s", "s", "10", "between readings of the signal"},
  };
  return f;
}

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string text_or(const nlohmann::json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// A shipped description by name; a file beside the working directory's scenarios/ wins, as it
// does when a scenario names it.
nlohmann::json entry(std::string_view kind, const std::string& name) {
  return find_catalog_entry(kind, name, "scenarios", "metronome list");
}

// The first sentence of a comment, at most `width` characters.
std::string first_sentence(const std::string& s, size_t width) {
  std::string t = s.substr(0, s.find(". "));
  if (t.size() > width) t = t.substr(0, width - 3) + "...";
  return t;
}

}  // namespace

Run add_list(CLI::App& app) {
  app.add_subcommand(
      "list",
      "List the shipped models and GPUs (model=NAME, gpu=NAME), the repository's scenarios "
      "(--scenario, files read from its root), and every scenario field with its unit and default "
      "(--set KEY=VALUE)");
  return []() {
    std::string out =
        "models     (--set model=NAME; or model=PATH.json, model=hf:PATH/config.json)\n";
    out += fmt::format("  {:<20} {:>6} {:>10} {:>11} {:>10}  {}\n", "name", "layers", "KV heads",
                       "KV/token", "weights", "experts");
    for (const auto& n : embedded_names("models")) {
      const auto m = entry("models", n);
      const double kv = 2 * number_or(m, "layers", 0) * number_or(m, "kv_heads", 0) *
                        number_or(m, "head_dim", 0) * number_or(m, "kv_bytes_per_element", 2);
      const double w = number_or(m, "weight_bytes", 0);
      out += fmt::format("  {:<20} {:>6g} {:>10g} {:>7.1f} KiB {:>7} GB  {}\n", n,
                         number_or(m, "layers", 0), number_or(m, "kv_heads", 0), kv / 1024,
                         w > 0 ? fmt::format("{:.3g}", w / 1e9) : std::string("derived"),
                         number_or(m, "experts", 0) > 0
                             ? fmt::format("{:g} of {:g}", number_or(m, "experts_active", 0),
                                           number_or(m, "experts", 0))
                             : std::string("-"));
    }
    out += "gpus       (--set gpu=NAME; or gpu=PATH.json)\n";
    out += fmt::format("  {:<8} {:>10} {:>10} {:>12}  {}\n", "name", "memory", "bandwidth",
                       "bf16 dense", "cost model by default (cost_model.type auto)");
    for (const auto& n : embedded_names("gpus")) {
      const auto g = entry("gpus", n);
      const auto rc = g.find("roofline_correction");
      const std::string cost =
          !text_or(g, "measured_calibration", "").empty()
              ? "calibrated: " +
                    std::filesystem::path(text_or(g, "measured_calibration", ""))
                        .filename()
                        .string() +
                    " (dense models; else corrected_roofline)"
          : rc != g.end() ? "corrected_roofline (fitted on " + text_or(*rc, "fitted_on", "?") + ")"
                          : std::string("roofline");
      out += fmt::format("  {:<8} {:>7.2f} GB {:>6.2f} TB/s {:>6.0f} TFLOP/s  {}\n", n,
                         number_or(g, "memory_bytes", 0) / 1e9,
                         number_or(g, "memory_bandwidth_bytes_per_s", 0) / 1e12,
                         number_or(g, "bf16_flops", 0) / 1e12, cost);
    }
    out +=
        "scenarios  (the repository's: --scenario scenarios/PATH from its root, a file read there; "
        "none: the built-in default.json)\n";
    for (const auto& p : embedded_scenario_paths()) {
      if (p.rfind("models/", 0) == 0 || p.rfind("gpus/", 0) == 0) continue;
      std::string comment;
      try {
        const auto j = parse_json(*embedded_scenario_file(p), p);
        // Not a scenario: the figures' experiment specs (scripts/paper_figures) and workloads.
        if (!j.is_object() || !j.contains("horizon_s") || j.contains("figure")) continue;
        comment = text_or(j, "comment", "");
      } catch (const std::exception&) {
        continue;
      }
      out += fmt::format("  {:<44} {}\n", p, first_sentence(comment, 90));
    }
    out += "fields     (--set KEY=VALUE; units: s seconds, B bytes; docs/scenarios.md)\n";
    out += fmt::format("  {:<52} {:<9} {:<12} {}\n", "key", "unit", "default", "meaning");
    for (const auto& f : fields()) {
      out += fmt::format("  {:<52} {:<9} {:<12} {}\n", f.key, f.unit, f.default_value, f.meaning);
    }
    std::cout << out;
    return 0;
  };
}

}  // namespace metronome::cli
