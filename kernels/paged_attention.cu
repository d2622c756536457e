// Paged attention (flash-decoding style) over an NHD paged KV cache, one template for both modes.
//
// For session s, new token i at position p = seq_lens[s] - q_len(s) + i, query head h, KV head
// g = h / G (G = q_heads / kv_heads):
//     out[t, h, :] = sum_k softmax_k(scale * q[t, h, :] . K[k, g, :]) V[k, g, :],  t = q_start[s] +
//     i
// over keys with kv::key_visible(p, k, window). WINDOWED = false passes kv::Window{} (all k <= p).
//
// Layouts: q, out [total_q, q_heads, D]; K, V pools [num_blocks, block_size, kv_heads, D];
// block_tables [num_sessions, max_blocks]. dtypes: T = bf16 or f16 in memory, fp32 arithmetic and
// accumulation, softmax in base 2 (scores pre-multiplied by scale * log2 e).
//
// Work split. A CTA (4 warps) owns one session, one KV head and a tile of ROWS "rows"
// (row = i * G + h % G: the G query heads sharing a KV head, for consecutive new tokens, so K and V
// are read once for the whole group), and one split of the keys. The keys a tile can see are a
// "virtual" range: the sinks left of the window, then [window_start(first query), last query];
// splits cut that range so that few sessions with long contexts still fill the GPU. With more than
// one split, each CTA writes unnormalised partials (acc, max, sum) and a combine kernel merges
// them.
//
// Inner loop, per 32-key tile (K, V staged in shared memory by cp.async, double buffered): lane j
// of each warp takes key j and computes its scores for the warp's rows (K row padded 16 bytes: no
// bank conflicts); the warp's max and sum update each row's online softmax by shuffles; then each
// lane accumulates D/32 output dimensions over the tile's keys. Any block size works: every key's
// physical block is looked up individually.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "kernels/paged_attention.h"

namespace metronome::kernels {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTileKeys = 32;
constexpr int kMinSplitKeys = 256;  // a split shorter than this costs more in combine than it gains
constexpr float kLog2e = 1.4426950408889634f;

template <typename T>
struct Vec;
template <>
struct Vec<__nv_bfloat16> {
  static __device__ __forceinline__ float2 to_float2(uint32_t u) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u));
  }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float f) {
    return __float2bfloat16_rn(f);
  }
  static __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
};
template <>
struct Vec<__half> {
  static __device__ __forceinline__ float2 to_float2(uint32_t u) {
    return __half22float2(*reinterpret_cast<const __half2*>(&u));
  }
  static __device__ __forceinline__ __half from_float(float f) { return __float2half_rn(f); }
  static __device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
};

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;  // 0: zero-fill, so masked keys hold no NaN garbage
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

struct KernelArgs {
  const void* k_pool;
  const void* v_pool;
  const void* q;
  void* out;
  float* o_part;  // [total_q, q_heads, splits, D] unnormalised partial outputs
  float2* ml;     // [total_q, q_heads, splits] (running max in log2 units, sum of weights)
  FrameBatch batch;
  kv::Window window;
  int64_t q_stride;
  int32_t block_size, kv_heads, q_heads, group, row_tiles, splits, split_keys;
  float scale_log2;
  int32_t* error_flag;
};

template <typename T, int D, int ROWS, bool WINDOWED>
__global__ void __launch_bounds__(kThreads) paged_attention_kernel(const KernelArgs a) {
  constexpr int kRowsPerWarp = ROWS / kWarps;
  constexpr int kDimsPerLane = D / 32;
  constexpr int kChunksPerRow = D / 8;  // 16-byte chunks
  constexpr int kKPitch = D + 8;  // +16 bytes: lanes reading different keys hit distinct banks
  static_assert(ROWS % kWarps == 0 && D % 64 == 0);

  __shared__ __align__(16) float q_s[ROWS][D];
  __shared__ __align__(16) T k_s[2][kTileKeys][kKPitch];
  __shared__ __align__(16) T v_s[2][kTileKeys][D];

  const int32_t s = blockIdx.z;
  const int32_t tile = blockIdx.y % a.row_tiles;
  const int32_t g = blockIdx.y / a.row_tiles;
  const int32_t split = blockIdx.x;
  const int32_t q_len = a.batch.q_len(s);
  const int32_t rows_total = q_len * a.group;
  const int32_t row0 = tile * ROWS;
  if (row0 >= rows_total) return;  // nothing of this session here; combine never reads it
  const int32_t rows_here = min(ROWS, rows_total - row0);
  const int64_t seq = a.batch.seq_lens[s];
  const int64_t p_base = seq - q_len;  // position of new token 0
  const int64_t p_first = p_base + row0 / a.group;
  const int64_t p_last = p_base + (row0 + rows_here - 1) / a.group;
  const kv::Window w = WINDOWED ? a.window : kv::Window{};

  // Virtual key range: [0, sink_end) then [win_start, p_last].
  const int64_t win_start = WINDOWED ? kv::window_start(p_first, w) : 0;
  const int64_t sink_end = WINDOWED ? min(w.sinks, win_start) : 0;
  const int64_t n_virtual = sink_end + (p_last + 1 - win_start);
  const int64_t j_begin = int64_t{split} * a.split_keys;
  const int64_t j_end = min(n_virtual, j_begin + a.split_keys);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* k_pool = static_cast<const T*>(a.k_pool);
  const T* v_pool = static_cast<const T*>(a.v_pool);
  const int64_t tq0 = a.batch.q_start[s];

  // Q rows into shared memory as fp32, pre-scaled; padding rows are zero.
  for (int idx = threadIdx.x; idx < ROWS * D; idx += kThreads) {
    const int r = idx / D, d = idx % D;
    float x = 0.f;
    if (r < rows_here) {
      const int32_t row = row0 + r;
      const int64_t t = tq0 + row / a.group;
      const int32_t h = g * a.group + row % a.group;
      x = Vec<T>::to_float(static_cast<const T*>(a.q)[t * a.q_stride + h * D + d]) * a.scale_log2;
    }
    q_s[r][d] = x;
  }

  auto load_tile = [&](int64_t j0, int buf) {
    for (int c = threadIdx.x; c < kTileKeys * kChunksPerRow; c += kThreads) {
      const int r = c / kChunksPerRow, col = (c % kChunksPerRow) * 8;
      const int64_t j = j0 + r;
      bool valid = j < j_end;
      int64_t off = 0;
      if (valid) {
        const int64_t key = j < sink_end ? j : win_start + (j - sink_end);
        const int32_t block = a.batch.physical_block(s, key, a.block_size);
        if (block < 0) {
          valid = false;
          if (a.error_flag) atomicExch(a.error_flag, 1);
        } else {
          off = ((int64_t{block} * a.block_size + key % a.block_size) * a.kv_heads + g) * D + col;
        }
      }
      cp_async_16(&k_s[buf][r][col], k_pool + off, valid);
      cp_async_16(&v_s[buf][r][col], v_pool + off, valid);
    }
    cp_async_commit();
  };

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];
  int64_t pos[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int x = 0; x < kDimsPerLane; ++x) acc[i][x] = 0.f;
    const int r = warp * kRowsPerWarp + i;
    pos[i] = p_base + (row0 + min(r, rows_here - 1)) / a.group;
  }

  const int64_t n_tiles = j_end > j_begin ? (j_end - j_begin + kTileKeys - 1) / kTileKeys : 0;
  if (n_tiles > 0) load_tile(j_begin, 0);
  for (int64_t it = 0; it < n_tiles; ++it) {
    const int buf = static_cast<int>(it & 1);
    if (it + 1 < n_tiles) {
      load_tile(j_begin + (it + 1) * kTileKeys, buf ^ 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    // Scores: lane owns key j.
    const int64_t j = j_begin + it * kTileKeys + lane;
    const int64_t key = j < sink_end ? j : win_start + (j - sink_end);
    float sc[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) sc[i] = 0.f;
#pragma unroll 4
    for (int d = 0; d < D; d += 8) {
      const uint4 kv8 = *reinterpret_cast<const uint4*>(&k_s[buf][lane][d]);
      const float2 k01 = Vec<T>::to_float2(kv8.x), k23 = Vec<T>::to_float2(kv8.y);
      const float2 k45 = Vec<T>::to_float2(kv8.z), k67 = Vec<T>::to_float2(kv8.w);
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        const float4 qa = *reinterpret_cast<const float4*>(&q_s[warp * kRowsPerWarp + i][d]);
        const float4 qb = *reinterpret_cast<const float4*>(&q_s[warp * kRowsPerWarp + i][d + 4]);
        sc[i] += qa.x * k01.x + qa.y * k01.y + qa.z * k23.x + qa.w * k23.y + qb.x * k45.x +
                 qb.y * k45.y + qb.z * k67.x + qb.w * k67.y;
      }
    }
    // Online softmax per row.
    float p[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const bool visible = j < j_end && kv::key_visible(pos[i], key, w);
      const float x = visible ? sc[i] : -INFINITY;
      const float m_new = fmaxf(m[i], warp_max(x));
      // m_new = -inf: nothing visible yet in this row; keep everything at zero.
      const float corr = m_new == -INFINITY ? 1.f : exp2f(m[i] - m_new);
      p[i] = m_new == -INFINITY ? 0.f : exp2f(x - m_new);
      l[i] = l[i] * corr + warp_sum(p[i]);
      m[i] = m_new;
#pragma unroll
      for (int x2 = 0; x2 < kDimsPerLane; ++x2) acc[i][x2] *= corr;
    }
    // P V: lane owns dimensions [lane * kDimsPerLane, +kDimsPerLane).
#pragma unroll 8
    for (int kk = 0; kk < kTileKeys; ++kk) {
      float v[kDimsPerLane];
      if constexpr (kDimsPerLane == 4) {
        const uint2 u = *reinterpret_cast<const uint2*>(&v_s[buf][kk][lane * 4]);
        const float2 a01 = Vec<T>::to_float2(u.x), a23 = Vec<T>::to_float2(u.y);
        v[0] = a01.x;
        v[1] = a01.y;
        v[2] = a23.x;
        v[3] = a23.y;
      } else {
        const uint32_t u = *reinterpret_cast<const uint32_t*>(&v_s[buf][kk][lane * 2]);
        const float2 a01 = Vec<T>::to_float2(u);
        v[0] = a01.x;
        v[1] = a01.y;
      }
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        const float pk = __shfl_sync(0xffffffffu, p[i], kk);
#pragma unroll
        for (int x2 = 0; x2 < kDimsPerLane; ++x2) acc[i][x2] += pk * v[x2];
      }
    }
    __syncthreads();  // the buffer is refilled two tiles on
  }

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = warp * kRowsPerWarp + i;
    if (r >= rows_here) continue;
    const int32_t row = row0 + r;
    const int64_t t = tq0 + row / a.group;
    const int32_t h = g * a.group + row % a.group;
    if (a.splits == 1) {
      T* out = static_cast<T*>(a.out) + (t * a.q_heads + h) * D + lane * kDimsPerLane;
      const float inv = 1.f / l[i];
#pragma unroll
      for (int x = 0; x < kDimsPerLane; ++x) out[x] = Vec<T>::from_float(acc[i][x] * inv);
    } else {
      const int64_t slot = (t * a.q_heads + h) * a.splits + split;
      float* o = a.o_part + slot * D + lane * kDimsPerLane;
#pragma unroll
      for (int x = 0; x < kDimsPerLane; ++x) o[x] = acc[i][x];
      if (lane == 0) a.ml[slot] = make_float2(m[i], l[i]);
    }
  }
}

// out = sum_i 2^(m_i - M) acc_i / sum_i 2^(m_i - M) l_i over splits i, M = max_i m_i.
template <typename T, int D>
__global__ void __launch_bounds__(D)
    combine_kernel(const float* __restrict__ o_part, const float2* __restrict__ ml,
                   T* __restrict__ out, int32_t splits) {
  const int64_t slot = blockIdx.x;  // t * q_heads + h
  const int d = threadIdx.x;
  float mx = -INFINITY;
  for (int i = 0; i < splits; ++i) mx = fmaxf(mx, ml[slot * splits + i].x);
  float sum = 0.f, acc = 0.f;
  for (int i = 0; i < splits; ++i) {
    const float2 e = ml[slot * splits + i];
    const float wgt = e.x == -INFINITY ? 0.f : exp2f(e.x - mx);
    sum += wgt * e.y;
    acc += wgt * o_part[(slot * splits + i) * D + d];
  }
  out[slot * D + d] = Vec<T>::from_float(acc / sum);
}

int sm_count() {
  static int count = [] {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      return 132;  // only sizes the split heuristic
    }
    return n;
  }();
  return count;
}

int rows_per_tile(const PagedAttentionParams& p) {
  return p.batch.max_q_len * (p.q_heads / p.kv.kv_heads) <= 8 ? 8 : 16;
}

// Longest virtual key range any tile walks.
int64_t max_virtual_keys(const PagedAttentionParams& p) {
  if (p.window.unbounded()) return p.batch.max_seq_len;
  return std::min<int64_t>(p.batch.max_seq_len, std::max<int64_t>(p.window.sinks, 0) +
                                                    p.window.window + p.batch.max_q_len);
}

int32_t split_keys(const PagedAttentionParams& p, int32_t splits) {
  const int64_t n = std::max<int64_t>(max_virtual_keys(p), 1);
  const int64_t per = (n + splits - 1) / splits;
  return static_cast<int32_t>((per + kTileKeys - 1) / kTileKeys * kTileKeys);
}

Status validate(const PagedAttentionParams& p) {
  if (!p.kv.k || !p.kv.v || !p.q || !p.out) return Status::Invalid("paged_attention: null pointer");
  if (p.kv.head_dim != 64 && p.kv.head_dim != 128) {
    return Status::Invalid("paged_attention: head_dim " + std::to_string(p.kv.head_dim) +
                           " (supported: 64, 128)");
  }
  if (p.kv.kv_heads < 1 || p.q_heads < 1 || p.q_heads % p.kv.kv_heads != 0) {
    return Status::Invalid("paged_attention: q_heads must be a positive multiple of kv_heads");
  }
  if (p.kv.block_size < 1) return Status::Invalid("paged_attention: block_size < 1");
  if (!p.window.unbounded() && p.window.sinks < 0)
    return Status::Invalid("paged_attention: sinks < 0");
  if (p.batch.num_sessions < 0 || p.batch.num_sessions > 65535) {
    return Status::Invalid("paged_attention: num_sessions must be in [0, 65535]");
  }
  if (p.num_splits < 0) return Status::Invalid("paged_attention: num_splits < 0");
  if (p.q_row_stride != 0 && p.q_row_stride < int64_t{p.q_heads} * p.kv.head_dim) {
    return Status::Invalid("paged_attention: q_row_stride < q_heads * head_dim");
  }
  return Status::Ok();
}

template <typename T, int D, int ROWS, bool WINDOWED>
Status launch(const PagedAttentionParams& p, int32_t splits, cudaStream_t stream) {
  KernelArgs a{};
  a.k_pool = p.kv.k;
  a.v_pool = p.kv.v;
  a.q = p.q;
  a.out = p.out;
  a.batch = p.batch;
  a.window = p.window;
  a.block_size = p.kv.block_size;
  a.kv_heads = p.kv.kv_heads;
  a.q_heads = p.q_heads;
  a.q_stride = p.q_row_stride > 0 ? p.q_row_stride : int64_t{p.q_heads} * D;
  a.group = p.q_heads / p.kv.kv_heads;
  a.row_tiles = (p.batch.max_q_len * a.group + ROWS - 1) / ROWS;
  a.splits = splits;
  a.split_keys = split_keys(p, splits);
  a.scale_log2 = p.scale * kLog2e;
  a.error_flag = p.error_flag;
  const int64_t slots = int64_t{p.total_q} * p.q_heads * splits;
  if (splits > 1) {
    a.ml = static_cast<float2*>(p.workspace);
    a.o_part = reinterpret_cast<float*>(a.ml + slots);
  }
  const int64_t grid_y = int64_t{a.row_tiles} * p.kv.kv_heads;
  if (grid_y > 65535) return Status::Invalid("paged_attention: kv_heads x row tiles > 65535");
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(grid_y),
                  static_cast<unsigned>(p.batch.num_sessions));
  paged_attention_kernel<T, D, ROWS, WINDOWED><<<grid, kThreads, 0, stream>>>(a);
  if (Status st = cuda_status(cudaGetLastError(), "paged_attention launch"); !st.ok()) return st;
  if (splits > 1 && p.total_q > 0) {
    combine_kernel<T, D><<<static_cast<unsigned>(int64_t{p.total_q} * p.q_heads), D, 0, stream>>>(
        a.o_part, a.ml, static_cast<T*>(p.out), splits);
    return cuda_status(cudaGetLastError(), "paged_attention combine launch");
  }
  return Status::Ok();
}

template <typename T, int D>
Status dispatch_rows(const PagedAttentionParams& p, int32_t splits, cudaStream_t stream) {
  const bool windowed = !p.window.unbounded();
  if (rows_per_tile(p) == 8) {
    return windowed ? launch<T, D, 8, true>(p, splits, stream)
                    : launch<T, D, 8, false>(p, splits, stream);
  }
  return windowed ? launch<T, D, 16, true>(p, splits, stream)
                  : launch<T, D, 16, false>(p, splits, stream);
}

template <typename T>
Status dispatch_dim(const PagedAttentionParams& p, int32_t splits, cudaStream_t stream) {
  return p.kv.head_dim == 64 ? dispatch_rows<T, 64>(p, splits, stream)
                             : dispatch_rows<T, 128>(p, splits, stream);
}

}  // namespace

int32_t paged_attention_splits(const PagedAttentionParams& p) {
  const int64_t n = std::max<int64_t>(max_virtual_keys(p), 1);
  const int64_t most = std::max<int64_t>(1, n / kMinSplitKeys);
  if (p.num_splits > 0)
    return std::min(p.num_splits, 1024);  // extra splits are empty, still correct
  if (p.batch.num_sessions == 0 || p.kv.kv_heads < 1 || p.q_heads < p.kv.kv_heads) return 1;
  const int group = p.q_heads / p.kv.kv_heads;
  const int rows = rows_per_tile(p);
  const int64_t base = int64_t{p.batch.num_sessions} * p.kv.kv_heads *
                       ((int64_t{p.batch.max_q_len} * group + rows - 1) / rows);
  // Enough CTAs for several waves at ~4 resident CTAs per SM, so the tail wave is a small part.
  const int64_t target = int64_t{sm_count()} * 4 * 4;
  const int64_t want = (target + base - 1) / base;
  return static_cast<int32_t>(std::clamp<int64_t>(want, 1, std::min<int64_t>(most, 64)));
}

size_t paged_attention_workspace_bytes(const PagedAttentionParams& p) {
  const int32_t splits = paged_attention_splits(p);
  if (splits <= 1) return 0;
  const size_t slots = static_cast<size_t>(p.total_q) * p.q_heads * splits;
  return slots * sizeof(float2) + slots * p.kv.head_dim * sizeof(float);
}

Status paged_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  if (Status st = validate(p); !st.ok()) return st;
  if (p.batch.num_sessions == 0 || p.total_q == 0) return Status::Ok();
  const int32_t splits = paged_attention_splits(p);
  if (splits > 1 && (!p.workspace || p.workspace_bytes < paged_attention_workspace_bytes(p))) {
    return Status::Invalid(
        "paged_attention: workspace smaller than paged_attention_workspace_bytes");
  }
  return p.dtype == Dtype::kBF16 ? dispatch_dim<__nv_bfloat16>(p, splits, stream)
                                 : dispatch_dim<__half>(p, splits, stream);
}

}  // namespace metronome::kernels
