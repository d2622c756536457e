#include "sim/config/hf_config.h"

#include <filesystem>
#include <vector>

#include "base/config_error.h"
#include "base/json_file.h"
#include "base/json_section.h"

namespace metronome {
namespace {

bool has(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && !it->is_null();
}

// Bytes per element vLLM serves the weights and the KV cache in with its default dtype "auto":
// the checkpoint's dtype, float32 checkpoints in float16.
int64_t dtype_bytes(const std::string& dtype, std::vector<std::string>& notes) {
  if (dtype == "bfloat16" || dtype == "float16") return 2;
  if (dtype == "float32") {
    notes.push_back("torch_dtype float32: served in float16 (vLLM's dtype auto), 2 bytes");
    return 2;
  }
  return 0;
}

// A multimodal checkpoint's sub-models beside its language model (encoders, a talker, a
// vocoder): every object-valued "*_config" under `c` but the language model's own, by path.
void other_parts(const nlohmann::json& c, const std::string& prefix, const nlohmann::json* lm,
                 std::vector<std::string>& out) {
  for (const auto& item : c.items()) {
    const std::string& k = item.key();
    const auto& v = item.value();
    if (!v.is_object() || !k.ends_with("_config") || k == "quantization_config") continue;
    if (&v == lm) continue;
    // The sub-model that holds the language model: only its other parts count.
    bool holds_lm = false;
    for (const auto& sub : v.items()) holds_lm = holds_lm || &sub.value() == lm;
    if (holds_lm) {
      other_parts(v, prefix + k + ".", lm, out);
    } else {
      out.push_back(prefix + k);
    }
  }
}

// The checkpoint's own byte count (model.safetensors.index.json beside config.json: its
// metadata.total_size), or 0 when there is none.
double checkpoint_bytes(const std::string& config_path, std::string& index_path) {
  const std::filesystem::path index =
      std::filesystem::path(config_path).parent_path() / "model.safetensors.index.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(index, ec)) return 0;
  index_path = index.string();
  const nlohmann::json j = read_json_file(index_path, "safetensors index");
  if (!j.is_object() || !j.contains("metadata") || !j["metadata"].is_object() ||
      !j["metadata"].contains("total_size") || !j["metadata"]["total_size"].is_number() ||
      !(j["metadata"]["total_size"].get<double>() > 0)) {
    throw ConfigError(index_path +
                      ": metadata.total_size: expected the checkpoint's size in "
                      "bytes, a number > 0");
  }
  return j["metadata"]["total_size"].get<double>();
}

}  // namespace

nlohmann::json model_from_hf_config(const nlohmann::json& root, const std::string& path) {
  if (!root.is_object()) throw ConfigError(path + ": expected a JSON object (a config.json)");
  std::vector<std::string> notes;
  const nlohmann::json* cfg = &root;
  std::string where = path;
  // Multimodal checkpoints keep the language model, which holds the KV, under text_config; an
  // omni model (Qwen2.5-Omni, Qwen3-Omni) under its thinker's text_config.
  std::string section;
  if (!has(root, "num_hidden_layers")) {
    if (root.contains("text_config") && root["text_config"].is_object()) {
      cfg = &root["text_config"];
      section = "text_config";
    } else if (root.contains("thinker_config") && root["thinker_config"].is_object() &&
               root["thinker_config"].contains("text_config") &&
               root["thinker_config"]["text_config"].is_object()) {
      cfg = &root["thinker_config"]["text_config"];
      section = "thinker_config.text_config";
    }
    if (!section.empty()) {
      notes.push_back("shapes read from " + section + " (the language model holds the KV)");
    }
  }
  std::vector<std::string> parts;
  if (cfg != &root) other_parts(root, "", cfg, parts);
  const nlohmann::json& c = *cfg;
  JsonSection s(c, path, section);
  const std::string type = has(c, "model_type") && c["model_type"].is_string()
                               ? c["model_type"].get<std::string>()
                               : (has(root, "model_type") && root["model_type"].is_string()
                                      ? root["model_type"].get<std::string>()
                                      : std::string());

  if (has(c, "quantization_config") || has(root, "quantization_config")) {
    throw ConfigError(path +
                      ": quantization_config: quantized checkpoints are not read (the bytes per "
                      "weight depend on the method); write a model file with weight_bytes "
                      "(docs/scenarios.md) and use --set model=PATH.json");
  }
  if (has(c, "kv_lora_rank")) {
    throw ConfigError(path +
                      ": kv_lora_rank: multi-head latent attention (DeepSeek-V2/V3) caches a "
                      "compressed KV this model does not represent; write a model file");
  }

  nlohmann::json m;
  std::string name;
  if (has(root, "_name_or_path") && root["_name_or_path"].is_string() &&
      !root["_name_or_path"].get<std::string>().empty()) {
    name = std::filesystem::path(root["_name_or_path"].get<std::string>()).filename().string();
  }
  if (name.empty()) {
    const std::filesystem::path p(path);
    name = p.filename() == "config.json" && !p.parent_path().filename().empty()
               ? p.parent_path().filename().string()
               : p.stem().string();
  }
  m["name"] = name;
  m["comment"] = "Imported from the HuggingFace config " + path +
                 (type.empty() ? std::string() : " (model_type " + type + ")");
  m["source"] = path;

  const int64_t layers = s.integer("num_hidden_layers", std::nullopt, 1, 100000);
  const int64_t hidden = s.integer("hidden_size", std::nullopt, 1, 10'000'000);
  const int64_t heads = s.integer("num_attention_heads", std::nullopt, 1, 100000);
  int64_t kv_heads = heads;
  if (s.has("num_key_value_heads")) {
    kv_heads = s.integer("num_key_value_heads", std::nullopt, 1, 100000);
  } else {
    // Full multi-head attention has heads / kv_heads times the KV of a GQA model: a missing or
    // misspelt field moves the pool by that factor, so it is a warning, not an info line.
    std::string near;
    for (const auto& item : c.items()) {
      const std::string& k = item.key();
      if (k.find("key_value") != std::string::npos || k.find("kv_head") != std::string::npos) {
        near += (near.empty() ? "" : ", ") + k;
      }
    }
    notes.push_back("WARNING: num_key_value_heads absent: " + std::to_string(heads) +
                    " KV heads assumed (multi-head attention, as transformers assumes), the "
                    "most KV per token a model of these shapes can have" +
                    (near.empty()
                         ? std::string()
                         : "; the config has " + near + ": a misspelt num_key_value_heads?"));
  }
  int64_t head_dim = 0;
  if (s.has("head_dim")) {
    head_dim = s.integer("head_dim", std::nullopt, 1, 100000);
  } else {
    if (hidden % heads != 0)
      s.fail("num_attention_heads", "a divisor of hidden_size (no head_dim given)");
    head_dim = hidden / heads;
    notes.push_back("head_dim = hidden_size / num_attention_heads = " + std::to_string(head_dim));
  }
  const int64_t vocab = s.integer("vocab_size", std::nullopt, 1, 100'000'000);

  // Experts: Mixtral names them num_local_experts, Qwen-MoE and OLMoE num_experts, DeepSeek-MoE
  // n_routed_experts.
  int64_t experts = 0;
  for (const char* k : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (s.has(k)) {
      experts = s.integer(k, std::nullopt, 0, 100000);
      break;
    }
  }
  int64_t ffn = 0, expert_ffn = 0, active = 0;
  if (experts > 0) {
    active = s.integer("num_experts_per_tok", std::nullopt, 1, experts);
    // Every layer must be an MoE layer: the model has one MLP shape for all layers.
    if (s.has("decoder_sparse_step") && s.integer("decoder_sparse_step", 1, 1, 100000) != 1) {
      s.fail("decoder_sparse_step",
             "1 (every layer MoE; mixed dense and MoE layers are not modelled)");
    }
    if (c.contains("mlp_only_layers") && c["mlp_only_layers"].is_array() &&
        !c["mlp_only_layers"].empty()) {
      s.fail("mlp_only_layers",
             "[] (every layer MoE; mixed dense and MoE layers are not modelled)");
    }
    if (s.has("first_k_dense_replace") && s.integer("first_k_dense_replace", 0, 0, 100000) != 0) {
      s.fail("first_k_dense_replace",
             "0 (every layer MoE; mixed dense and MoE layers are not modelled)");
    }
    expert_ffn = s.has("moe_intermediate_size")
                     ? s.integer("moe_intermediate_size", std::nullopt, 1, 100'000'000)
                     : s.integer("intermediate_size", std::nullopt, 1, 100'000'000);
    // A shared expert every token goes through is a dense MLP beside the routed ones.
    if (s.has("shared_expert_intermediate_size")) {
      ffn = s.integer("shared_expert_intermediate_size", std::nullopt, 0, 100'000'000);
      notes.push_back("shared expert (shared_expert_intermediate_size " + std::to_string(ffn) +
                      ") modelled as a dense MLP every token reads");
    } else if (s.has("n_shared_experts")) {
      ffn = s.integer("n_shared_experts", std::nullopt, 0, 1000) * expert_ffn;
      notes.push_back("n_shared_experts x moe_intermediate_size = " + std::to_string(ffn) +
                      " modelled as a dense MLP every token reads");
    }
    notes.push_back(std::to_string(experts) + " experts of FFN " + std::to_string(expert_ffn) +
                    " per layer, " + std::to_string(active) + " routed per token");
  } else {
    ffn = s.integer("intermediate_size", std::nullopt, 1, 100'000'000);
  }

  // Attention bias: Llama-style configs say attention_bias (q, k, v and o); Qwen2 has a bias on
  // q, k and v with no field saying so.
  std::string bias = "none";
  if (s.has("attention_bias")) {
    if (s.boolean("attention_bias", false)) bias = "all";
  } else if (type == "qwen2" || type == "qwen2_moe" || type == "qwen2_vl" || type == "qwen2_5_vl") {
    bias = "qkv";
    notes.push_back("model_type " + type + ": bias on q, k and v (no config field says so)");
  }
  bool tied = false;
  if (s.has("tie_word_embeddings")) {
    tied = s.boolean("tie_word_embeddings", false);
  } else {
    tied = type.rfind("gemma", 0) == 0;
    notes.push_back(std::string("tie_word_embeddings absent: ") + (tied ? "true" : "false") +
                    " (the default of model_type " + (type.empty() ? "unknown" : type) + ")");
  }

  std::string dtype;
  for (const char* k : {"torch_dtype", "dtype"}) {
    if (c.contains(k) && c[k].is_string())
      dtype = c[k].get<std::string>();
    else if (root.contains(k) && root[k].is_string())
      dtype = root[k].get<std::string>();
    if (!dtype.empty()) break;
  }
  int64_t bytes = 2;
  if (dtype.empty()) {
    notes.push_back("torch_dtype absent: 2 bytes per weight and KV element (bfloat16)");
  } else {
    bytes = dtype_bytes(dtype, notes);
    if (bytes == 0) s.fail("torch_dtype", "one of \"bfloat16\" \"float16\" \"float32\"");
  }

  // Sliding-window attention. The pool model has one KV policy for every layer, chosen by the
  // scenario (kv_policy), so the window is reported, not applied.
  if (s.has("sliding_window")) {
    const bool used = !s.has("use_sliding_window") || s.boolean("use_sliding_window", true);
    const int64_t window = s.integer("sliding_window", std::nullopt, 1, 1'000'000'000'000LL);
    if (!used) {
      notes.push_back("sliding_window " + std::to_string(window) +
                      " ignored: use_sliding_window is false (full attention)");
    } else {
      int64_t sliding = layers;
      if (c.contains("layer_types") && c["layer_types"].is_array()) {
        sliding = 0;
        for (const auto& t : c["layer_types"]) sliding += t == "sliding_attention" ? 1 : 0;
      } else if (type == "gemma2") {
        sliding = layers / 2;  // Gemma-2 alternates sliding and global layers
      }
      if (sliding == layers) {
        notes.push_back(
            "sliding_window " + std::to_string(window) + " on all " + std::to_string(layers) +
            " layers: the KV a session keeps is bounded by the window; model it "
            "with --set kv_policy.type=windowed --set kv_policy.window_tokens=" +
            std::to_string(window) + " (not applied: the scenario's kv_policy decides)");
      } else if (sliding > 0) {
        notes.push_back("sliding_window " + std::to_string(window) + " on " +
                        std::to_string(sliding) + " of " + std::to_string(layers) +
                        " layers: modelled as full attention on every layer, an upper bound on "
                        "the KV");
      }
    }
  }

  m["layers"] = layers;
  m["hidden_size"] = hidden;
  m["attention_heads"] = heads;
  m["kv_heads"] = kv_heads;
  m["head_dim"] = head_dim;
  m["ffn_size"] = ffn;
  m["vocab_size"] = vocab;
  m["kv_bytes_per_element"] = bytes;
  m["weight_bytes_per_param"] = bytes;
  m["experts"] = experts;
  m["experts_active"] = active;
  m["expert_ffn_size"] = expert_ffn;
  m["attention_bias"] = bias;
  m["tie_word_embeddings"] = tied;
  if (s.has("max_position_embeddings")) {
    m["max_context_tokens"] = s.integer("max_position_embeddings", std::nullopt, 1, 1'000'000'000);
  }
  // The weights on the device are the whole checkpoint's where it says its size; from the shapes,
  // only the language model's are counted, and the other parts are named.
  std::string index_path;
  const double total = checkpoint_bytes(path, index_path);
  std::string listed;
  for (const auto& p : parts) listed += (listed.empty() ? "" : ", ") + p;
  if (total > 0 && dtype != "float32") {
    m["weight_bytes"] = total;
    notes.push_back("weight_bytes " + std::to_string(static_cast<int64_t>(total)) +
                    " B: the checkpoint's size (" + index_path + ", metadata.total_size)" +
                    (parts.empty() ? std::string() : ", with " + listed));
  } else if (!parts.empty()) {
    m["weights_not_counted"] = parts;  // parse_model warns unless weight_bytes is given
  }
  m["notes"] = notes;
  return m;
}

}  // namespace metronome
