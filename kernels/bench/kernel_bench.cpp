// Device timing of the paged-attention kernels for scripts/gpu_check.sh.
//
// Protocol (STYLE.md, Measurement): warm-up launches, then CUDA events on the benchmark's stream
// around each launch, median of repetitions; inputs rotate over enough copies that the rotation is
// larger than 4x the L2 cache, so no timing reads a cache warmed by the previous launch; the
// outputs of timed shapes are checked against the CPU reference after timing (a sample of
// sessions).
//
// Reports: device copy bandwidth (cudaMemcpy device to device, bytes read + written), the decode
// shape of the speed target (256 sessions x 8k context, 28/4 heads, head_dim 128, bf16, block 16)
// as achieved bytes/s and fraction of copy bandwidth, windowed vs unbounded cost over context
// lengths, a small grid, and one decoder layer step.
//
//   metronome_kernel_bench [--json FILE] [--quick]
// Exit codes: 0 ok, 1 a check failed, 2 no CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/block_table.h"
#include "kernels/cuda_check.h"
#include "kernels/dtype.h"
#include "kernels/layer_gemms.h"
#include "kernels/layer_step.h"
#include "kernels/model_shapes.h"
#include "kernels/paged_attention.h"
#include "kernels/reference/paged_attention_ref.h"

namespace mk = metronome::kernels;
namespace kv = metronome::kv;

namespace {

struct Timer {
  cudaStream_t stream;
  cudaEvent_t a, b;
  explicit Timer(cudaStream_t s) : stream(s) {
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  // Median milliseconds of `reps` timed calls of f(i) after `warm` untimed ones.
  template <typename F>
  double median_ms(int warm, int reps, F&& f) {
    for (int i = 0; i < warm; ++i) f(i);
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      CUDA_CHECK(cudaEventRecord(a, stream));
      f(warm + i);
      CUDA_CHECK(cudaEventRecord(b, stream));
      CUDA_CHECK(cudaEventSynchronize(b));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

struct Device {
  std::string name;
  int sms = 0;
  int64_t l2 = 0;
};

// One attention shape: sessions with (ctx, q) and a window; `copies` independent pools and queries.
struct AttentionSetup {
  int32_t kv_heads = 4, q_heads = 28, head_dim = 128, block_size = 16;
  kv::Window window{};
  std::vector<int32_t> ctx, q_len;
  int copies = 1;

  std::vector<void*> allocs;
  std::vector<void*> k, v, q, out;
  std::vector<int32_t> h_q_start, h_seq, h_tables;
  int32_t max_blocks = 1, num_blocks = 0;
  mk::FrameBatch batch;
  void* ws = nullptr;
  size_t ws_bytes = 0;
  int64_t kv_bytes = 0;  // unique K/V bytes one launch must read
  int64_t io_bytes = 0;  // q read + out written

  void* alloc(size_t n) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 16)));
    allocs.push_back(p);
    return p;
  }
  ~AttentionSetup() {
    for (void* p : allocs) cudaFree(p);
  }
  int32_t total_q() const { return h_q_start.back(); }

  void build(int64_t l2_bytes) {
    int64_t need = 0;
    for (size_t s = 0; s < ctx.size(); ++s)
      need += kv::step_blocks(ctx[s], q_len[s], window, block_size);
    need += kv::ceil_div(1024, block_size) + 4;
    mk::BlockPool pool(static_cast<int32_t>(need));
    std::vector<mk::SessionBlocks> sessions;
    sessions.reserve(ctx.size());
    h_q_start = {0};
    for (size_t s = 0; s < ctx.size(); ++s) {
      sessions.emplace_back(window, block_size);
      auto& sb = sessions.back();
      for (int64_t done = 0; done < ctx[s]; done += 1024) {
        if (!sb.append(pool, std::min<int64_t>(1024, ctx[s] - done)))
          throw std::logic_error("pool");
        sb.release_outside_window(pool);
      }
      if (!sb.append(pool, q_len[s])) throw std::logic_error("pool");
      h_q_start.push_back(h_q_start.back() + q_len[s]);
      h_seq.push_back(static_cast<int32_t>(sb.tokens()));
      max_blocks = std::max(max_blocks, static_cast<int32_t>(sb.table().size()));
      int64_t keys = 0;
      const int64_t first_q = sb.tokens() - q_len[s];
      for (int64_t key = 0; key < sb.tokens(); ++key) {
        // Visible to the frame's first or last query covers the union (two intervals).
        if (kv::key_visible(first_q, key, window) || kv::key_visible(sb.tokens() - 1, key, window))
          ++keys;
      }
      kv_bytes += keys * 2 * kv_heads * head_dim * 2;
    }
    std::vector<const mk::SessionBlocks*> ptrs;
    for (auto& sb : sessions) ptrs.push_back(&sb);
    h_tables = mk::dense_block_tables(ptrs, max_blocks);
    num_blocks = pool.num_blocks();
    const int64_t pool_elems = int64_t{num_blocks} * block_size * kv_heads * head_dim;
    const int64_t q_elems = int64_t{total_q()} * q_heads * head_dim;
    io_bytes = 2 * q_elems * 2;
    const int64_t set_bytes = kv_bytes + io_bytes;
    copies = static_cast<int>(
        std::clamp<int64_t>(kv::ceil_div(4 * l2_bytes, std::max<int64_t>(set_bytes, 1)), 1, 64));
    for (int c = 0; c < copies; ++c) {
      k.push_back(alloc(pool_elems * 2));
      v.push_back(alloc(pool_elems * 2));
      q.push_back(alloc(q_elems * 2));
      out.push_back(alloc(q_elems * 2));
      STATUS_CHECK(
          mk::fill_uniform(mk::Dtype::kBF16, k.back(), pool_elems, 1.f, 10 + 4 * c, nullptr));
      STATUS_CHECK(
          mk::fill_uniform(mk::Dtype::kBF16, v.back(), pool_elems, 1.f, 11 + 4 * c, nullptr));
      STATUS_CHECK(mk::fill_uniform(mk::Dtype::kBF16, q.back(), q_elems, 1.f, 12 + 4 * c, nullptr));
    }
    auto* d_qs = static_cast<int32_t*>(alloc(h_q_start.size() * 4));
    auto* d_seq = static_cast<int32_t*>(alloc(h_seq.size() * 4));
    auto* d_tab = static_cast<int32_t*>(alloc(h_tables.size() * 4));
    CUDA_CHECK(cudaMemcpy(d_qs, h_q_start.data(), h_q_start.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_seq, h_seq.data(), h_seq.size() * 4, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_tab, h_tables.data(), h_tables.size() * 4, cudaMemcpyHostToDevice));
    batch.num_sessions = static_cast<int32_t>(ctx.size());
    batch.q_start = d_qs;
    batch.seq_lens = d_seq;
    batch.block_tables = d_tab;
    batch.max_blocks = max_blocks;
    batch.max_q_len = *std::max_element(q_len.begin(), q_len.end());
    batch.max_seq_len = *std::max_element(h_seq.begin(), h_seq.end());
    ws_bytes = mk::paged_attention_workspace_bytes(params(0));
    if (ws_bytes) ws = alloc(ws_bytes);
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  mk::PagedAttentionParams params(int c) const {
    mk::PagedAttentionParams p;
    p.kv = {k.empty() ? nullptr : k[c],
            v.empty() ? nullptr : v[c],
            num_blocks,
            block_size,
            kv_heads,
            head_dim};
    p.batch = batch;
    p.total_q = total_q();
    p.window = window;
    p.q_heads = q_heads;
    p.scale = 1.f / std::sqrt(static_cast<float>(head_dim));
    p.q = q.empty() ? nullptr : q[c];
    p.out = out.empty() ? nullptr : out[c];
    p.workspace = ws;
    p.workspace_bytes = ws_bytes;
    return p;
  }

  // Relative L2 error of copy 0's output for up to `n` sessions against the CPU reference, built
  // from those sessions' blocks only (downloaded and renumbered).
  double check(int n) const {
    std::vector<int32_t> pick;
    for (int i = 0; i < n && i < static_cast<int>(ctx.size()); ++i) {
      pick.push_back(static_cast<int32_t>(i * (ctx.size() - 1) / std::max(1, n - 1)));
    }
    std::sort(pick.begin(), pick.end());
    pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
    const int64_t block_elems = int64_t{block_size} * kv_heads * head_dim;
    std::vector<int32_t> tables, q_start{0}, seq;
    std::vector<int32_t> src_blocks;
    for (int32_t s : pick) {
      for (int32_t b = 0; b < max_blocks; ++b) {
        const int32_t phys = h_tables[static_cast<size_t>(s) * max_blocks + b];
        if (phys >= 0) src_blocks.push_back(phys);
        tables.push_back(phys >= 0 ? static_cast<int32_t>(src_blocks.size() - 1) : -1);
      }
      q_start.push_back(q_start.back() + q_len[s]);
      seq.push_back(h_seq[s]);
    }
    mk::reference::HostKvCache cache(static_cast<int32_t>(src_blocks.size()), block_size, kv_heads,
                                     head_dim);
    std::vector<uint16_t> buf(static_cast<size_t>(block_elems));
    for (size_t i = 0; i < src_blocks.size(); ++i) {
      for (int kvsel = 0; kvsel < 2; ++kvsel) {
        const auto* base = static_cast<const uint16_t*>(kvsel ? v[0] : k[0]);
        CUDA_CHECK(cudaMemcpy(buf.data(), base + src_blocks[i] * block_elems, buf.size() * 2,
                              cudaMemcpyDeviceToHost));
        auto& dst = kvsel ? cache.v() : cache.k();
        for (int64_t x = 0; x < block_elems; ++x)
          dst[i * block_elems + x] = mk::bf16_bits_to_float(buf[x]);
      }
    }
    const int64_t row = int64_t{q_heads} * head_dim;
    std::vector<float> hq, got;
    for (int32_t s : pick) {
      std::vector<uint16_t> qb(static_cast<size_t>(q_len[s] * row)), ob(qb.size());
      CUDA_CHECK(cudaMemcpy(qb.data(), static_cast<const uint16_t*>(q[0]) + h_q_start[s] * row,
                            qb.size() * 2, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(ob.data(), static_cast<const uint16_t*>(out[0]) + h_q_start[s] * row,
                            ob.size() * 2, cudaMemcpyDeviceToHost));
      for (uint16_t x : qb) hq.push_back(mk::bf16_bits_to_float(x));
      for (uint16_t x : ob) got.push_back(mk::bf16_bits_to_float(x));
    }
    mk::FrameBatch b{static_cast<int32_t>(pick.size()),
                     q_start.data(),
                     seq.data(),
                     tables.data(),
                     max_blocks,
                     0,
                     0};
    std::vector<float> ref(got.size());
    mk::reference::paged_attention_ref(std::as_const(cache).view(), b, window,
                                       {q_heads, 1.f / std::sqrt(static_cast<float>(head_dim))}, hq,
                                       ref);
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      num += (double{got[i]} - ref[i]) * (double{got[i]} - ref[i]);
      den += double{ref[i]} * ref[i];
    }
    return std::sqrt(num / std::max(den, 1e-300));  // NaN if got holds NaN
  }
};

struct Row {
  std::string group, name;
  int sessions = 0, ctx = 0, q = 0;
  std::string window;
  double ms = 0, gbps = 0, frac_copy = 0, err = -1;
  int splits = 0;
};

// "W480_S16". Appended piece by piece: GCC 12 warns falsely (-Wrestrict) of "W" + std::string&&.
std::string window_label(kv::Window w) {
  return std::string("W")
      .append(std::to_string(w.window))
      .append("_S")
      .append(std::to_string(w.sinks));
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o.push_back('\\');
    o.push_back(c);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--quick") {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: %s [--json FILE] [--quick]\n", argv[0]);
      return 64;
    }
  }
  int n_dev = 0;
  const cudaError_t e = cudaGetDeviceCount(&n_dev);
  if (e != cudaSuccess || n_dev == 0) {
    std::fprintf(stderr, "metronome_kernel_bench: no CUDA device (%s); nothing timed\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "device count 0");
    return 2;
  }
  try {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    Device dev{prop.name, prop.multiProcessorCount, prop.l2CacheSize};
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));
    Timer timer(stream);
    const int warm = 3, reps = quick ? 5 : 15;
    std::vector<Row> rows;
    bool failed = false;

    // 1. Copy bandwidth: 2 GiB device to device; bytes read + written.
    double copy_gbps = 0;
    {
      const size_t n = size_t{2} << 30;
      void *a = nullptr, *b = nullptr;
      CUDA_CHECK(cudaMalloc(&a, n));
      CUDA_CHECK(cudaMalloc(&b, n));
      CUDA_CHECK(cudaMemset(a, 1, n));
      const double ms = timer.median_ms(warm, reps, [&](int) {
        CUDA_CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, stream));
      });
      copy_gbps = 2.0 * n / (ms * 1e-3) / 1e9;
      cudaFree(a);
      cudaFree(b);
      Row r;
      r.group = "copy";
      r.name = "d2d_2GiB";
      r.ms = ms;
      r.gbps = copy_gbps;
      r.frac_copy = 1.0;
      rows.push_back(r);
    }

    auto time_attention = [&](const std::string& group, const std::string& name, int sessions,
                              int ctx, int q, kv::Window w, bool check) {
      AttentionSetup st;
      st.window = w;
      st.ctx.assign(sessions, ctx);
      st.q_len.assign(sessions, q);
      st.build(dev.l2);
      const double ms = timer.median_ms(warm, reps, [&](int i) {
        STATUS_CHECK(mk::paged_attention(st.params(i % st.copies), stream));
      });
      CUDA_CHECK(cudaStreamSynchronize(stream));
      Row r;
      r.group = group;
      r.name = name;
      r.sessions = sessions;
      r.ctx = ctx;
      r.q = q;
      r.window = w.unbounded() ? "unbounded" : window_label(w);
      r.ms = ms;
      r.gbps = static_cast<double>(st.kv_bytes + st.io_bytes) / (ms * 1e-3) / 1e9;
      r.frac_copy = r.gbps / copy_gbps;
      r.splits = mk::paged_attention_splits(st.params(0));
      if (check) {
        r.err = st.check(3);
        if (!(r.err < 1e-2)) failed = true;
      }
      rows.push_back(r);
      std::fprintf(stderr,
                   "  %-10s %-34s %8.3f ms %8.1f GB/s %5.1f%% of copy  splits %d  err %.2e\n",
                   group.c_str(), name.c_str(), r.ms, r.gbps, 100 * r.frac_copy, r.splits, r.err);
    };

    // 2. The decode speed target.
    time_attention("target", "decode_256x8192_28q4kv_d128", 256, 8192, 1, kv::Window{}, true);

    // 3. Windowed cost vs context (S = 4, W = 1024), unbounded beside it.
    const kv::Window win{1024, 4};
    for (int ctx : {512, 1024, 2048, 4096, 8192, 16384}) {
      if (quick && ctx > 4096) break;
      time_attention("window", "decode_256_ctx" + std::to_string(ctx) + "_windowed", 256, ctx, 1,
                     win, ctx == 8192);
      time_attention("window", "decode_256_ctx" + std::to_string(ctx) + "_unbounded", 256, ctx, 1,
                     kv::Window{}, false);
    }

    // 4. Small grid: sessions x frame size x context, both modes.
    for (int sessions : {1, 16, 64, 256}) {
      for (int q : {1, 16}) {
        for (int ctx : {1024, 4096}) {
          for (bool windowed : {false, true}) {
            const std::string name = "s" + std::to_string(sessions) + "_q" + std::to_string(q) +
                                     "_ctx" + std::to_string(ctx) +
                                     (windowed ? "_windowed" : "_unbounded");
            time_attention("grid", name, sessions, ctx, q, windowed ? win : kv::Window{},
                           sessions == 16);
          }
        }
      }
    }

    // 5. One decoder layer of a named model (attention + cuBLAS GEMMs), 64 sessions, one token
    // each.
    for (const char* model : {"qwen2.5-omni-7b", "qwen3-omni-30b-a3b"}) {
      for (bool windowed : {false, true}) {
        mk::BatchComposition b;
        b.q_lens.assign(64, 1);
        b.ctx_lens.assign(64, 4096);
        b.window = windowed ? win : kv::Window{};
        mk::LayerStepOptions o;
        o.layers = 4;
        mk::LayerStep step(*mk::find_model_shape(model), b, o);
        const double ms = timer.median_ms(warm, reps, [&](int) { STATUS_CHECK(step.run(stream)); });
        Row r;
        r.group = "layer";
        r.name = std::string(model) + "_4layers_64x4096" + (windowed ? "_windowed" : "_unbounded");
        r.sessions = 64;
        r.ctx = 4096;
        r.q = 1;
        r.window = windowed ? "W1024_S4" : "unbounded";
        r.ms = ms;
        rows.push_back(r);
        std::fprintf(stderr, "  layer      %-34s %8.3f ms\n", r.name.c_str(), ms);
      }
    }

    // Table and JSON.
    std::printf("device: %s, %d SMs, L2 %.0f MB\n", dev.name.c_str(), dev.sms,
                static_cast<double>(dev.l2) / 1e6);
    std::printf("%-8s %-44s %9s %9s %7s %6s %9s\n", "group", "name", "ms", "GB/s", "%copy",
                "splits", "rel_err");
    for (const Row& r : rows) {
      std::printf("%-8s %-44s %9.4f %9.1f %6.1f%% %6d %9.2e\n", r.group.c_str(), r.name.c_str(),
                  r.ms, r.gbps, 100 * r.frac_copy, r.splits, r.err);
    }
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      f << "{\"device\": \"" << json_escape(dev.name) << "\", \"sms\": " << dev.sms
        << ", \"l2_bytes\": " << dev.l2 << ", \"copy_gbps\": " << copy_gbps
        << ", \"warmup\": " << warm << ", \"reps\": " << reps << ", \"rows\": [\n";
      for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        f << "  {\"group\": \"" << r.group << "\", \"name\": \"" << r.name
          << "\", \"sessions\": " << r.sessions << ", \"ctx\": " << r.ctx << ", \"q\": " << r.q
          << ", \"window\": \"" << r.window << "\", \"ms\": " << r.ms << ", \"gbps\": " << r.gbps
          << ", \"frac_copy\": " << r.frac_copy << ", \"splits\": " << r.splits << ", \"rel_err\": "
          << (r.err >= 0 || std::isnan(r.err)
                  ? (std::isnan(r.err) ? std::string("null") : std::to_string(r.err))
                  : std::string("null"))
          << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
      }
      f << "]}\n";
    }
    if (failed)
      std::fprintf(stderr, "metronome_kernel_bench: a correctness check after timing FAILED\n");
    return failed ? 1 : 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "metronome_kernel_bench: %s\n", ex.what());
    return 1;
  }
}
