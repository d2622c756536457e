// A Llama-architecture decoder (SmolLM2 and its kin) run on the CPU in float, with its KV in the
// project's paged cache and its attention limited by the project's one visibility rule
// (core/kv_window.h): each sequence has a kv::Window (unbounded, or S sinks + W window).
//
// Per layer, for rows x [T, hidden] (T tokens of all sequences of one step):
//   h = rmsnorm(x) * attn_norm;  q = h Wq^T, k = h Wk^T, v = h Wv^T
//   RoPE on q and k ("normal" llama.cpp layout: adjacent pairs (2i, 2i+1) rotate by
//   pos * base^(-2i / head_dim); GGUF stores Wq/Wk permuted for this);
//   append k, v to the paged cache (kernels::reference::append_kv_ref); window attention
//   (quality/window_attention.h); x += attn Wo^T
//   h = rmsnorm(x) * ffn_norm;  x += (silu(h Wg^T) * (h Wu^T)) Wd^T
// then logits = (rmsnorm(x) * output_norm) E^T with E the output matrix (the token embedding when
// tied). Weights are dequantized from the GGUF once, at load, into column panels
// (quality/packed_matrix.h: each output one fixed chain of FMAs), Wq/Wk/Wv stacked into one
// matrix and Wg/Wu into another, so a layer is four products.
//
// A row's result depends on its own sequence only: products are row by row (the fixed chain),
// attention is per sequence, norms and RoPE per row. Sequences stepped together, or alone, or on
// any number of threads give the same bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/kv_window.h"
#include "kernels/block_table.h"
#include "kernels/reference/paged_attention_ref.h"
#include "quality/packed_matrix.h"
#include "quality/window_attention.h"

namespace metronome::quality {

class GgufFile;
class Workers;

struct LlamaConfig {
  int32_t layers = 0;
  int32_t hidden = 0;
  int32_t ffn = 0;
  int32_t q_heads = 0;
  int32_t kv_heads = 0;
  int32_t head_dim = 0;
  int32_t vocab = 0;
  int32_t context = 0;  // trained context length (llama.context_length)
  double rope_base = 10000;
  double rms_eps = 1e-5;
  bool tied_embeddings = false;

  // Read from llama.* metadata; ConfigError on a missing field or an architecture other than
  // llama, or on inconsistent shapes (e.g. hidden != q_heads * head_dim).
  static LlamaConfig from_gguf(const GgufFile& gguf);
};

// The KV of a set of sequences stepped together: one block pool, one paged cache per layer, a
// block table per sequence (the same bookkeeping the real-time engine uses).
class KvBatch {
 public:
  // max_blocks: pool size in blocks (each holds block_size positions of every layer).
  KvBatch(const LlamaConfig& c, int32_t max_blocks, int32_t block_size = 16);

  // A new sequence; returns its index.
  int32_t add(kv::Window window, PositionMode mode);
  int32_t size() const { return static_cast<int32_t>(seqs_.size()); }
  int64_t tokens(int32_t s) const { return seqs_[static_cast<size_t>(s)].blocks.tokens(); }
  kv::Window window(int32_t s) const { return seqs_[static_cast<size_t>(s)].blocks.window(); }
  PositionMode mode(int32_t s) const { return seqs_[static_cast<size_t>(s)].mode; }
  const kernels::SessionBlocks& blocks(int32_t s) const {
    return seqs_[static_cast<size_t>(s)].blocks;
  }
  const kernels::BlockPool& pool() const { return pool_; }
  int32_t block_size() const { return block_size_; }
  // Gives the empty sequence dst the KV of every token of src (the same tokens, which dst's window
  // has seen so far exactly as src's did: quality_run.cpp's shared prefix), then releases what
  // dst's window no longer needs. Throws std::runtime_error if the pool has too few blocks and
  // std::logic_error if dst is not empty or src has released a block.
  void copy_from(int32_t dst, int32_t src);
  // Blocks a pool needs for `sequences` sequences of this window, fed `chunk` tokens at a time up
  // to `tokens` in all: the maximum of kv::step_blocks over the run.
  static int32_t blocks_needed(kv::Window w, int64_t tokens, int64_t chunk, int32_t block_size);

 private:
  friend class LlamaModel;
  struct Seq {
    kernels::SessionBlocks blocks;
    PositionMode mode;
  };
  // A step's working rows, kept from step to step: fresh buffers cost a page fault per 4 KiB
  // every step (the logits of 64 rows are 12.6 MB: a tenth of a prefill step went to the kernel).
  struct Scratch {
    std::vector<float> x, hn, qkv, q, qs, k, v, att, tmp, gu, act, logits;
  };
  int32_t block_size_;
  kernels::BlockPool pool_;
  std::vector<kernels::reference::HostKvCache> layers_;
  std::vector<Seq> seqs_;
  Scratch scratch_;
};

class LlamaModel {
 public:
  explicit LlamaModel(const GgufFile& gguf);

  const LlamaConfig& config() const { return c_; }

  // One step: new_tokens[s] are appended to sequence s (an empty list skips it). Returns the
  // logits of every new token, rows in sequence order then token order: [sum of sizes, vocab],
  // held by kv until its next step.
  // Throws std::runtime_error if the pool has too few blocks.
  // Thread-safe for distinct KvBatches (the model is read-only). Products, attention and the
  // pointwise work are split among `workers` (the same bytes for any number of them).
  const std::vector<float>& step(KvBatch& kv, const std::vector<std::vector<int32_t>>& new_tokens,
                                 Workers& workers) const;
  // The same on the calling thread alone.
  const std::vector<float>& step(KvBatch& kv,
                                 const std::vector<std::vector<int32_t>>& new_tokens) const;

 private:
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    PackedMatrix qkv;      // [hidden + 2 kv_heads head_dim, hidden]: Wq, Wk, Wv stacked
    PackedMatrix wo;       // [hidden, hidden]
    PackedMatrix gate_up;  // [2 ffn, hidden]: Wg, Wu stacked
    PackedMatrix wd;       // [hidden, ffn]
  };
  LlamaConfig c_;
  PackedMatrix output_;  // [vocab, hidden]: the output matrix, or the token embedding when tied
  PackedMatrix embed_;   // [vocab, hidden] when not tied; empty when tied (output_ is read)
  std::vector<float> out_norm_;
  std::vector<Layer> layers_;
  std::vector<double> inv_freq_;  // [head_dim / 2] base^(-2i / head_dim)
};

// Log-probability (natural log) of `target` under the logits row (log-softmax in double).
double log_prob(std::span<const float> logits, int32_t target);

}  // namespace metronome::quality
