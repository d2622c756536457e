// Vidur's measured operator profiles (github.com/microsoft/vidur, MIT): per GPU and model,
// data/profiling/compute/<gpu>/<model>/mlp.csv (one decoder layer's token-level ops against
// num_tokens) and, when present, attention.csv (prefill and decode attention against batch and
// KV length). Times in the files are milliseconds of CUDA kernel time (torch profiler); this
// reader converts to seconds and keeps the median column, as Vidur's own predictor does.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cost/layer_ops.h"

namespace metronome::calibrate {

// The ops of a row of mlp.csv, in this order; emb is once per pass, the others once per layer.
inline constexpr std::array<std::string_view, 10> kVidurMlpOps = {
    "emb",         "input_layernorm", "attn_pre_proj",
    "attn_rope",   "attn_post_proj",  "post_attention_layernorm",
    "mlp_up_proj", "mlp_act",         "mlp_down_proj",
    "add"};

struct VidurMlpRow {
  int64_t tokens = 0;
  std::array<double, kVidurMlpOps.size()> seconds{};  // median per op
  int line = 0;                                       // in the file, for messages
  double layer_seconds() const;                       // every op but emb
};

struct VidurAttentionRow {
  int64_t batch = 0;     // sequences
  int64_t chunk = 0;     // prefill: new tokens of the one sequence; decode: 1
  int64_t kv_cache = 0;  // cached tokens per sequence before the step
  bool prefill = false;
  double seconds = 0;  // one layer: attention + KV save + reshapes, where present
  int line = 0;
};

struct VidurProfile {
  std::string model, gpu;  // as named (gpu empty when the directory holds the files directly)
  std::string mlp_path, attention_path;  // attention_path empty: no attention.csv
  int tensor_parallel = 1;
  LayerShape shape;                          // the per-GPU slice of the profiled layer
  std::vector<VidurMlpRow> mlp;              // sorted by tokens
  std::vector<VidurAttentionRow> attention;  // rows of the same tensor-parallel degree
  std::string attention_backend;             // from attention.csv, e.g. FLASHINFER
};

// `dir` is one of: a directory holding mlp.csv; <dir>/<model>/mlp.csv; <dir>/<gpu>/<model>/mlp.csv;
// <dir>/data/profiling/compute/<gpu>/<model>/mlp.csv (a Vidur checkout). `model` is Vidur's name
// (e.g. meta-llama/Llama-2-7b-hf); `gpu` may be empty when only one GPU directory has the model.
// ConfigError naming the file and column for anything missing or malformed.
VidurProfile read_vidur_profile(const std::string& dir, const std::string& model,
                                const std::string& gpu, int tensor_parallel);

// The mlp.csv columns this reader needs (for messages and the tests).
std::vector<std::string> vidur_mlp_required_columns();

}  // namespace metronome::calibrate
