#include "sim/config/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/config_error.h"
#include "base/json_file.h"
#include "base/json_section.h"
#include "base/time.h"
#include "sim/config/catalog.h"
#include "sim/config/config_field.h"
#include "sim/config/config_limits.h"
#include "sim/config/hf_config.h"
#include "sim/config/unused_sets.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/cost_models.h"
#include "sim/fleet/fleet_config.h"
#include "sim/scheduler/step_scheduler.h"

namespace metronome {
namespace {

std::string base_dir_of(const std::string& path) {
  if (path.empty()) return "";
  // A bare file name has no parent: its folder is the working directory, as for ./x.json.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

ModelConfig parse_model(JsonSection m);
GpuConfig parse_gpu(JsonSection g);

// A GPU file's measured_calibration is relative to that file; the built-in copy of a shipped one
// is relative to where it was shipped from (the source tree this binary was built from). Made
// absolute, so the resolved scenario still finds it.
void resolve_measured_calibration(nlohmann::json& gpu, const std::string& file) {
  auto f = gpu.find("measured_calibration");
  if (f == gpu.end() || !f->is_string() || f->get<std::string>().empty()) return;
  std::filesystem::path p(f->get<std::string>());
  if (p.is_absolute()) return;
  const std::string builtin = "(built-in) scenarios/";
  const std::filesystem::path dir =
      file.rfind(builtin, 0) == 0
          ? std::filesystem::path(METRONOME_SCENARIOS_DIR) / file.substr(builtin.size())
          : std::filesystem::path(file);
  *f = std::filesystem::absolute(dir.parent_path() / p).lexically_normal().string();
}

// A model or GPU is given by name (a shipped description, or one added beside the scenarios), by
// path (anything with a '/' or ending in .json: relative to the scenario file, or to the working
// directory for --set, as path_base says) or, for a model, as hf:PATH, a HuggingFace config.json.
// The description is validated here, against the file it came from, so that a bad field is
// reported there and not against the scenario that names it.
void resolve_reference(nlohmann::json& j, std::string_view key, std::string_view kind,
                       const std::string& base_dir, const std::string& path_base,
                       const std::string& source) {
  auto it = j.find(std::string(key));
  if (it == j.end() || !it->is_string()) return;
  const std::string name = it->get<std::string>();
  const bool model = key == "model";
  const bool hf = model && name.rfind("hf:", 0) == 0;
  const bool by_path = hf || name.find('/') != std::string::npos || name.ends_with(".json");
  nlohmann::json entry;
  std::string file;
  if (by_path) {
    std::filesystem::path p(hf ? name.substr(3) : name);
    if (p.is_relative() && !path_base.empty()) p = std::filesystem::path(path_base) / p;
    file = p.lexically_normal().string();
    entry = read_json_file(file, hf      ? "HuggingFace config.json"
                                 : model ? "model file"
                                         : "GPU file");
    // A config.json given without hf: is still read as one: it has HuggingFace's field names.
    if (model && (hf || (entry.is_object() && entry.contains("num_hidden_layers") &&
                         !entry.contains("layers")))) {
      entry = model_from_hf_config(entry, file);
      entry["loaded_from"] = "hf:" + file;
    } else if (model && entry.is_object()) {
      entry["loaded_from"] = file;
    }
  } else {
    entry = find_catalog_entry(kind, name, base_dir, source, &file);
  }
  if (!entry.is_object()) {
    throw ConfigError(file + ": expected a JSON object (a " + std::string(key) + " description)");
  }
  if (!entry.contains("name")) {
    entry["name"] = by_path ? std::filesystem::path(file).stem().string() : name;
  }
  if (model) {
    (void)parse_model(JsonSection(entry, file, ""));
  } else {
    entry["loaded_from"] = file;
    (void)parse_gpu(JsonSection(entry, file, ""));
    resolve_measured_calibration(entry, file);
  }
  *it = std::move(entry);
}

// A fleet's groups name their models and GPUs as the scenario does (fleet.groups[i].model).
void resolve_fleet_references(nlohmann::json& j, const std::string& base_dir,
                              const std::string& path_base, const std::string& source) {
  auto f = j.find("fleet");
  if (f == j.end() || !f->is_object()) return;
  auto groups = f->find("groups");
  if (groups == f->end() || !groups->is_array()) return;
  for (auto& g : *groups) {
    if (!g.is_object()) continue;
    resolve_reference(g, "model", "models", base_dir, path_base, source);
    resolve_reference(g, "gpu", "gpus", base_dir, path_base, source);
  }
}

// Without weight_bytes, the weights are counted from the shapes (and what that leaves out said).
void read_weight_bytes(JsonSection& m, ModelConfig& c) {
  if (m.has("weight_bytes")) {
    c.weight_bytes = m.in_range("weight_bytes", std::nullopt, 0, kMaxBytes);
  } else {
    if (!c.weights_not_counted.empty()) {
      std::string listed;
      for (const auto& p : c.weights_not_counted) listed += (listed.empty() ? "" : ", ") + p;
      c.notes.push_back("WARNING: the checkpoint also holds " + listed +
                        ": their weights are not counted (only the language model's, from its "
                        "shapes), so the KV pool comes out too large by their size; put the "
                        "checkpoint's model.safetensors.index.json beside config.json, or give "
                        "--set model.weight_bytes=B");
    }
    m.raw("weight_bytes");
    const double params = c.total_params();
    c.weight_bytes = params * c.weight_bytes_per_param;
    c.notes.push_back(fmt::format(
        "weight_bytes = {:.4g} B: {:.4g} parameters (embeddings {:.4g}, output head {}, {} layers "
        "of {:.4g}{}{}) x {} bytes",
        c.weight_bytes, params, static_cast<double>(c.vocab_size * c.hidden_size),
        c.tie_word_embeddings
            ? std::string("tied")
            : fmt::format("{:.4g}", static_cast<double>(c.vocab_size * c.hidden_size)),
        c.layers,
        (params -
         static_cast<double>(c.vocab_size * c.hidden_size) * (c.tie_word_embeddings ? 1 : 2) -
         static_cast<double>(c.hidden_size)) /
            static_cast<double>(c.layers),
        c.attention_bias == "none" ? "" : ", attention bias " + c.attention_bias,
        c.experts > 0 ? fmt::format(", {} experts each", c.experts) : std::string(),
        c.weight_bytes_per_param));
  }
}

const ConfigFields<ModelConfig>& model_fields() {
  using M = ModelConfig;
  static const ConfigFields<M> f = {
      string_field("name", &M::name, {}, "custom"),
      note_field<M>("comment"),
      note_field<M>("source"),
      string_field("loaded_from", &M::loaded_from, {}, kInitial, Write::kUnlessDefault),
      strings_field("notes", &M::notes, "an array of strings"),
      int_field("layers", &M::layers, 1, 100000, kRequired),
      int_field("hidden_size", &M::hidden_size, 1, 10'000'000, kRequired),
      int_field("attention_heads", &M::attention_heads, 1, 100000, kRequired),
      int_field("kv_heads", &M::kv_heads, 1, 100000, kRequired),
      int_field("head_dim", &M::head_dim, 1, 100000, kRequired),
      int_field("ffn_size", &M::ffn_size, 0, 100'000'000),
      int_field("vocab_size", &M::vocab_size, 0, 100'000'000),
      int_field("kv_bytes_per_element", &M::kv_bytes_per_element, 1, 8),
      number_field("weight_bytes_per_param", &M::weight_bytes_per_param, 0.125, 8),
      int_field("experts", &M::experts, 0, 100000),
      int_field("experts_active", &M::experts_active, 0, 100000),
      int_field("expert_ffn_size", &M::expert_ffn_size, 0, 100'000'000),
      // Only where they say something, so the resolved form of a shipped model stays as it was.
      string_field("attention_bias", &M::attention_bias, {"none", "qkv", "all"}, kInitial,
                   Write::kUnlessDefault),
      bool_field("tie_word_embeddings", &M::tie_word_embeddings, Write::kUnlessDefault),
      int_field("max_context_tokens", &M::max_context_tokens, 0, 1'000'000'000, kInitial,
                Write::kUnlessDefault),
      strings_field("weights_not_counted", &M::weights_not_counted, "an array of sub-model names"),
      {&read_weight_bytes,
       [](const M& c, nlohmann::json& j) { j["weight_bytes"] = c.weight_bytes; }},
  };
  return f;
}

ModelConfig parse_model(JsonSection m) {
  ModelConfig c;
  read_fields(model_fields(), m, c);
  m.finish();
  if (c.attention_heads % c.kv_heads != 0) {
    m.fail("attention_heads", "a multiple of kv_heads (grouped-query attention)");
  }
  if (c.experts > 0 && (c.experts_active < 1 || c.experts_active > c.experts)) {
    m.fail("experts_active", "between 1 and experts for an MoE model");
  }
  if (c.experts > 0 && c.expert_ffn_size < 1) m.fail("expert_ffn_size", "> 0 for an MoE model");
  if (c.experts == 0 && c.experts_active != 0) m.fail("experts_active", "0 when experts is 0");
  if (!(c.weight_bytes <= kMaxBytes)) m.fail("weight_bytes", "at most 1e18 bytes");
  // Meaning, not only type: weights are bytes, so 15.4 for a 15.4 GB model is a unit slip. Every
  // shipped model holds 2.0 to 2.8 bytes per parameter its shapes count; none can hold under a bit.
  // (Weights too large for the GPU are the pool's error: it holds no block.)
  if (const double params = c.total_params();
      c.weight_bytes != 0 && c.weight_bytes < 0.125 * params) {
    m.fail("weight_bytes",
           fmt::format("bytes: at least 0.125 per parameter its shapes count ({:.4g} parameters: "
                       "{:.3g} B; 15 GB is 15e9), or 0",
                       params, 0.125 * params));
  }
  return c;
}

// The link tensor parallelism prices its all-reduces on: its bandwidth and latency come together,
// with where they were read. Written only under engine.tensor_parallel > 1 (to_json).
void read_interconnect(JsonSection& g, GpuConfig& c) {
  if (g.has("interconnect_bandwidth_bytes_per_s") || g.has("interconnect_latency_s")) {
    c.interconnect_bandwidth_bytes_per_s =
        g.in_range("interconnect_bandwidth_bytes_per_s", std::nullopt, 1e6, 1e16);
    c.interconnect_latency_s = g.in_range("interconnect_latency_s", std::nullopt, 0, 1);
    c.interconnect_source = g.string("interconnect_source", std::nullopt);
  }
}

// What a GPU hour costs, with where the price was read; for plan, never written.
void read_price(JsonSection& g, GpuConfig& c) {
  if (g.has("price_per_gpu_hour")) {
    c.price_per_gpu_hour = g.in_range("price_per_gpu_hour", std::nullopt, 0, 1e6);
    c.price_source = g.string("price_source", std::nullopt);
  }
}

// The corrected roofline's fit; written only under the cost model that uses it (to_json).
const ConfigFields<RooflineCorrection>& roofline_correction_fields() {
  using R = RooflineCorrection;
  static const ConfigFields<R> f = {
      number_field("bandwidth_fraction", &R::bandwidth_fraction, 0.01, 1.0, kRequired),
      number_field("pointwise_bandwidth_fraction", &R::pointwise_bandwidth_fraction, 0.01, 1.0,
                   kRequired),
      number_field("flops_fraction", &R::flops_fraction, 0.01, 1.0, kRequired),
      number_field("layer_overhead_s", &R::layer_overhead_s, 0, 1, kRequired),
      number_field("pass_overhead_s", &R::pass_overhead_s, 0, 1, kRequired),
      string_field("fitted_on", &R::fitted_on, {}, kRequired),
      string_field("source", &R::source, {}, kRequired),
      any_note_field<R>("error"),  // the fit's before/after error table, for readers
  };
  return f;
}

// Multipliers of datasheet seconds: a GEMM or pointwise op faster than 1/10 of its datasheet time,
// or slower than 100x, is a fit gone wrong, not a GPU.
const ConfigFields<ShapeAwareCorrection>& shape_aware_correction_fields() {
  using C = ShapeAwareCorrection;
  static const ConfigFields<C> f = [] {
    ConfigFields<C> v = {
        number_field("gemm_memory", &C::gemm_memory, 0.1, 100, kRequired),
        number_field("gemm_compute", &C::gemm_compute, 0.1, 100, kRequired),
        number_field("gemm_overlap", &C::gemm_overlap, 0, 1, kRequired),
        number_field("gemm_kernel_s", &C::gemm_kernel_s, 0, 1, kRequired),
    };
    for (size_t k = 0; k < kPointwiseKinds.size(); ++k) {
      const std::string key = kPointwiseKinds[k];
      v.push_back({[key, k](JsonSection& r, C& c) {
                     c.pointwise[k] = r.in_range(key, std::nullopt, 0.1, 100);
                   },
                   [key, k](const C& c, nlohmann::json& j) { j[key] = c.pointwise[k]; }});
    }
    v.push_back(number_field("pointwise_kernel_s", &C::pointwise_kernel_s, 0, 1, kRequired));
    v.push_back(string_field("fitted_on", &C::fitted_on, {}, kRequired));
    v.push_back(string_field("source", &C::source, {}, kRequired));
    v.push_back(any_note_field<C>("held_out"));  // the fit's error on each profile left out
    return v;
  }();
  return f;
}

// An optional block of the GPU file, read by its own field list.
template <class Block>
ConfigField<GpuConfig> gpu_block(std::string key, Block GpuConfig::*m,
                                 const ConfigFields<Block>& (*fields)()) {
  return {[key, m, fields](JsonSection& g, GpuConfig& c) {
            if (!g.has(key)) return;
            JsonSection r = g.section(key, true);
            c.*m = parse_fields(fields(), r);
            (c.*m).present = true;
          },
          nullptr};
}

const ConfigFields<GpuConfig>& gpu_fields() {
  using G = GpuConfig;
  static const ConfigFields<G> f = {
      string_field("name", &G::name, {}, "custom"),
      note_field<G>("comment"),
      note_field<G>("source"),
      number_field("memory_bytes", &G::memory_bytes, 1, kMaxBytes, kRequired),
      string_field("memory_source", &G::memory_source, {}, kInitial, Write::kUnlessDefault),
      string_field("measured_calibration", &G::measured_calibration, {}, kInitial,
                   Write::kReadOnly),
      number_field("memory_bandwidth_bytes_per_s", &G::memory_bandwidth_bytes_per_s, 1, 1e16,
                   kRequired),
      number_field("bf16_flops", &G::bf16_flops, 1, 1e19, kRequired),
      {&read_interconnect, nullptr},
      {&read_price, nullptr},
      string_field("loaded_from", &G::loaded_from, {}, kInitial, Write::kReadOnly),
      gpu_block("roofline_correction", &G::roofline_correction, &roofline_correction_fields),
      gpu_block("shape_aware_correction", &G::shape_aware_correction,
                &shape_aware_correction_fields),
  };
  return f;
}

GpuConfig parse_gpu(JsonSection g) { return parse_fields(gpu_fields(), g); }

const std::vector<std::string>& kv_cache_dtypes() {
  static const std::vector<std::string> names = {"auto",     "fp8",      "fp8_e4m3",
                                                 "fp8_e5m2", "bfloat16", "float16"};
  return names;
}

const ConfigFields<EngineConfig>& engine_fields() {
  using E = EngineConfig;
  using nlohmann::json;
  // vllm_v1's own fields, written only under it so a frame scenario's resolved form stays as it
  // was.
  auto vllm_only = [](ConfigField<E> f) {
    return written_if<E>(std::move(f), [](const E& c) { return c.scheduler == "vllm_v1"; });
  };
  static const ConfigFields<E> f = {
      int_field("block_size", &E::block_size, 1, 1 << 20),
      {[](JsonSection& e, E& c) {
         c.gpu_memory_utilization = e.number("gpu_memory_utilization", c.gpu_memory_utilization);
         if (!(c.gpu_memory_utilization > 0 && c.gpu_memory_utilization <= 1)) {
           e.fail("gpu_memory_utilization", "a fraction in (0, 1]");
         }
       },
       [](const E& c, json& j) { j["gpu_memory_utilization"] = c.gpu_memory_utilization; }},
      {[](JsonSection& e, E& c) {
         c.activation_reserve_bytes =
             e.in_range("activation_reserve_bytes", c.activation_reserve_bytes, 0, kMaxBytes);
         // Bytes: a reserve under a megabyte is a GB figure written bare (2 for 2 GB).
         if (c.activation_reserve_bytes > 0 && c.activation_reserve_bytes < 1e6) {
           e.fail("activation_reserve_bytes", "bytes: 0, or at least 1e6 (2 GB is 2e9)");
         }
       },
       [](const E& c, json& j) { j["activation_reserve_bytes"] = c.activation_reserve_bytes; }},
      // Written under vLLM's name; max_sessions_per_step is its old alias.
      {[](JsonSection& e, E& c) {
         if (e.has("max_num_seqs") && e.has("max_sessions_per_step")) {
           e.fail("max_num_seqs", "only one of max_num_seqs and its alias max_sessions_per_step");
         }
         c.max_sessions_per_step =
             e.has("max_num_seqs")
                 ? e.integer("max_num_seqs", c.max_sessions_per_step, 1, kMaxCount)
                 : e.integer("max_sessions_per_step", c.max_sessions_per_step, 1, kMaxCount);
       },
       [](const E& c, json& j) { j["max_num_seqs"] = c.max_sessions_per_step; }},
      // vLLM logs its pool as "# GPU blocks: N" (num_gpu_blocks): a user can read it off their
      // server and give it here, overriding the sizing rule. num_blocks is the older name.
      {[](JsonSection& e, E& c) {
         if (e.has("num_gpu_blocks") && e.has("num_blocks")) {
           e.fail("num_gpu_blocks", "only one of num_gpu_blocks and its alias num_blocks");
         }
         e.raw("num_gpu_blocks");  // null: no count, as absent (--set engine.num_gpu_blocks=null)
         c.num_blocks = e.has("num_gpu_blocks") ? e.optional_integer("num_gpu_blocks", 1, kMaxCount)
                                                : e.optional_integer("num_blocks", 1, kMaxCount);
       },
       [](const E& c, json& j) {
         if (c.num_blocks) j["num_blocks"] = *c.num_blocks;
       }},
      string_field("kv_cache_dtype", &E::kv_cache_dtype, kv_cache_dtypes()),
      string_field("scheduler", &E::scheduler, step_scheduler_names()),
      {[](JsonSection& e, E& c) {
         c.exhaustion = exhaustion_policies().parse_type(e, "exhaustion", "stall");
       },
       [](const E& c, json& j) { j["exhaustion"] = c.exhaustion->type(); }},
      vllm_only(int_field("max_num_batched_tokens", &E::max_num_batched_tokens, 1, kMaxCount)),
      // Only where it is used, so the resolved config of a one-GPU replica stays as it was.
      {[](JsonSection& e, E& c) {
         c.tensor_parallel = e.integer("tensor_parallel", c.tensor_parallel, 1, 8);
         if ((c.tensor_parallel & (c.tensor_parallel - 1)) != 0) {
           e.fail("tensor_parallel", "one of 1, 2, 4, 8 (GPUs per replica)");
         }
       },
       [](const E& c, json& j) {
         if (c.tensor_parallel > 1) j["tensor_parallel"] = c.tensor_parallel;
       }},
      vllm_only(
          string_field("session_model", &E::session_model, {"resumable", "per_frame_request"})),
      vllm_only(bool_field("enable_prefix_caching", &E::enable_prefix_caching)),
      // Resolved by parse_scenario where absent (the frame deadline), so always set when written.
      {[](JsonSection& e, E& c) {
         c.silence_after_s = e.optional_positive("silence_after_s");
         if (c.silence_after_s && *c.silence_after_s > kMaxSeconds)
           e.fail("silence_after_s", "at most 1e9 s");
       },
       [](const E& c, json& j) { j["silence_after_s"] = c.silence_after_s.value(); }},
  };
  return f;
}

EngineConfig parse_engine(JsonSection e) { return parse_fields(engine_fields(), e); }

KvPolicyConfig parse_kv_policy(JsonSection k) {
  KvPolicyConfig c;
  c.policy = kv_policies().parse(k, "unbounded");
  return c;
}

// The rate as users state it: KV tokens per second per session, the other way of giving
// kv_tokens_per_frame (= rate x frame_period_s). Given both, they must agree. Never written: the
// resolved form states kv_tokens_per_frame.
void read_tokens_per_s(JsonSection& w, WorkloadConfig& c) {
  if (w.has("tokens_per_s_per_session")) {
    const double rate = w.in_range("tokens_per_s_per_session", std::nullopt, 0, 1e9);
    const double per_frame = rate * c.frame_period_s;
    const double whole = std::round(per_frame);
    if (c.kv_tokens_per_frame) {
      if (std::fabs(per_frame - static_cast<double>(*c.kv_tokens_per_frame)) >
          1e-9 * std::max(1.0, per_frame)) {
        w.fail(
            "tokens_per_s_per_session",
            fmt::format("kv_tokens_per_frame / frame_period_s = {} / {} = {:.6g} (both are given "
                        "and disagree: give one of the two, e.g. --set "
                        "workload.kv_tokens_per_frame=null)",
                        *c.kv_tokens_per_frame, c.frame_period_s,
                        static_cast<double>(*c.kv_tokens_per_frame) / c.frame_period_s));
      }
    } else if (std::fabs(per_frame - whole) > 1e-9 * std::max(1.0, per_frame) ||
               whole > 2'000'000) {
      w.fail("tokens_per_s_per_session",
             fmt::format("a whole number of tokens per frame (x frame_period_s {} = {:.6g}; a "
                         "session's KV grows by whole tokens per frame)",
                         c.frame_period_s, per_frame));
    } else {
      c.kv_tokens_per_frame = static_cast<int64_t>(whole);
    }
  } else {
    w.raw("tokens_per_s_per_session");
  }
}

const ConfigFields<WorkloadConfig>& workload_fields() {
  using W = WorkloadConfig;
  using nlohmann::json;
  static const ConfigFields<W> f = {
      {[](JsonSection& w, W& c) {
         JsonSection a = w.section("arrival", true);
         c.arrival.policy = arrival_policies().parse(a, std::nullopt);
       },
       [](const W& c, json& j) {
         json a = {{"type", c.arrival.type()}};
         c.arrival.policy->write(a);
         j["arrival"] = a;
       }},
      {[](JsonSection& w, W& c) {
         JsonSection d = w.section("duration", true);
         c.duration.policy = duration_policies().parse(d, std::nullopt);
       },
       [](const W& c, json& j) {
         json d = {{"type", c.duration.type()}};
         c.duration.policy->write(d);
         j["duration"] = d;
       }},
      {[](JsonSection& w, W& c) {
         c.frame_period_s = w.in_range("frame_period_s", c.frame_period_s, 1e-9, kMaxSeconds);
         if (!(c.frame_period_s >= 1e-9)) w.fail("frame_period_s", "a period of at least 1 ns");
         // The clock counts whole nanoseconds: a period it would round by more than a millionth
         // of itself (1.5 ns runs as 2 ns) is refused rather than silently changed.
         if (const double ns = c.frame_period_s * 1e9; std::fabs(ns - std::round(ns)) > 1e-6 * ns) {
           w.fail("frame_period_s", "a whole number of nanoseconds (the simulator's clock), got " +
                                        nlohmann::json(c.frame_period_s).dump() + " s");
         }
       },
       [](const W& c, json& j) { j["frame_period_s"] = c.frame_period_s; }},
      {[](JsonSection& w, W& c) {
         c.deadline_s = w.optional_positive("deadline_s");
         if (c.deadline_s && *c.deadline_s > kMaxSeconds) w.fail("deadline_s", "at most 1e9 s");
       },
       [](const W& c, json& j) { j["deadline_s"] = c.deadline(); }},
      int_field("input_tokens_per_frame", &W::input_tokens_per_frame, 0, 1'000'000),
      int_field("output_tokens_per_frame", &W::output_tokens_per_frame, 0, 1'000'000),
      {[](JsonSection& w, W& c) {
         c.kv_tokens_per_frame = w.optional_integer("kv_tokens_per_frame", 0, 2'000'000);
       },
       [](const W& c, json& j) { j["kv_tokens_per_frame"] = c.kv_tokens(); }},
      int_field("prompt_tokens", &W::prompt_tokens, 0, 100'000'000),
      {[](JsonSection& w, W& c) {
         c.frame_jitter_s = w.non_negative("frame_jitter_s", c.frame_jitter_s);
         if (c.frame_jitter_s >= c.frame_period_s) {
           w.fail("frame_jitter_s", "less than frame_period_s (frames stay in order)");
         }
       },
       [](const W& c, json& j) { j["frame_jitter_s"] = c.frame_jitter_s; }},
      {&read_tokens_per_s, nullptr},
  };
  return f;
}

WorkloadConfig parse_workload(JsonSection w) { return parse_fields(workload_fields(), w); }

// "auto" is resolved by parse_scenario (choose_cost_model) before the section is ever written.
const std::vector<std::string>& cost_model_choices() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> types = cost_model_types();
    types.insert(types.begin(), "auto");
    return types;
  }();
  return names;
}

const ConfigFields<CostModelConfig>& cost_model_fields() {
  using C = CostModelConfig;
  using nlohmann::json;
  static const ConfigFields<C> f = {
      string_field("type", &C::type, cost_model_choices(), "auto"),
      {[](JsonSection& m, C& c) {
         c.step_overhead_s = m.in_range("step_overhead_s", c.step_overhead_s, 0, 1000);
         if (c.type == "fixed" && !(c.step_overhead_s > 0))
           m.fail("step_overhead_s", "> 0: the fixed cost model's time per pass");
       },
       [](const C& c, json& j) { j["step_overhead_s"] = c.step_overhead_s; }},
      // Accepted under either type, so --set cost_model.type=roofline flips a calibrated scenario.
      {[](JsonSection& m, C& c) {
         c.file = m.string("file",
                           c.type == "calibrated" ? std::nullopt : std::optional<std::string>(""));
         if (c.type == "calibrated" && c.file.empty())
           m.fail("file", "the path of a calibration JSON file");
       },
       config_field::writer("file", &C::file, Write::kUnlessDefault)},
  };
  return f;
}

CostModelConfig parse_cost_model(JsonSection m) { return parse_fields(cost_model_fields(), m); }

const ConfigFields<AdmissionConfig>& admission_fields() {
  using A = AdmissionConfig;
  using nlohmann::json;
  static const ConfigFields<A> f = {
      // Written where a policy limits admission (there "auto" guards), or where it is not "auto".
      written_if<A>(string_field("memory_guard", &A::memory_guard, {"auto", "on", "off"}),
                    [](const A& c) { return c.policy->limits() || c.memory_guard != "auto"; }),
      string_field("join", &A::join, {"arrival", "spread"}, kInitial, Write::kUnlessDefault),
      // Last: the registry's parse rejects the section's keys nothing has read.
      {[](JsonSection& a, A& c) { c.policy = admission_policies().parse(a, "none"); },
       [](const A& c, json& j) {
         j["type"] = c.type();
         c.policy->write(j);
       }},
  };
  return f;
}

AdmissionConfig parse_admission(JsonSection a) {
  AdmissionConfig c;
  read_fields(admission_fields(), a, c);
  return c;
}

const ConfigFields<OutputConfig>& output_fields() {
  static const ConfigFields<OutputConfig> f = {
      number_field("sample_period_s", &OutputConfig::sample_period_s, 1e-6, kMaxSeconds)};
  return f;
}

// `key` in the resolved form: a new object for a section's fields to fill.
nlohmann::json& new_section(nlohmann::json& j, const char* key) {
  return j[key] = nlohmann::json::object();
}

// The scenario's own fields and its sections, in the order they are read. What joins sections is
// here: a KV dtype that sets the model's element size, defaults resolved from another section,
// GPU blocks written only where the engine or cost model uses them. The fleet, which reads the
// whole scenario, is parse_scenario's, after these.
const ConfigFields<Scenario>& scenario_fields() {
  using S = Scenario;
  using nlohmann::json;
  static const ConfigFields<S> f = {
      string_field("name", &S::name, {}, "unnamed"),
      string_field("comment", &S::comment, {}, ""),
      {[](JsonSection& t, S& s) { s.model = parse_model(t.section("model", true)); },
       [](const S& s, json& j) { write_fields(model_fields(), s.model, new_section(j, "model")); }},
      {[](JsonSection& t, S& s) { s.gpu = parse_gpu(t.section("gpu", true)); },
       [](const S& s, json& j) {
         json& gpu = new_section(j, "gpu");
         write_fields(gpu_fields(), s.gpu, gpu);
         // Only where it is used, so the resolved config of a plain roofline run stays as it was.
         if (s.cost_model.type == "corrected_roofline" && s.gpu.roofline_correction.present) {
           write_fields(roofline_correction_fields(), s.gpu.roofline_correction,
                        new_section(gpu, "roofline_correction"));
         }
         if (s.cost_model.type == "shape_aware_roofline" && s.gpu.shape_aware_correction.present) {
           gpu["shape_aware_correction"] = shape_aware_json(s.gpu.shape_aware_correction);
         }
         // Only where it is used, so the resolved config of a one-GPU replica stays as it was.
         if (s.engine.tensor_parallel > 1) {
           gpu["interconnect_bandwidth_bytes_per_s"] = s.gpu.interconnect_bandwidth_bytes_per_s;
           gpu["interconnect_latency_s"] = s.gpu.interconnect_latency_s;
           gpu["interconnect_source"] = s.gpu.interconnect_source;
         }
       }},
      {[](JsonSection& t, S& s) {
         s.engine = parse_engine(t.section("engine"));
         if (const auto bytes = kv_cache_dtype_bytes(s.engine.kv_cache_dtype)) {
           s.model.kv_bytes_per_element = *bytes;
         }
       },
       [](const S& s, json& j) {
         write_fields(engine_fields(), s.engine, new_section(j, "engine"));
       }},
      {[](JsonSection& t, S& s) { s.kv_policy = parse_kv_policy(t.section("kv_policy")); },
       [](const S& s, json& j) {
         json kv = {{"type", s.kv_policy.type()}};
         s.kv_policy.policy->write(kv);
         j["kv_policy"] = kv;
       }},
      {[](JsonSection& t, S& s) {
         s.workload = parse_workload(t.section("workload", true));
         if (!s.engine.silence_after_s) s.engine.silence_after_s = s.workload.deadline();
       },
       [](const S& s, json& j) {
         write_fields(workload_fields(), s.workload, new_section(j, "workload"));
       }},
      {[](JsonSection& t, S& s) {
         s.cost_model = parse_cost_model(t.section("cost_model"));
         if (s.cost_model.type == "auto") choose_cost_model(s);
       },
       [](const S& s, json& j) {
         write_fields(cost_model_fields(), s.cost_model, new_section(j, "cost_model"));
       }},
      number_field("horizon_s", &S::horizon_s, 1e-9, kMaxSeconds, kRequired),
      {[](JsonSection& t, S& s) {
         s.seed = static_cast<uint64_t>(t.integer("seed", 1, 0, static_cast<int64_t>(kMaxSeed)));
       },
       [](const S& s, json& j) { j["seed"] = s.seed; }},
      {[](JsonSection& t, S& s) { s.admission = parse_admission(t.section("admission")); },
       [](const S& s, json& j) {
         write_fields(admission_fields(), s.admission, new_section(j, "admission"));
       }},
      {[](JsonSection& t, S& s) {
         JsonSection out = t.section("output");
         read_fields(output_fields(), out, s.output);
         out.finish();
       },
       [](const S& s, json& j) {
         write_fields(output_fields(), s.output, new_section(j, "output"));
       }},
  };
  return f;
}

// Tensor parallelism splits every layer's heads and MLP over the GPUs (sim/cost/
// tensor_parallel_cost_model.h): the degree must divide them. Fewer KV heads than GPUs are
// replicated, as vLLM does, which needs the degree to be a multiple of them.
void check_tensor_parallel(const Scenario& s) {
  const int64_t k = s.engine.tensor_parallel;
  if (k == 1) return;
  const auto& m = s.model;
  auto fail = [&](const std::string& why) {
    throw ConfigError(fmt::format("{}: engine.tensor_parallel: {} with model {}; got {}", s.source,
                                  why, m.name, k));
  };
  if (m.attention_heads % k != 0) {
    fail(fmt::format("expected a degree that divides model.attention_heads ({})",
                     m.attention_heads));
  }
  if (m.kv_heads >= k ? m.kv_heads % k != 0 : k % m.kv_heads != 0) {
    fail(fmt::format(
        "expected a degree that divides model.kv_heads ({}), or a multiple of it (each GPU then "
        "holds a copy of one KV head)",
        m.kv_heads));
  }
  if (m.ffn_size % k != 0) {
    fail(fmt::format("expected a degree that divides model.ffn_size ({})", m.ffn_size));
  }
  if (m.expert_ffn_size % k != 0) {
    fail(fmt::format("expected a degree that divides model.expert_ffn_size ({})",
                     m.expert_ffn_size));
  }
  if (!(s.gpu.interconnect_bandwidth_bytes_per_s > 0)) {
    throw ConfigError(fmt::format(
        "{}: gpu.interconnect_bandwidth_bytes_per_s: engine.tensor_parallel {} prices two "
        "all-reduces per layer over the GPUs' link; GPU {}'s description states none (add "
        "interconnect_bandwidth_bytes_per_s, interconnect_latency_s and interconnect_source)",
        s.source, k, s.gpu.name));
  }
}

// Limits that keep one run's time and memory bounded; past them the user is asked to change the
// field rather than wait on a run that cannot finish.
constexpr double kMaxSamples = 1e7;
constexpr double kMaxFramePeriods = 1e8;

void check_run_size(const Scenario& s) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw ConfigError(s.source + ": " + field + ": " + why);
  };
  // Every frame period of the horizon takes at least one engine step: past 1e8 (1e9 s of 80 ms
  // frames is 1.25e10) the run cannot finish in any useful time, and shows nothing while it tries.
  const double periods = s.horizon_s / s.workload.frame_period_s;
  if (periods > kMaxFramePeriods) {
    fail("horizon_s",
         "expected at most 1e8 frame periods over the horizon, got horizon_s / "
         "workload.frame_period_s = " +
             nlohmann::json(periods).dump() + "; shorten the horizon (at most " +
             nlohmann::json(kMaxFramePeriods * s.workload.frame_period_s).dump() +
             " s at this frame period)");
  }
  const double samples = s.horizon_s / s.output.sample_period_s;
  if (samples > kMaxSamples) {
    fail("output.sample_period_s",
         "expected at most 1e7 samples over the horizon, got horizon_s / "
         "sample_period_s = " +
             nlohmann::json(samples).dump() + "; raise output.sample_period_s");
  }
  if (const std::string e = s.workload.arrival.policy->check_size(s.horizon_s); !e.empty()) {
    throw ConfigError(s.source + ": workload.arrival." + e);
  }
}

// Accepted but probably not meant: each is a loud warning (Scenario::warnings), or an error where
// no reading of it makes sense.
void collect_warnings(Scenario& s, const nlohmann::json& j) {
  auto& out = s.warnings;
  for (const auto& n : s.model.notes) {
    if (n.rfind("WARNING: ", 0) == 0) out.push_back("model " + s.model.name + ": " + n.substr(9));
  }
  const auto& w = s.workload;
  const bool kv_given = w.kv_tokens_per_frame.has_value();
  const int64_t biggest = std::max(w.input_tokens_per_frame, w.output_tokens_per_frame);
  if (kv_given && w.kv_tokens() < biggest) {
    out.push_back(fmt::format(
        "workload.kv_tokens_per_frame {} is less than the {} {} tokens per frame: every token a "
        "frame ingests or generates stays in the session's KV in vLLM, so the pool would fill "
        "{:.3g}x faster at input + output = {}; drop it (--set workload.kv_tokens_per_frame=null) "
        "unless the model writes fewer positions than tokens (Moshi: one per step)",
        w.kv_tokens(), w.input_tokens_per_frame >= w.output_tokens_per_frame ? "input" : "output",
        biggest,
        static_cast<double>(w.input_tokens_per_frame + w.output_tokens_per_frame) /
            static_cast<double>(std::max<int64_t>(1, w.kv_tokens())),
        w.input_tokens_per_frame + w.output_tokens_per_frame));
  }
  if (w.input_tokens_per_frame == 0 && w.output_tokens_per_frame == 0) {
    out.push_back(
        "workload.input_tokens_per_frame and output_tokens_per_frame are both 0: a frame carries "
        "no token, costs no step time and is always on time; expected a frame's tokens (Moshi: "
        "1 and 1)");
  }
  // The ledger samples at whole periods up to the horizon (sim/engine/frame_ledger.h): a remainder
  // would close no interval of the time series.
  if (const Time period = std::max<Time>(1, from_seconds(s.output.sample_period_s)),
      horizon = from_seconds(s.horizon_s);
      horizon % period != 0) {
    out.push_back(
        horizon < period
            ? fmt::format("horizon_s {} is shorter than output.sample_period_s {}: the time series "
                          "has no sample, and the run is in its totals only",
                          s.horizon_s, s.output.sample_period_s)
            : fmt::format("horizon_s {} is not a whole number of output.sample_period_s {}: the "
                          "time series' last sample is at {:.9g} s, and the {:.9g} s after it are "
                          "in the run's totals only",
                          s.horizon_s, s.output.sample_period_s,
                          to_seconds(horizon - horizon % period), to_seconds(horizon % period)));
  }
  const auto engine = j.find("engine");
  if (s.engine.scheduler == "frame" && engine != j.end() && engine->is_object() &&
      engine->contains("max_num_batched_tokens") &&
      !(*engine)["max_num_batched_tokens"].is_null()) {
    out.push_back(fmt::format(
        "engine.max_num_batched_tokens {} is ignored by engine.scheduler \"frame\", which serves "
        "whole frames of up to engine.max_num_seqs sessions per step; set engine.scheduler=vllm_v1 "
        "for vLLM's token budget",
        s.engine.max_num_batched_tokens));
  }
  for (const char* key : {"session_model", "enable_prefix_caching"}) {
    if (s.engine.scheduler == "frame" && engine != j.end() && engine->is_object() &&
        engine->contains(key) && !(*engine)[key].is_null()) {
      out.push_back(fmt::format(
          "engine.{} {} is ignored by engine.scheduler \"frame\": it is a field of vLLM's "
          "scheduler (set engine.scheduler=vllm_v1 to use it)",
          key, (*engine)[key].dump()));
    }
  }
  const double deadline = w.deadline();
  if (deadline > 10 * w.frame_period_s) {
    throw ConfigError(fmt::format(
        "{}: workload.deadline_s: expected at most 10 x frame_period_s ({:g} s), got {:g}: a "
        "deadline is in seconds (150 ms is 0.15)",
        s.source, 10 * w.frame_period_s, deadline));
  }
  if (deadline > w.frame_period_s) {
    out.push_back(fmt::format(
        "workload.deadline_s {:g} s is longer than the frame period {:g} s: a caller's next frame "
        "arrives before this one is due (a deadline is in seconds: 150 ms is 0.15)",
        deadline, w.frame_period_s));
  }
  // A window that never slides (other bounded policies say what they hold in their own terms).
  if (const auto w_opt = s.kv_policy.policy->window(); w_opt && !w_opt->unbounded()) {
    const kv::Window win = *w_opt;
    const double call_s = w.duration.policy->typical_s();
    const double call_tokens = static_cast<double>(w.prompt_tokens) +
                               call_s / w.frame_period_s * static_cast<double>(w.kv_tokens());
    const double held = static_cast<double>(win.window + win.sinks);
    if (held >= call_tokens) {
      out.push_back(fmt::format(
          "kv_policy: sinks + window = {} tokens is at least a whole call ({} {:g} s = {:.0f} "
          "tokens at {} per {:g} s frame): the window never slides, so windowed KV holds what "
          "unbounded KV would; a window is in tokens, {:.0f} tokens is {:.1f} s of conversation",
          win.window + win.sinks, w.duration.fixed_s() ? "a call of" : "a typical call of", call_s,
          call_tokens, w.kv_tokens(), w.frame_period_s, held,
          held / static_cast<double>(std::max<int64_t>(1, w.kv_tokens())) * w.frame_period_s));
    }
    if (s.model.max_context_tokens > 0 && held > static_cast<double>(s.model.max_context_tokens)) {
      out.push_back(fmt::format(
          "kv_policy: sinks + window = {} tokens is longer than model {}'s context of {} tokens "
          "(max_context_tokens): positions past it were never trained",
          win.window + win.sinks, s.model.name, s.model.max_context_tokens));
    }
  }
  // Policies that stop or restart a session's positions bound the position its queries reach: the
  // cap, or the context just before a reset (the resident tokens and one frame's).
  const KvPolicy& kv = *s.kv_policy.policy;
  if (s.model.max_context_tokens > 0 && (kv.context_cap() || kv.restarts_positions())) {
    const kv::FrameGrowth g = w.growth();
    const int64_t reach =
        kv.context_cap() ? *kv.context_cap() : kv.max_resident_tokens(g) + g.per_frame;
    if (reach > s.model.max_context_tokens) {
      out.push_back(fmt::format(
          "kv_policy: a session's positions reach {} tokens under {}, past model {}'s context of "
          "{} tokens (max_context_tokens): positions past it were never trained",
          reach, kv.describe(), s.model.name, s.model.max_context_tokens));
    }
  }
}

}  // namespace

nlohmann::json read_scenario_json(const std::string& path) {
  nlohmann::json j;
  std::string source;
  if (path.empty()) {
    auto text = embedded_scenario_file("default.json");
    if (!text) throw ConfigError("no built-in default scenario (scenarios/default.json)");
    source = "(built-in) scenarios/default.json";
    j = parse_json(*text, source);
  } else {
    j = read_json_file(path, "scenario file");
    source = path;
  }
  if (!j.is_object()) throw ConfigError(source + ": expected a JSON object at the top level");
  resolve_reference(j, "model", "models", base_dir_of(path), base_dir_of(path), source);
  resolve_reference(j, "gpu", "gpus", base_dir_of(path), base_dir_of(path), source);
  resolve_fleet_references(j, base_dir_of(path), base_dir_of(path), source);
  // A calibration file or traffic profile named in a scenario file is relative to that file (a
  // --set one: to the cwd). Made absolute so that the resolved scenario written beside results
  // still finds it.
  auto absolute_in = [&](nlohmann::json& section, const char* key) {
    if (auto f = section.find(key); f != section.end() && f->is_string() && !path.empty()) {
      const std::filesystem::path file(f->get<std::string>());
      if (file.is_relative() && !file.empty()) {
        *f = std::filesystem::absolute(std::filesystem::path(base_dir_of(path)) / file)
                 .lexically_normal()
                 .string();
      }
    }
  };
  if (auto cm = j.find("cost_model"); cm != j.end() && cm->is_object()) absolute_in(*cm, "file");
  if (auto w = j.find("workload"); w != j.end() && w->is_object()) {
    if (auto a = w->find("arrival"); a != w->end() && a->is_object()) {
      absolute_in(*a, "profile_file");
    }
  }
  return j;
}

void apply_set(nlohmann::json& j, const std::string& assignment, const std::string& base_dir) {
  const std::string where = "--set " + argument_preview(assignment);
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(where + ": expected key=value, e.g. workload.frame_period_s=0.08");
  }
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  // A bare word such as windowed is a string; JSON that breaks a limit (1e309) is an error.
  const nlohmann::json value = parse_json_if_json(text, where).value_or(nlohmann::json(text));
  nlohmann::json* node = &j;
  std::string walked;
  size_t pos = 0;
  while (true) {
    const auto dot = key.find('.', pos);
    const std::string part =
        key.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (part.empty()) throw ConfigError(where + ": empty component in key \"" + key + "\"");
    if (!node->is_object()) {
      throw ConfigError(where + ": \"" + walked + "\" is not an object, so it has no field \"" +
                        part + "\"");
    }
    walked += (walked.empty() ? "" : ".") + part;
    if (dot == std::string::npos) {
      (*node)[part] = value;
      break;
    }
    if (!node->contains(part)) (*node)[part] = nlohmann::json::object();
    node = &(*node)[part];
    pos = dot + 1;
  }
  // Setting model=<name or path> or gpu=<name or path> swaps in that description; a path on the
  // command line is relative to the working directory.
  resolve_reference(j, "model", "models", base_dir, "", where);
  resolve_reference(j, "gpu", "gpus", base_dir, "", where);
  resolve_fleet_references(j, base_dir, "", where);
}

kv::Window KvPolicyConfig::window() const {
  if (const auto w = policy->window()) return *w;
  throw ConfigError("kv_policy.type: \"" + type() +
                    "\" is no sliding window, which this command runs; expected \"unbounded\" "
                    "or \"windowed\"");
}

Scenario parse_scenario(const nlohmann::json& j, const std::string& source) {
  JsonSection top(j, source, "");
  Scenario s;
  s.source = source;
  read_fields(scenario_fields(), top, s);
  if (top.has("fleet")) {
    JsonSection fleet = top.section("fleet", true);
    s.fleet = parse_fleet(fleet, j, source);
  } else {
    top.raw("fleet");  // null: no fleet (--set fleet=null runs a fleet scenario on one engine)
  }
  top.finish();
  if (const std::string e = s.kv_policy.policy->check(s.workload.growth(), s.engine.block_size);
      !e.empty()) {
    throw ConfigError(source + ": kv_policy." + e);
  }
  if (s.engine.scheduler == "vllm_v1" && !s.kv_policy.policy->window()) {
    throw ConfigError(source + ": kv_policy.type: \"" + s.kv_policy.type() +
                      "\" is no sliding window, which is what engine.scheduler \"vllm_v1\" "
                      "models; expected \"unbounded\" or \"windowed\", or engine.scheduler "
                      "\"frame\"");
  }
  if (s.admission.memory_guard == "on" && !s.kv_policy.bounded() &&
      !s.workload.duration.fixed_s()) {
    throw ConfigError(
        source +
        ": admission.memory_guard: \"on\" needs a bound on each session's "
        "blocks: bounded KV (e.g. windowed), or unbounded KV with workload.duration.type \"fixed\" "
        "(random call lengths are unknown at admission); use \"auto\" or \"off\"");
  }
  if (s.admission.join == "spread" &&
      !(s.workload.frame_period_s >= 1.024e-6 && s.workload.frame_period_s <= 1e6)) {
    throw ConfigError(source +
                      ": workload.frame_period_s: expected 1.024 us to 1e6 s with admission.join "
                      "\"spread\" (1024 phase slots per period)");
  }
  if (const double start = s.workload.arrival.policy->start_s(); start > s.horizon_s) {
    throw ConfigError(fmt::format(
        "{}: workload.arrival.start_s: {} s is past horizon_s {} s, so no caller would arrive; "
        "expected a start within the run",
        source, start, s.horizon_s));
  }
  check_tensor_parallel(s);
  check_run_size(s);
  collect_warnings(s, j);
  // vLLM keeps every ingested token and every sampled one but the last (docs/vllm.md, growth per
  // frame): a resumable session whose scenario states no KV growth grows by that, for every
  // reader of the growth rule (first-order, pool sizing, capacity) as for the vLLM model itself.
  // After the warnings, which are about a growth the user gave.
  if (s.engine.scheduler == "vllm_v1" && s.engine.session_model == "resumable" &&
      !s.workload.kv_tokens_per_frame) {
    s.workload.kv_tokens_per_frame = std::max<int64_t>(
        0, s.workload.input_tokens_per_frame + s.workload.output_tokens_per_frame - 1);
  }
  return s;
}

namespace {

std::string description_name(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return "";
  auto n = it->find("name");
  return n != it->end() && n->is_string() ? n->get<std::string>() : "";
}

// After --set model=... or gpu=..., the scenario's name and comment no longer describe it: the
// name takes the new model or GPU in place of the old one, and the comment says what was swapped
// (the old comment's figures were for the old one).
void follow_swaps(nlohmann::json& j, const std::vector<std::pair<std::string, std::string>>& swaps,
                  bool name_set, bool comment_set) {
  if (swaps.empty()) return;
  const std::string old_name = j.contains("name") && j["name"].is_string()
                                   ? j["name"].get<std::string>()
                                   : std::string("unnamed");
  std::string name = old_name;
  std::string what;
  for (const auto& [from, to] : swaps) {
    if (from == to) continue;
    if (const auto at = from.empty() ? std::string::npos : name.find(from);
        at != std::string::npos) {
      name.replace(at, from.size(), to);
    } else {
      name += " with " + to;
    }
    what += (what.empty() ? "" : ", ") + (from.empty() ? std::string("?") : from) +
            " replaced by " + to;
  }
  if (what.empty()) return;
  if (!name_set) j["name"] = name;
  if (!comment_set) {
    j["comment"] = "Scenario \"" + old_name + "\" with " + what +
                   " (--set); its own comment described the original and is not repeated.";
  }
}

const nlohmann::json* workload_field(const nlohmann::json& j, const char* key) {
  auto w = j.find("workload");
  if (w == j.end() || !w->is_object()) return nullptr;
  auto f = w->find(key);
  return f == w->end() || f->is_null() ? nullptr : &*f;
}

// What a scenario's name says of its callers: their count where the arrival states one, else the
// arrival type ("poisson"); and its KV policy type. Empty where the JSON does not say. The arrival
// is read as its type writes it back, so a count left from another type (accepted and ignored
// after --set workload.arrival.type=poisson) is not taken for this one's.
std::string callers_label(const nlohmann::json& j) {
  const nlohmann::json* a = workload_field(j, "arrival");
  if (!a || !a->is_object()) return "";
  nlohmann::json stated = *a;
  try {
    JsonSection section(*a, "", "workload.arrival");
    const auto policy = arrival_policies().parse(section, std::nullopt);
    stated = {{"type", policy->type()}};
    policy->write(stated);
  } catch (const ConfigError&) {
    // Not a whole arrival: read as given; parse_scenario says what is wrong with it.
  }
  if (auto n = stated.find("sessions"); n != stated.end() && n->is_number_integer()) {
    return n->dump();
  }
  if (auto t = stated.find("type"); t != stated.end() && t->is_string()) {
    return t->get<std::string>();
  }
  return "";
}

std::string kv_policy_label(const nlohmann::json& j) {
  auto k = j.find("kv_policy");
  if (k == j.end() || !k->is_object()) return "";
  auto t = k->find("type");
  return t != k->end() && t->is_string() ? t->get<std::string>() : "";
}

// Replaces `from` in `name` where it stands as a token: between dashes, or after the last one.
void replace_name_token(std::string& name, const std::string& from, const std::string& to) {
  if (const auto at = name.find("-" + from + "-"); at != std::string::npos) {
    name.replace(at + 1, from.size(), to);
  } else if (name.size() > from.size() && name.ends_with("-" + from)) {
    name.replace(name.size() - from.size(), from.size(), to);
  }
}

// A --set that changes what a frame carries or how many call, on a scenario whose other fields were
// written for the old values: the KV tokens per frame the file stated for its own token counts
// (the default's 1, Moshi's one position per step) are dropped and derived again as input +
// output, and the name's caller count follows the new count. Each is said in a warning.
std::vector<std::string> follow_workload_sets(nlohmann::json& j, const nlohmann::json& base,
                                              const std::vector<std::string>& sets, bool name_set,
                                              bool comment_set) {
  std::vector<std::string> warnings;
  bool tokens_set = false, kv_set = false;
  for (const auto& a : sets) {
    const std::string k = set_key(a);
    tokens_set = tokens_set || k == "workload.input_tokens_per_frame" ||
                 k == "workload.output_tokens_per_frame" || k == "workload";
    kv_set = kv_set || k == "workload.kv_tokens_per_frame" ||
             k == "workload.tokens_per_s_per_session" || k == "workload";
  }
  if (tokens_set && !kv_set) {
    for (const char* key : {"kv_tokens_per_frame", "tokens_per_s_per_session"}) {
      const nlohmann::json* old = workload_field(base, key);
      if (!old) continue;
      const nlohmann::json* in = workload_field(j, "input_tokens_per_frame");
      const nlohmann::json* outp = workload_field(j, "output_tokens_per_frame");
      j["workload"].erase(key);
      warnings.push_back(
          "workload." + std::string(key) + " " + old->dump() +
          " from the scenario file was written for its own token counts and is dropped: KV "
          "tokens per frame are now input + output (" +
          (in ? in->dump() : std::string("1")) + " + " + (outp ? outp->dump() : std::string("1")) +
          "); --set workload.kv_tokens_per_frame=N to state another count");
    }
  }
  // A resolved scenario.json states engine.silence_after_s, resolved from its own deadline: a new
  // deadline would otherwise leave the padding at the old one. It follows where it was that.
  bool deadline_set = false, silence_set = false;
  for (const auto& a : sets) {
    const std::string k = set_key(a);
    deadline_set = deadline_set || k == "workload.deadline_s" || k == "workload.frame_period_s" ||
                   k == "workload";
    silence_set = silence_set || k == "engine.silence_after_s" || k == "engine";
  }
  const auto number_at = [](const nlohmann::json& x, const char* section, const char* key) {
    const auto sec = x.find(section);
    if (sec == x.end() || !sec->is_object()) return std::optional<double>();
    const auto v = sec->find(key);
    return v != sec->end() && v->is_number() ? std::optional<double>(v->get<double>())
                                             : std::optional<double>();
  };
  // WorkloadConfig::deadline() on the unparsed files: deadline_s, else the frame period.
  const auto deadline_in = [&](const nlohmann::json& x) {
    const auto d = number_at(x, "workload", "deadline_s");
    return d ? d : number_at(x, "workload", "frame_period_s");
  };
  if (deadline_set && !silence_set) {
    const auto silence = number_at(base, "engine", "silence_after_s");
    const auto old_deadline = deadline_in(base), new_deadline = deadline_in(j);
    if (silence && old_deadline && *silence == *old_deadline && new_deadline &&
        *new_deadline != *old_deadline) {
      j["engine"].erase("silence_after_s");
      warnings.push_back(fmt::format(
          "engine.silence_after_s {:g} s from the scenario file was its deadline, and follows the "
          "new deadline ({:g} s); --set engine.silence_after_s=S to pad at another time",
          *silence, *new_deadline));
    }
  }
  // The name's caller count (or, without one, the arrival type) and KV policy follow the --sets,
  // replaced where the name spells them as a dash-separated token; the comment says what changed.
  std::string changed;
  std::string name =
      j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : "";
  for (const auto& [label, what] :
       {std::pair{&callers_label, "callers"}, std::pair{&kv_policy_label, "KV policy"}}) {
    const std::string from = (*label)(base), to = (*label)(j);
    if (from.empty() || to.empty() || from == to) continue;
    changed += fmt::format("{}{} {} -> {}", changed.empty() ? "" : ", ", what, from, to);
    replace_name_token(name, from, to);
  }
  if (!changed.empty()) {
    if (!name_set && j.contains("name") && j["name"].is_string()) j["name"] = name;
    if (!comment_set && j.contains("comment") && j["comment"].is_string()) {
      j["comment"] = j["comment"].get<std::string>() + " [--set: " + changed +
                     "; this comment describes the file's]";
    }
  }
  return warnings;
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<std::string>& sets) {
  nlohmann::json j = read_scenario_json(path);
  const nlohmann::json base = j;  // as the file says it, before any --set
  // A swap (model=..., gpu=...) replaces the whole description, so a model.X or gpu.X given
  // before it would vanish: swaps are applied first and field overrides after them, whatever
  // their order on the command line.
  std::vector<std::string> ordered;
  bool name_set = false, comment_set = false;
  for (const auto& a : sets) {
    const std::string k = set_key(a);
    if (k == "model" || k == "gpu") ordered.push_back(a);
    name_set = name_set || k == "name";
    comment_set = comment_set || k == "comment";
  }
  const size_t swaps = ordered.size();
  for (const auto& a : sets) {
    const std::string k = set_key(a);
    if (k != "model" && k != "gpu") ordered.push_back(a);
  }
  // max_num_seqs and max_sessions_per_step name one field: a --set of either replaces what the
  // file said under either name; both on the command line is the same conflict as both in a file.
  std::string batch_cap_set;
  std::string kv_bytes_set;
  for (const auto& a : ordered) {
    const std::string k = set_key(a);
    if (k == "engine.max_num_seqs" || k == "engine.max_sessions_per_step") {
      if (!batch_cap_set.empty() && set_key(batch_cap_set) != k) {
        throw ConfigError("--set " + argument_preview(a) +
                          ": engine.max_num_seqs was already given as --set " +
                          argument_preview(batch_cap_set) +
                          " (max_sessions_per_step is its old alias); expected only one of them");
      }
      batch_cap_set = a;
      if (auto e = j.find("engine"); e != j.end() && e->is_object()) {
        e->erase(k == "engine.max_num_seqs" ? "max_sessions_per_step" : "max_num_seqs");
      }
    }
    if (k == "engine.num_gpu_blocks" || k == "engine.num_blocks") {
      if (auto e = j.find("engine"); e != j.end() && e->is_object()) {
        e->erase(k == "engine.num_gpu_blocks" ? "num_blocks" : "num_gpu_blocks");
      }
    }
    if (k == "model.kv_bytes_per_element") kv_bytes_set = a;
  }
  std::vector<std::pair<std::string, std::string>> swapped;
  nlohmann::json described;  // the descriptions swapped in, no field set yet
  for (size_t i = 0; i < ordered.size(); ++i) {
    if (i == swaps) {
      follow_swaps(j, swapped, name_set, comment_set);
      described = j;
    }
    const std::string k = set_key(ordered[i]);
    const std::string before = description_name(j, k.c_str());
    apply_set(j, ordered[i], base_dir_of(path));
    if (i < swaps) swapped.emplace_back(before, description_name(j, k.c_str()));
  }
  if (swaps == ordered.size()) {
    follow_swaps(j, swapped, name_set, comment_set);
    described = j;
  }
  std::string source = path.empty() ? "(built-in) scenarios/default.json" : path;
  if (!sets.empty()) source += " (with --set overrides)";
  std::vector<std::string> warnings = follow_workload_sets(j, base, sets, name_set, comment_set);
  // The model's kv_bytes_per_element is what kv_cache_dtype "auto" uses; setting it on the command
  // line while the scenario states a KV dtype of another size says two different things.
  const nlohmann::json* dtype = nullptr;
  if (auto e = j.find("engine"); e != j.end() && e->is_object()) {
    if (auto d = e->find("kv_cache_dtype"); d != e->end()) dtype = &*d;
  }
  if (!kv_bytes_set.empty() && dtype && dtype->is_string()) {
    const auto bytes = kv_cache_dtype_bytes(dtype->get<std::string>());
    const nlohmann::json given = j.contains("model") && j["model"].is_object()
                                     ? j["model"].value("kv_bytes_per_element", nlohmann::json())
                                     : nlohmann::json();
    if (bytes && !given.is_null() && given != nlohmann::json(*bytes)) {
      throw ConfigError("--set " + argument_preview(kv_bytes_set) + ": disagrees with " + source +
                        ": engine.kv_cache_dtype \"" + dtype->get<std::string>() + "\" stores " +
                        std::to_string(*bytes) + (*bytes == 1 ? " byte" : " bytes") +
                        " per element; expected one statement of the KV element size: "
                        "engine.kv_cache_dtype (one of \"auto\" \"fp8\" \"fp8_e4m3\" "
                        "\"fp8_e5m2\" \"bfloat16\" \"float16\"), or model.kv_bytes_per_element "
                        "with kv_cache_dtype \"auto\"");
    }
  }
  Scenario s = parse_scenario(j, source);
  const std::vector<std::string> unused = unused_set_warnings(s, described, j, sets);
  warnings.insert(warnings.end(), unused.begin(), unused.end());
  s.warnings.insert(s.warnings.begin(), warnings.begin(), warnings.end());
  return s;
}

std::optional<int64_t> kv_cache_dtype_bytes(const std::string& dtype) {
  if (dtype.rfind("fp8", 0) == 0) return 1;
  if (dtype == "bfloat16" || dtype == "float16") return 2;
  return std::nullopt;
}

nlohmann::json shape_aware_json(const ShapeAwareCorrection& c) {
  nlohmann::json j = nlohmann::json::object();
  write_fields(shape_aware_correction_fields(), c, j);
  return j;
}

nlohmann::json to_json(const Scenario& s) {
  nlohmann::json resolved = nlohmann::json::object();
  write_fields(scenario_fields(), s, resolved);
  if (s.fleet) resolved["fleet"] = to_json(*s.fleet);
  return resolved;
}

}  // namespace metronome
