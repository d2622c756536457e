#include "quality/llama_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/config_error.h"
#include "quality/exp_doubles.h"
#include "quality/exp_floats.h"
#include "quality/gguf_file.h"
#include "quality/lane_max.h"
#include "quality/lane_sum.h"
#include "quality/workers.h"

namespace metronome::quality {

namespace {

int32_t meta_int(const GgufFile& g, const std::string& key, int64_t lo, int64_t hi) {
  const int64_t v = g.integer(key);
  if (v < lo || v > hi) {
    throw ConfigError(g.path() + ": metadata " + key + " is " + std::to_string(v) + ", expected " +
                      std::to_string(lo) + "-" + std::to_string(hi));
  }
  return static_cast<int32_t>(v);
}

// One row of rmsnorm: y = x / sqrt(mean(x^2) + eps) * gain, the mean in double.
void rmsnorm_row(const float* x, const std::vector<float>& gain, int64_t d, double eps, float* y) {
  double ss = 0;
  for (int64_t j = 0; j < d; ++j) ss += double{x[j]} * x[j];
  const auto inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
  for (int64_t j = 0; j < d; ++j) y[j] = x[j] * inv * gain[static_cast<size_t>(j)];
}

// cos and sin of pos[r] * inv_freq[i] for each row r and pair i: [rows, head_dim / 2] each,
// computed once per step (every layer rotates by the same angles).
struct RopeTable {
  std::vector<float> c, s;
  RopeTable(const std::vector<int64_t>& pos, const std::vector<double>& inv_freq) {
    const size_t half = inv_freq.size();
    c.resize(pos.size() * half);
    s.resize(pos.size() * half);
    for (size_t r = 0; r < pos.size(); ++r) {
      for (size_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos[r]) * inv_freq[i];
        c[r * half + i] = static_cast<float>(std::cos(a));
        s[r * half + i] = static_cast<float>(std::sin(a));
      }
    }
  }
};

// Rotates each head of one row by its angles on the pair (2i, 2i + 1).
void rope_row(float* x, int32_t heads, int32_t head_dim, const float* c, const float* s) {
  const int32_t half = head_dim / 2;
  for (int32_t h = 0; h < heads; ++h) {
    float* v = x + h * head_dim;
    for (int32_t i = 0; i < half; ++i) {
      const float x0 = v[2 * i], x1 = v[2 * i + 1];
      v[2 * i] = x0 * c[i] - x1 * s[i];
      v[2 * i + 1] = x0 * s[i] + x1 * c[i];
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

void KvBatch::copy_from(int32_t dst, int32_t src) {
  Seq& d = seqs_[static_cast<size_t>(dst)];
  const Seq& s = seqs_[static_cast<size_t>(src)];
  if (d.blocks.tokens() != 0) throw std::logic_error("KvBatch::copy_from: destination not empty");
  if (!d.blocks.append(pool_, s.blocks.tokens())) {
    throw std::runtime_error("KvBatch::copy_from: KV pool of " +
                             std::to_string(pool_.num_blocks()) + " blocks is full");
  }
  // A block is contiguous in each layer's cache ([num_blocks, block_size, kv_heads, head_dim]):
  // copy whole blocks, slots past the last token included (never read).
  for (size_t b = 0; b < d.blocks.table().size(); ++b) {
    const int32_t from = s.blocks.table()[b], to = d.blocks.table()[b];
    if (from < 0) throw std::logic_error("KvBatch::copy_from: source block released");
    for (auto& layer : layers_) {
      const auto view = layer.view();
      const int64_t n = int64_t{view.block_size} * view.kv_heads * view.head_dim;
      std::copy_n(layer.k().data() + from * n, n, layer.k().data() + to * n);
      std::copy_n(layer.v().data() + from * n, n, layer.v().data() + to * n);
    }
  }
  d.blocks.release_outside_window(pool_);
}

int32_t KvBatch::blocks_needed(kv::Window w, int64_t tokens, int64_t chunk, int32_t block_size) {
  int64_t most = 0;
  for (int64_t ctx = 0; ctx < tokens; ++ctx) {
    most = std::max(most, kv::step_blocks(ctx, std::min(chunk, tokens - ctx), w, block_size));
  }
  return static_cast<int32_t>(most);
}

LlamaModel::LlamaModel(const GgufFile& g) : c_(LlamaConfig::from_gguf(g)) {
  const int64_t h = c_.hidden, f = c_.ffn, kvd = int64_t{c_.kv_heads} * c_.head_dim;
  // Each matrix with its block codes where the file has them: decode steps read those.
  const auto matrix = [&](const std::string& name, int64_t n, int64_t k) {
    return PackedMatrix(g.floats(name, {k, n}), n, k, g.codes(name, {k, n}));
  };
  const auto stacked = [&](const std::vector<std::string>& names, const std::vector<int64_t>& ns,
                           int64_t k) {
    std::vector<std::vector<float>> w;
    std::vector<std::vector<BlockCodes>> codes;
    for (size_t i = 0; i < names.size(); ++i) {
      w.push_back(g.floats(names[i], {k, ns[i]}));
      codes.push_back(g.codes(names[i], {k, ns[i]}));
    }
    return PackedMatrix::stack({w.begin(), w.end()}, ns, k, {codes.begin(), codes.end()});
  };
  if (c_.tied_embeddings) {
    output_ = matrix("token_embd.weight", c_.vocab, h);
  } else {
    embed_ = matrix("token_embd.weight", c_.vocab, h);
    output_ = matrix("output.weight", c_.vocab, h);
  }
  out_norm_ = g.floats("output_norm.weight", {h});
  for (int32_t l = 0; l < c_.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    Layer L;
    L.attn_norm = g.floats(p + "attn_norm.weight", {h});
    L.qkv =
        stacked({p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}, {h, kvd, kvd}, h);
    L.wo = matrix(p + "attn_output.weight", h, h);
    L.ffn_norm = g.floats(p + "ffn_norm.weight", {h});
    L.gate_up = stacked({p + "ffn_gate.weight", p + "ffn_up.weight"}, {f, f}, h);
    L.wd = matrix(p + "ffn_down.weight", h, f);
    layers_.push_back(std::move(L));
  }
  for (int32_t i = 0; i < c_.head_dim / 2; ++i) {
    inv_freq_.push_back(std::pow(c_.rope_base, -2.0 * i / c_.head_dim));
  }
}

const std::vector<float>& LlamaModel::step(KvBatch& kv,
                                           const std::vector<std::vector<int32_t>>& tokens) const {
  Workers one(1);
  return step(kv, tokens, one);
}

const std::vector<float>& LlamaModel::step(KvBatch& kv,
                                           const std::vector<std::vector<int32_t>>& tokens,
                                           Workers& workers) const {
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
  const int64_t nqkv = h + 2 * kvd, half = c_.head_dim / 2;
  const bool any_sink_rope = pos_sink != pos;
  const auto sz = [](int64_t n) { return static_cast<size_t>(n); };
  // Every element of these is written before it is read (their contents from the last step never
  // show), so they are only sized.
  auto& w = kv.scratch_;
  for (auto [buf, n] : {std::pair{&w.x, T * h},
                        {&w.hn, T * h},
                        {&w.qkv, T * nqkv},
                        {&w.q, T * h},
                        {&w.qs, any_sink_rope ? T * h : 0},
                        {&w.k, T * kvd},
                        {&w.v, T * kvd},
                        {&w.att, T * h},
                        {&w.tmp, T * h},
                        {&w.gu, T * 2 * f},
                        {&w.act, T * f},
                        {&w.logits, T * c_.vocab}}) {
    buf->resize(sz(n));
  }
  auto &x = w.x, &hn = w.hn, &qkv = w.qkv, &q = w.q, &qs = w.qs, &k = w.k, &v = w.v, &att = w.att,
       &tmp = w.tmp, &gu = w.gu, &act = w.act;
  const PackedMatrix& embed = c_.tied_embeddings ? output_ : embed_;
  for (int64_t r = 0; r < T; ++r) {
    for (int64_t j = 0; j < h; ++j) x[sz(r * h + j)] = embed.at(ids[sz(r)], j);
  }
  const RopeTable rope_orig(pos, inv_freq_);
  const RopeTable rope_sink(any_sink_rope ? pos_sink : std::vector<int64_t>{}, inv_freq_);
  const float scale = 1.f / std::sqrt(static_cast<float>(c_.head_dim));
  // Pointwise work is split by rows: row r is computed by one worker whatever their number.
  const auto rows = [&](auto fn) {
    workers.for_range(T, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) fn(r);
    });
  };
  for (int32_t l = 0; l < c_.layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    rows([&](int64_t r) {
      if (l > 0) {  // the previous layer's FFN output joins the residual stream
        for (int64_t j = 0; j < h; ++j) x[sz(r * h + j)] += tmp[sz(r * h + j)];
      }
      rmsnorm_row(x.data() + r * h, L.attn_norm, h, c_.rms_eps, hn.data() + r * h);
    });
    L.qkv.multiply(hn.data(), h, T, qkv.data(), nqkv, workers);
    rows([&](int64_t r) {
      const float* src = qkv.data() + r * nqkv;
      std::copy_n(src, h, q.data() + r * h);
      std::copy_n(src + h, kvd, k.data() + r * kvd);
      std::copy_n(src + h + kvd, kvd, v.data() + r * kvd);
      if (any_sink_rope) {
        std::copy_n(src, h, qs.data() + r * h);
        rope_row(qs.data() + r * h, c_.q_heads, c_.head_dim, rope_sink.c.data() + r * half,
                 rope_sink.s.data() + r * half);
      }
      rope_row(q.data() + r * h, c_.q_heads, c_.head_dim, rope_orig.c.data() + r * half,
               rope_orig.s.data() + r * half);
      rope_row(k.data() + r * kvd, c_.kv_heads, c_.head_dim, rope_orig.c.data() + r * half,
               rope_orig.s.data() + r * half);
    });
    auto& cache = kv.layers_[static_cast<size_t>(l)];
    kernels::reference::append_kv_ref(cache.view(), batch, k, v);
    window_attention(std::as_const(cache).view(), batch, windows, c_.q_heads, scale, q,
                     any_sink_rope ? qs : q, att, &workers);
    L.wo.multiply(att.data(), h, T, tmp.data(), h, workers);
    rows([&](int64_t r) {
      for (int64_t j = 0; j < h; ++j) x[sz(r * h + j)] += tmp[sz(r * h + j)];
      rmsnorm_row(x.data() + r * h, L.ffn_norm, h, c_.rms_eps, hn.data() + r * h);
    });
    L.gate_up.multiply(hn.data(), h, T, gu.data(), 2 * f, workers);
    rows([&](int64_t r) {
      const float* g = gu.data() + r * 2 * f;
      const float* u = g + f;
      float* out = act.data() + r * f;
      for (int64_t i = 0; i < f; ++i) out[i] = -g[i];
      exp_floats(out, out, f);  // e^-g, as std::exp gives it, a row at a time
      for (int64_t i = 0; i < f; ++i) out[i] = g[i] / (1.f + out[i]) * u[i];
    });
    L.wd.multiply(act.data(), f, T, tmp.data(), h, workers);
  }
  rows([&](int64_t r) {
    for (int64_t j = 0; j < h; ++j) x[sz(r * h + j)] += tmp[sz(r * h + j)];
    rmsnorm_row(x.data() + r * h, out_norm_, h, c_.rms_eps, hn.data() + r * h);
  });
  output_.multiply(hn.data(), h, T, w.logits.data(), c_.vocab, workers);
  for (int32_t s = 0; s < ns; ++s)
    kv.seqs_[static_cast<size_t>(s)].blocks.release_outside_window(kv.pool_);
  return w.logits;
}

double log_prob(std::span<const float> logits, int32_t target) {
  if (target < 0 || static_cast<size_t>(target) >= logits.size()) {
    throw std::out_of_range("log_prob: target outside the logits");
  }
  const double mx = lane_max(logits.data(), static_cast<int64_t>(logits.size()));
  // The exps a block at a time, 4 lanes a vector (exp_doubles: std::exp's bits), each block
  // summed in lanes (lane_sum.h) and the blocks in order.
  constexpr size_t kBlock = 512;
  double e[kBlock];
  double sum = 0;
  for (size_t i0 = 0; i0 < logits.size(); i0 += kBlock) {
    const size_t n = std::min(kBlock, logits.size() - i0);
    for (size_t i = 0; i < n; ++i) e[i] = double{logits[i0 + i]} - mx;
    exp_doubles(e, e, static_cast<int64_t>(n));
    sum += lane_sum(e, static_cast<int64_t>(n));
  }
  return double{logits[static_cast<size_t>(target)]} - mx - std::log(sum);
}

}  // namespace metronome::quality
