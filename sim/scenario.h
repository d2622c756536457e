// A scenario: model, GPU, engine, KV policy, workload, cost model, horizon and seed. Every section
// is a struct with defaults; load_scenario() validates everything once, so the simulator trusts it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/kv_window.h"
#include "sim/gpu.h"
#include "sim/model.h"

namespace metronome {

struct EngineConfig {
  int64_t block_size = 16;              // tokens per KV block
  double gpu_memory_utilization = 0.9;  // fraction of GPU memory the engine may use
  double activation_reserve_bytes = 2e9;
  int64_t max_sessions_per_step = 256;  // continuous-batching cap; alias max_num_seqs (vLLM's)
  std::optional<int64_t> num_blocks;    // explicit pool size, overriding the sizing rule
  // How steps are formed (docs/vllm.md). `frame`: a step serves whole frames of ready sessions and
  // `exhaustion` says what a frame without blocks does. `vllm_v1`: vLLM V1's scheduler, one model
  // iteration per step under a token budget with chunked prefill; it preempts the newest running
  // request when a running one cannot grow and stalls the waiting ones (exhaustion is not used).
  std::string scheduler = "frame";          // frame | vllm_v1
  std::string exhaustion = "stall";         // frame: stall | preempt_recompute
  int64_t max_num_batched_tokens = 8192;    // vllm_v1: tokens computed per step
  std::string session_model = "resumable";  // vllm_v1: resumable | per_frame_request
  bool enable_prefix_caching = true;        // vllm_v1: vLLM's default
  // The serving layer pads a frame with silence when no output came this long after its release.
  std::optional<double> silence_after_s;  // default: the frame deadline
};

struct KvPolicyConfig {
  std::string type = "unbounded";  // unbounded | windowed
  int64_t window_tokens = 0;       // W
  int64_t sink_tokens = 0;         // S
  kv::Window window() const {
    return type == "windowed" ? kv::Window{window_tokens, sink_tokens} : kv::Window{};
  }
};

struct ArrivalConfig {
  std::string type = "all_at_once";  // all_at_once | fixed_interval | poisson
  int64_t sessions = 0;              // all_at_once, fixed_interval: how many callers
  double interval_s = 0;             // fixed_interval: one caller every interval_s
  double rate_per_s = 0;             // poisson: mean arrivals per second
  int64_t max_sessions = 0;          // poisson: stop after this many (0: until the horizon)
  double start_s = 0;                // first arrival
};

struct DurationConfig {
  std::string type = "fixed";  // fixed | exponential | lognormal
  double seconds = 0;          // fixed
  double mean_s = 0;           // exponential
  double median_s = 0;         // lognormal: exp(mu)
  double sigma = 0;            // lognormal: standard deviation of log duration
};

struct WorkloadConfig {
  ArrivalConfig arrival;
  DurationConfig duration;
  double frame_period_s = 0.08;
  std::optional<double> deadline_s;  // default: the frame period
  int64_t input_tokens_per_frame = 1;
  int64_t output_tokens_per_frame = 1;
  // Tokens appended to the session's KV per frame; default input + output. Moshi writes one
  // position per 80 ms step that carries both streams, so its scenarios set 1.
  std::optional<int64_t> kv_tokens_per_frame;
  int64_t prompt_tokens = 0;  // system prompt prefilled with the first frame
  double frame_jitter_s = 0;  // each frame released up to this late, uniformly

  double deadline() const { return deadline_s.value_or(frame_period_s); }
  int64_t kv_tokens() const {
    return kv_tokens_per_frame.value_or(input_tokens_per_frame + output_tokens_per_frame);
  }
};

struct CostModelConfig {
  std::string type = "roofline";   // roofline | corrected_roofline (analytic) | calibrated (file)
  double step_overhead_s = 0.001;  // scheduler and launch overhead per forward pass
  std::string file;                // calibrated: path of the calibration JSON
};

// Admission control (docs/admission.md). Fields of other types are accepted and ignored, so
// --set admission.type=... flips a scenario; to_json emits only the chosen type's fields.
struct AdmissionConfig {
  std::string type = "none";  // none | static | aimd | gradient
  int64_t cap = 0;            // static: the fixed cap
  // A guard that composes with any controller: a caller is admitted only if every admitted
  // session's worst-case blocks (windowed: S + W + the frame, whole blocks; unbounded with fixed
  // call lengths: its KV at hang-up) fit the pool. auto: on where that bound exists and a
  // controller is chosen; on: required (an error where it cannot be bounded); off.
  std::string memory_guard = "auto";
  // aimd and gradient: the control loop
  double interval_s = 1.0;          // control interval
  std::string signal = "reported";  // reported | true latency
  double quantile = 0.95;           // of the interval's per-frame latency
  int64_t initial_cap = 16;
  int64_t floor = 1;
  int64_t max_cap = 100000;
  // aimd
  double increase = 2;           // sessions added per interval with headroom
  double decrease_factor = 0.9;  // cap multiplier on congestion
  double low_fraction = 0.8;     // headroom below low_fraction x deadline
  double high_fraction = 0.9;    // congestion above high_fraction x deadline
  // gradient
  double tolerance = 1.5;   // how much short-term latency may exceed long-term before shrinking
  double smoothing = 0.2;   // weight of the new target per interval
  double long_window = 60;  // intervals in the long-term average
};

struct OutputConfig {
  double sample_period_s = 1.0;  // time-series resolution
};

struct Scenario {
  std::string name;
  std::string comment;
  std::string source;  // where it was loaded from, for messages
  ModelConfig model;
  GpuConfig gpu;
  EngineConfig engine;
  KvPolicyConfig kv_policy;
  WorkloadConfig workload;
  CostModelConfig cost_model;
  double horizon_s = 1800;
  uint64_t seed = 1;
  AdmissionConfig admission;
  OutputConfig output;
};

// `path` empty: the shipped default scenario. `sets` are "dotted.key=value" overrides applied after
// model and GPU names are resolved; a value is parsed as JSON when it can be, else taken as a
// string.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& sets = {});
Scenario parse_scenario(const nlohmann::json& resolved, const std::string& source);
// Reads a scenario file and resolves model/gpu names to objects, without validating the rest.
nlohmann::json read_scenario_json(const std::string& path);
void apply_set(nlohmann::json& j, const std::string& assignment, const std::string& base_dir);

// The fully resolved scenario, every default filled in; parse_scenario(to_json(s)) == s.
nlohmann::json to_json(const Scenario& s);

}  // namespace metronome
