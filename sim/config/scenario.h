// A scenario: model, GPU, engine, KV policy, workload, cost model, horizon and seed. Every section
// is a struct with defaults; load_scenario() validates everything once, so the simulator trusts it.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/frame_growth.h"
#include "core/kv_window.h"
#include "sim/admission/admission_policy.h"
#include "sim/admission/no_admission.h"
#include "sim/config/gpu.h"
#include "sim/config/model.h"
#include "sim/exhaustion/exhaustion_policy.h"
#include "sim/exhaustion/stall.h"
#include "sim/kv_policy/kv_policy.h"
#include "sim/kv_policy/kv_rule.h"
#include "sim/kv_policy/unbounded.h"
#include "sim/workload/all_at_once_arrivals.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"
#include "sim/workload/fixed_duration.h"

namespace metronome {

// Engine fields with two names (vLLM's and an older one): a file or group gives one of each pair.
inline constexpr std::pair<const char*, const char*> kEngineAliases[] = {
    {"num_gpu_blocks", "num_blocks"}, {"max_num_seqs", "max_sessions_per_step"}};

struct EngineConfig {
  int64_t block_size = 16;              // tokens per KV block
  double gpu_memory_utilization = 0.9;  // fraction of GPU memory the engine may use
  double activation_reserve_bytes = 2e9;
  // Continuous-batching cap: `max_num_seqs` in the file (vLLM's name), old alias
  // max_sessions_per_step.
  int64_t max_sessions_per_step = 256;
  std::optional<int64_t> num_blocks;  // explicit pool size, overriding the sizing rule
  // vLLM's --kv-cache-dtype: "auto" keeps the model's own KV element size
  // (model.kv_bytes_per_element); any other value sets it (fp8*: 1 byte, bfloat16/float16: 2).
  std::string kv_cache_dtype = "auto";
  // How steps are formed (docs/vllm.md). `frame`: a step serves whole frames of ready sessions and
  // `exhaustion` (sim/exhaustion/) says what a frame without blocks does. `vllm_v1`: vLLM V1's
  // scheduler, one model iteration per step under a token budget with chunked prefill; it preempts
  // the newest running request when a running one cannot grow and stalls the waiting ones
  // (exhaustion is not used).
  std::string scheduler = "frame";                      // frame | vllm_v1
  std::shared_ptr<const ExhaustionPolicy> exhaustion =  // frame: stall | preempt_recompute
      std::make_shared<const StallOnExhaustion>();
  int64_t max_num_batched_tokens = 8192;  // vllm_v1: tokens computed per step
  // GPUs one replica spans (vLLM's --tensor-parallel-size): 1, 2, 4 or 8. Weights and KV heads
  // are split over them (sim/pool/pool_sizing.h) and each layer adds two all-reduces
  // (sim/cost/tensor_parallel_cost_model.h).
  int64_t tensor_parallel = 1;
  std::string session_model = "resumable";  // vllm_v1: resumable | per_frame_request
  bool enable_prefix_caching = true;        // vllm_v1: vLLM's default
  // The serving layer pads a frame with silence when no output came this long after its release.
  // Absent in the file: the frame deadline, resolved once by parse_scenario (always set after it).
  std::optional<double> silence_after_s;
};

// The scenario's KV policy: one registered KvPolicy (sim/kv_policy/), unbounded by default.
struct KvPolicyConfig {
  std::shared_ptr<const KvPolicy> policy = std::make_shared<const UnboundedKv>();

  std::string type() const { return policy->type(); }
  // The rule as a window, for what runs only windows (the kernels' replay, vLLM's scheduler): a
  // ConfigError naming kv_policy.type for a policy that is none (the scenario's check refuses
  // those where it can).
  kv::Window window() const;
  // True when each session's resident KV has a bound whatever its call's length.
  bool bounded() const { return policy->bounded(); }
  // A sliding window or no bound at all: the rules recommend's cells and plan's candidates run in
  // its place, which they say where it was another (a cap, a reset, segment eviction).
  bool window_or_unbounded() const {
    const auto w = policy->window();
    return !policy->bounded() || (w && !w->unbounded());
  }
};

// When callers arrive: one registered ArrivalPolicy (sim/workload/arrivals.h).
struct ArrivalConfig {
  std::shared_ptr<const ArrivalPolicy> policy = std::make_shared<const AllAtOnceArrivals>(0, 0);

  std::string type() const { return policy->type(); }
  // Arrival instants drawn from the seed, not fixed by the scenario.
  bool random() const { return policy->random(); }
};

// How long calls last: one registered DurationPolicy (sim/workload/durations.h).
struct DurationConfig {
  std::shared_ptr<const DurationPolicy> policy = std::make_shared<const FixedDuration>(0);

  std::string type() const { return policy->type(); }
  // Every call's length where the scenario fixes it; nullopt where each call's is drawn.
  std::optional<double> fixed_s() const { return policy->fixed_s(); }
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
  kv::FrameGrowth growth() const { return {kv_tokens(), prompt_tokens}; }
};

struct CostModelConfig {
  // roofline | corrected_roofline (analytic) | calibrated (file). A scenario file that names no
  // type gets "auto", which load_scenario resolves to the best the GPU has (choose_cost_model).
  std::string type = "roofline";
  double step_overhead_s = 0.001;  // scheduler and launch overhead per forward pass
  std::string file;                // calibrated: path of the calibration JSON
  // Set where "auto" chose the type: which one and why, for the summary (empty: the scenario
  // named its type).
  std::string chosen;
};

// Admission control (docs/admission.md): one registered AdmissionPolicy (sim/admission/), none by
// default, and the memory guard, which composes with any of them: a caller is admitted only if
// every admitted session's worst-case blocks (windowed: S + W + the frame, whole blocks; unbounded
// with fixed call lengths: its KV at hang-up) fit the pool. auto: on where that bound exists and a
// policy limits admission; on: required (an error where it cannot be bounded); off.
struct AdmissionConfig {
  std::shared_ptr<const AdmissionPolicy> policy = std::make_shared<const NoAdmissionPolicy>();
  std::string memory_guard = "auto";
  // Where a caller's frame clock starts: "arrival", or "spread" (sim/admission/phase_spread.h).
  std::string join = "arrival";

  std::string type() const { return policy->type(); }
  // The policy's control loop, or the defaults where it has none (a fixed cap learns nothing).
  const ControlLoop& control_loop() const {
    static const ControlLoop kNone;
    const ControlLoop* l = policy->control_loop();
    return l ? *l : kNone;
  }
};

struct OutputConfig {
  double sample_period_s = 1.0;  // time-series resolution
};

struct FleetConfig;  // sim/fleet/fleet_config.h

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
  // Replicas behind a gateway (sim/fleet/fleet_config.h); null: one engine, as without it.
  std::shared_ptr<const FleetConfig> fleet;
  // Loud warnings found at load (a field that was accepted but probably means something else, an
  // inherited value that contradicts an override): printed to stderr by every command and kept in
  // JSON outputs under "warnings". Not part of to_json.
  std::vector<std::string> warnings;

  // The KV policy on this workload and block size (sim/kv_policy/kv_rule.h).
  KvRule kv_rule() const { return {*kv_policy.policy, workload.growth(), engine.block_size}; }
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
// Bytes per KV element that engine.kv_cache_dtype states; nullopt for "auto" (the model's own).
std::optional<int64_t> kv_cache_dtype_bytes(const std::string& dtype);

nlohmann::json to_json(const Scenario& s);
// A GPU file's shape_aware_correction block as parse_gpu reads it (without `held_out`).
nlohmann::json shape_aware_json(const ShapeAwareCorrection& c);

}  // namespace metronome
