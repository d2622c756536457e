// Append: cache[table[s][p / bs], p % bs, h, :] = new[q_start[s] + i, h, :]
// for session s, new token i, position p = seq_lens[s] - q_len(s) + i.
//
// Layouts: k_new, v_new [total_q, kv_heads, head_dim]; pools [num_blocks, block_size, kv_heads,
// head_dim] (NHD). dtype bf16 or f16; the copy is dtype-blind (16-byte chunks of 8 elements), so
// head_dim (and any source row stride) must be a multiple of 8. A token's kv_heads x head_dim row
// is contiguous on both sides, so each thread moves one 16-byte chunk and a warp writes 512
// contiguous bytes. Grid: (max_q_len, num_sessions); tokens past a session's q_len exit.
#include <string>

#include "kernels/append_kv.h"

namespace metronome::kernels {
namespace {

__global__ void append_kv_kernel(uint4* __restrict__ k_pool, uint4* __restrict__ v_pool,
                                 const uint4* __restrict__ k_new, const uint4* __restrict__ v_new,
                                 FrameBatch batch, int32_t block_size, int32_t row_chunks,
                                 int64_t src_stride_chunks, int32_t* error_flag) {
  const int32_t s = blockIdx.y;
  const int32_t i = blockIdx.x;
  const int32_t q_len = batch.q_len(s);
  if (i >= q_len) return;
  const int64_t pos = int64_t{batch.seq_lens[s]} - q_len + i;
  const int32_t block = batch.physical_block(s, pos, block_size);
  if (block < 0) {
    if (error_flag && threadIdx.x == 0) atomicExch(error_flag, 1);
    return;
  }
  const int64_t dst = (int64_t{block} * block_size + pos % block_size) * row_chunks;
  const int64_t src = int64_t{batch.q_start[s] + i} * src_stride_chunks;
  for (int32_t c = threadIdx.x; c < row_chunks; c += blockDim.x) {
    k_pool[dst + c] = k_new[src + c];
    v_pool[dst + c] = v_new[src + c];
  }
}

}  // namespace

Status append_kv(const AppendKvParams& p, cudaStream_t stream) {
  if (!p.kv.k || !p.kv.v || !p.k_new || !p.v_new) return Status::Invalid("append_kv: null pointer");
  if (p.kv.head_dim % 8 != 0) return Status::Invalid("append_kv: head_dim must be a multiple of 8");
  if (p.kv.block_size < 1 || p.kv.kv_heads < 1)
    return Status::Invalid("append_kv: bad cache shape");
  if (p.batch.num_sessions < 0 || p.batch.num_sessions > 65535) {
    return Status::Invalid("append_kv: num_sessions must be in [0, 65535]");
  }
  const int32_t row_chunks = p.kv.kv_heads * p.kv.head_dim / 8;
  const int64_t stride = p.new_row_stride > 0 ? p.new_row_stride : int64_t{row_chunks} * 8;
  if (stride % 8 != 0 || stride < int64_t{row_chunks} * 8) {
    return Status::Invalid(
        "append_kv: new_row_stride must be a multiple of 8 and >= kv_heads * head_dim");
  }
  if (p.batch.num_sessions == 0 || p.batch.max_q_len == 0) return Status::Ok();
  const int32_t threads = row_chunks < 256 ? ((row_chunks + 31) / 32) * 32 : 256;
  const dim3 grid(static_cast<unsigned>(p.batch.max_q_len),
                  static_cast<unsigned>(p.batch.num_sessions));
  append_kv_kernel<<<grid, threads, 0, stream>>>(
      static_cast<uint4*>(p.kv.k), static_cast<uint4*>(p.kv.v), static_cast<const uint4*>(p.k_new),
      static_cast<const uint4*>(p.v_new), p.batch, p.kv.block_size, row_chunks, stride / 8,
      p.error_flag);
  return cuda_status(cudaGetLastError(), "append_kv launch");
}

}  // namespace metronome::kernels
