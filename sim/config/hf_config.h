// A model description from a HuggingFace config.json as published with a checkpoint
// (`--set model=hf:PATH/config.json`): the shapes that size the KV cache and the roofline, the
// flags that decide the weight count (attention bias, tied embeddings, experts), and a note for
// every value that was derived or assumed rather than read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace metronome {

// `hf` is the parsed config.json read from `path` (named in errors). Returns a model object in
// the scenario schema (docs/scenarios.md), without weight_bytes, which parse_model derives from
// the shapes, and with "notes" saying what was derived. Throws ConfigError for a config whose
// memory this model cannot represent (quantized weights, latent attention, mixed dense and MoE
// layers).
nlohmann::json model_from_hf_config(const nlohmann::json& hf, const std::string& path);

}  // namespace metronome
