#include "quality/llama_model.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/config_error.h"
#include "quality/gguf_file.h"

namespace metronome::quality {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix>;
using Map = Eigen::Map<RowMatrix>;

// Eigen blocks a matrix product by the machine's cache sizes, and the blocks set the order in which
// each dot product's terms are summed: sizes fixed here give every machine the same rounding.
void fix_product_blocking() {
  static const bool fixed = [] {
    Eigen::setCpuCacheSizes(32 * 1024, 1024 * 1024, 8 * 1024 * 1024);
    return true;
  }();
  (void)fixed;
}

int32_t meta_int(const GgufFile& g, const std::string& key, int64_t lo, int64_t hi) {
  const int64_t v = g.integer(key);
  if (v < lo || v > hi) {
    throw ConfigError(g.path() + ": metadata " + key + " is " + std::to_string(v) + ", expected " +
                      std::to_string(lo) + "-" + std::to_string(hi));
  }
  return static_cast<int32_t>(v);
}

// y[m, n] = x[m, k] w[n, k]^T (w stored as PyTorch/GGUF keep it, [out, in]).
void linear(const float* x, const std::vector<float>& w, int64_t m, int64_t n, int64_t k,
            float* y) {
  Map(y, m, n).noalias() = ConstMap(x, m, k) * ConstMap(w.data(), n, k).transpose();
}

void rmsnorm(const float* x, const std::vector<float>& gain, int64_t m, int64_t d, double eps,
             float* y) {
  for (int64_t r = 0; r < m; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += double{x[r * d + j]} * x[r * d + j];
    const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
    for (int64_t j = 0; j < d; ++j)
      y[r * d + j] = x[r * d + j] * inv * gain[static_cast<size_t>(j)];
  }
}

// Rotates each head of row r by angle pos[r] * inv_freq[i] on the pair (2i, 2i + 1).
void rope(float* x, int64_t rows, int32_t heads, int32_t head_dim, const std::vector<int64_t>& pos,
          const std::vector<double>& inv_freq) {
  const int32_t half = head_dim / 2;
  std::vector<float> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
  for (int64_t r = 0; r < rows; ++r) {
    for (int32_t i = 0; i < half; ++i) {
      const double a =
          static_cast<double>(pos[static_cast<size_t>(r)]) * inv_freq[static_cast<size_t>(i)];
      c[static_cast<size_t>(i)] = static_cast<float>(std::cos(a));
      s[static_cast<size_t>(i)] = static_cast<float>(std::sin(a));
    }
    for (int32_t h = 0; h < heads; ++h) {
      float* v = x + (r * heads + h) * head_dim;
      for (int32_t i = 0; i < half; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * c[static_cast<size_t>(i)] - x1 * s[static_cast<size_t>(i)];
        v[2 * i + 1] = x0 * s[static_cast<size_t>(i)] + x1 * c[static_cast<size_t>(i)];
      }
    }
  }
}

}  // namespace

LlamaConfig LlamaConfig::from_gguf(const GgufFile& g) {
  const std::string& arch = g.string("general.architecture");
  if (arch != "llama") {
    throw ConfigError(g.path() + ": general.architecture is \"" + arch + "\", expected \"llama\"");
  }
  LlamaConfig c;
  c.layers = meta_int(g, "llama.block_count", 1, 512);
  c.hidden = meta_int(g, "llama.embedding_length", 1, 1 << 16);
  c.ffn = meta_int(g, "llama.feed_forward_length", 1, 1 << 18);
  c.q_heads = meta_int(g, "llama.attention.head_count", 1, 1024);
  c.kv_heads = g.has("llama.attention.head_count_kv")
                   ? meta_int(g, "llama.attention.head_count_kv", 1, c.q_heads)
                   : c.q_heads;
  c.context = meta_int(g, "llama.context_length", 1, 1 << 24);
  c.rope_base = g.has("llama.rope.freq_base") ? g.real("llama.rope.freq_base") : 10000.0;
  c.rms_eps = g.real("llama.attention.layer_norm_rms_epsilon");
  if (c.hidden % c.q_heads != 0 || c.q_heads % c.kv_heads != 0) {
    throw ConfigError(g.path() + ": llama.embedding_length " + std::to_string(c.hidden) +
                      " is not a multiple of head_count, or head_count of head_count_kv");
  }
  c.head_dim = c.hidden / c.q_heads;
  if (g.has("llama.rope.dimension_count") &&
      g.integer("llama.rope.dimension_count") != c.head_dim) {
    throw ConfigError(g.path() + ": llama.rope.dimension_count is " +
                      std::to_string(g.integer("llama.rope.dimension_count")) + ", expected " +
                      std::to_string(c.head_dim) + " (RoPE over the whole head)");
  }
  if (c.head_dim % 2 != 0) throw ConfigError(g.path() + ": head dimension must be even");
  if (!(c.rope_base > 1) || !(c.rms_eps > 0)) {
    throw ConfigError(g.path() + ": llama.rope.freq_base must be > 1 and the RMS epsilon > 0");
  }
  const auto& embd = g.tensor("token_embd.weight");
  if (embd.dims.size() != 2 || embd.dims[0] != c.hidden) {
    throw ConfigError(g.path() + ": token_embd.weight must be [" + std::to_string(c.hidden) +
                      ", vocab]");
  }
  c.vocab = static_cast<int32_t>(embd.dims[1]);
  if (g.has("llama.vocab_size") && g.integer("llama.vocab_size") != c.vocab) {
    throw ConfigError(g.path() + ": llama.vocab_size disagrees with token_embd.weight");
  }
  c.tied_embeddings = !g.has_tensor("output.weight");
  return c;
}

KvBatch::KvBatch(const LlamaConfig& c, int32_t max_blocks, int32_t block_size)
    : block_size_(block_size), pool_(max_blocks) {
  layers_.reserve(static_cast<size_t>(c.layers));
  for (int32_t l = 0; l < c.layers; ++l)
    layers_.emplace_back(max_blocks, block_size, c.kv_heads, c.head_dim);
}

int32_t KvBatch::add(kv::Window window, PositionMode mode) {
  seqs_.push_back({kernels::SessionBlocks(window, block_size_), mode});
  return size() - 1;
}

int32_t KvBatch::blocks_needed(kv::Window w, int64_t tokens, int64_t chunk, int32_t block_size) {
  int64_t most = 0;
  for (int64_t ctx = 0; ctx < tokens; ++ctx) {
    most = std::max(most, kv::step_blocks(ctx, std::min(chunk, tokens - ctx), w, block_size));
  }
  return static_cast<int32_t>(most);
}

LlamaModel::LlamaModel(const GgufFile& g) : c_(LlamaConfig::from_gguf(g)) {
  fix_product_blocking();
  const int64_t h = c_.hidden, f = c_.ffn, kvd = int64_t{c_.kv_heads} * c_.head_dim;
  embed_ = g.floats("token_embd.weight", {h, c_.vocab});
  if (!c_.tied_embeddings) output_ = g.floats("output.weight", {h, c_.vocab});
  out_norm_ = g.floats("output_norm.weight", {h});
  for (int32_t l = 0; l < c_.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    Layer L;
    L.attn_norm = g.floats(p + "attn_norm.weight", {h});
    L.wq = g.floats(p + "attn_q.weight", {h, h});
    L.wk = g.floats(p + "attn_k.weight", {h, kvd});
    L.wv = g.floats(p + "attn_v.weight", {h, kvd});
    L.wo = g.floats(p + "attn_output.weight", {h, h});
    L.ffn_norm = g.floats(p + "ffn_norm.weight", {h});
    L.wg = g.floats(p + "ffn_gate.weight", {h, f});
    L.wu = g.floats(p + "ffn_up.weight", {h, f});
    L.wd = g.floats(p + "ffn_down.weight", {f, h});
    layers_.push_back(std::move(L));
  }
  for (int32_t i = 0; i < c_.head_dim / 2; ++i) {
    inv_freq_.push_back(std::pow(c_.rope_base, -2.0 * i / c_.head_dim));
  }
}

std::vector<float> LlamaModel::step(KvBatch& kv,
                                    const std::vector<std::vector<int32_t>>& tokens) const {
  const int32_t ns = kv.size();
  if (static_cast<int32_t>(tokens.size()) != ns) {
    throw std::invalid_argument("LlamaModel::step: one token list per sequence");
  }
  std::vector<int32_t> q_start(static_cast<size_t>(ns) + 1, 0), seq_lens(static_cast<size_t>(ns));
  std::vector<int64_t> pos, pos_sink;  // per row: original and query-side RoPE positions
  std::vector<int32_t> ids;
  std::vector<kv::Window> windows;
  std::vector<const kernels::SessionBlocks*> tables;
  for (int32_t s = 0; s < ns; ++s) {
    auto& seq = kv.seqs_[static_cast<size_t>(s)];
    const auto& t = tokens[static_cast<size_t>(s)];
    const int64_t ctx = seq.blocks.tokens();
    if (!seq.blocks.append(kv.pool_, static_cast<int64_t>(t.size()))) {
      throw std::runtime_error("LlamaModel::step: KV pool of " +
                               std::to_string(kv.pool_.num_blocks()) + " blocks is full");
    }
    for (size_t i = 0; i < t.size(); ++i) {
      const int32_t id = t[i];
      if (id < 0 || id >= c_.vocab) {
        throw std::invalid_argument("LlamaModel::step: token " + std::to_string(id) +
                                    " outside the vocabulary");
      }
      ids.push_back(id);
      const int64_t p = ctx + static_cast<int64_t>(i);
      pos.push_back(p);
      pos_sink.push_back(query_rope_position(p, seq.blocks.window(), seq.mode));
    }
    q_start[static_cast<size_t>(s) + 1] =
        q_start[static_cast<size_t>(s)] + static_cast<int32_t>(t.size());
    seq_lens[static_cast<size_t>(s)] = static_cast<int32_t>(seq.blocks.tokens());
    windows.push_back(seq.blocks.window());
    tables.push_back(&seq.blocks);
  }
  int32_t max_blocks = 1;
  for (const auto* t : tables)
    max_blocks = std::max(max_blocks, static_cast<int32_t>(t->table().size()));
  const std::vector<int32_t> block_tables = kernels::dense_block_tables(tables, max_blocks);
  kernels::FrameBatch batch;
  batch.num_sessions = ns;
  batch.q_start = q_start.data();
  batch.seq_lens = seq_lens.data();
  batch.block_tables = block_tables.data();
  batch.max_blocks = max_blocks;
  for (int32_t s = 0; s < ns; ++s) {
    batch.max_q_len = std::max(batch.max_q_len, batch.q_len(s));
    batch.max_seq_len = std::max(batch.max_seq_len, seq_lens[static_cast<size_t>(s)]);
  }

  const int64_t T = static_cast<int64_t>(ids.size());
  const int64_t h = c_.hidden, f = c_.ffn, kvd = int64_t{c_.kv_heads} * c_.head_dim;
  const bool any_sink_rope = pos_sink != pos;
  std::vector<float> x(static_cast<size_t>(T * h)), hn(static_cast<size_t>(T * h));
  std::vector<float> q(static_cast<size_t>(T * h)), qs, k(static_cast<size_t>(T * kvd)),
      v(static_cast<size_t>(T * kvd)), att(static_cast<size_t>(T * h)),
      tmp(static_cast<size_t>(T * h));
  std::vector<float> g(static_cast<size_t>(T * f)), u(static_cast<size_t>(T * f));
  for (int64_t r = 0; r < T; ++r) {
    std::copy_n(embed_.data() + int64_t{ids[static_cast<size_t>(r)]} * h, h, x.data() + r * h);
  }
  const float scale = 1.f / std::sqrt(static_cast<float>(c_.head_dim));
  for (int32_t l = 0; l < c_.layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    rmsnorm(x.data(), L.attn_norm, T, h, c_.rms_eps, hn.data());
    linear(hn.data(), L.wq, T, h, h, q.data());
    linear(hn.data(), L.wk, T, kvd, h, k.data());
    linear(hn.data(), L.wv, T, kvd, h, v.data());
    if (any_sink_rope) {
      qs = q;
      rope(qs.data(), T, c_.q_heads, c_.head_dim, pos_sink, inv_freq_);
    }
    rope(q.data(), T, c_.q_heads, c_.head_dim, pos, inv_freq_);
    rope(k.data(), T, c_.kv_heads, c_.head_dim, pos, inv_freq_);
    auto& cache = kv.layers_[static_cast<size_t>(l)];
    kernels::reference::append_kv_ref(cache.view(), batch, k, v);
    window_attention(std::as_const(cache).view(), batch, windows, c_.q_heads, scale, q,
                     any_sink_rope ? qs : q, att);
    linear(att.data(), L.wo, T, h, h, tmp.data());
    for (int64_t i = 0; i < T * h; ++i) x[static_cast<size_t>(i)] += tmp[static_cast<size_t>(i)];
    rmsnorm(x.data(), L.ffn_norm, T, h, c_.rms_eps, hn.data());
    linear(hn.data(), L.wg, T, f, h, g.data());
    linear(hn.data(), L.wu, T, f, h, u.data());
    for (int64_t i = 0; i < T * f; ++i) {
      const float a = g[static_cast<size_t>(i)];
      g[static_cast<size_t>(i)] = a / (1.f + std::exp(-a)) * u[static_cast<size_t>(i)];
    }
    linear(g.data(), L.wd, T, h, f, tmp.data());
    for (int64_t i = 0; i < T * h; ++i) x[static_cast<size_t>(i)] += tmp[static_cast<size_t>(i)];
  }
  rmsnorm(x.data(), out_norm_, T, h, c_.rms_eps, hn.data());
  std::vector<float> logits(static_cast<size_t>(T * c_.vocab));
  linear(hn.data(), c_.tied_embeddings ? embed_ : output_, T, c_.vocab, h, logits.data());
  for (int32_t s = 0; s < ns; ++s)
    kv.seqs_[static_cast<size_t>(s)].blocks.release_outside_window(kv.pool_);
  return logits;
}

double log_prob(std::span<const float> logits, int32_t target) {
  if (target < 0 || static_cast<size_t>(target) >= logits.size()) {
    throw std::out_of_range("log_prob: target outside the logits");
  }
  double mx = logits[0];
  for (const float z : logits) mx = std::max(mx, double{z});
  double sum = 0;
  for (const float z : logits) sum += std::exp(double{z} - mx);
  return double{logits[static_cast<size_t>(target)]} - mx - std::log(sum);
}

}  // namespace metronome::quality
