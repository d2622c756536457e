// GPU kernels against the CPU references, on fresh random inputs, over a grid of shapes.
// Every test skips (GTEST_SKIP) with a message where no CUDA device is present.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "attention_grid.h"
#include "frame_fixture.h"
#include "kernels/append_kv.h"
#include "kernels/cuda_check.h"
#include "kernels/layer_gemms.h"
#include "kernels/layer_step.h"
#include "kernels/paged_attention.h"
#include "kernels/reference/layer_ref.h"
#include "kernels/reference/paged_attention_ref.h"

namespace metronome::kernels {
namespace {

using testing::attention_grid;
using testing::AttentionCase;
using testing::Frame;
using testing::FrameSpec;
using testing::make_frame;
using testing::max_row_rel_err;
using testing::rel_l2;
using testing::SessionSpec;

std::string gpu_missing() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
  if (n == 0) return "no CUDA device";
  return {};
}

#define REQUIRE_GPU()                                              \
  do {                                                             \
    static const std::string why = gpu_missing();                  \
    if (!why.empty()) GTEST_SKIP() << "GPU test skipped: " << why; \
  } while (0)

// Device buffer, freed on scope exit.
struct Dev {
  void* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t bytes) : n(bytes) { CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 16))); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
};
template <typename T>
std::unique_ptr<Dev> upload(const std::vector<T>& v) {
  auto d = std::make_unique<Dev>(v.size() * sizeof(T));
  CUDA_CHECK(cudaMemcpy(d->p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <typename T>
std::vector<T> download(const Dev& d, size_t count) {
  std::vector<T> v(count);
  CUDA_CHECK(cudaMemcpy(v.data(), d.p, count * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}
std::vector<uint16_t> to_bits(const std::vector<float>& v, Dtype dt) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = float_to_bits(v[i], dt);
  return b;
}
std::vector<float> from_bits(const std::vector<uint16_t>& b, Dtype dt) {
  std::vector<float> v(b.size());
  for (size_t i = 0; i < b.size(); ++i) v[i] = bits_to_float(b[i], dt);
  return v;
}
size_t count_nan(const std::vector<float>& v) {
  size_t n = 0;
  for (float x : v) n += std::isnan(x);
  return n;
}
double tolerance(Dtype dt) { return dt == Dtype::kBF16 ? 1e-2 : 3e-3; }

// Runs append + attention on the GPU and checks both against the references.
void check_frame(const AttentionCase& c) {
  const Frame f = make_frame(c.spec);
  const Dtype dt = c.spec.dtype;
  const FrameBatch host_batch = f.batch();

  // References.
  reference::HostKvCache ref_cache = f.cache_before;
  reference::append_kv_ref(ref_cache.view(), host_batch, f.k_new, f.v_new);
  std::vector<float> ref_out(f.q.size());
  const float scale = 1.f / std::sqrt(static_cast<float>(c.spec.head_dim));
  reference::paged_attention_ref(std::as_const(ref_cache).view(), host_batch, c.spec.window,
                                 {f.q_heads(), scale}, f.q, ref_out);

  // Device inputs: q, k_new, v_new dense, or in place in one fused QKV row per token
  // (q | k | v | 8 poisoned elements), the layout LayerStep hands the kernels.
  auto k_pool = upload(to_bits(f.cache_before.k(), dt));
  auto v_pool = upload(to_bits(f.cache_before.v(), dt));
  const size_t q_row = size_t(f.q_heads()) * c.spec.head_dim;
  const size_t kv_row = size_t(c.spec.kv_heads) * c.spec.head_dim;
  const size_t fused_row = q_row + 2 * kv_row + 8;
  std::unique_ptr<Dev> q, k_new, v_new, fused;
  const void *q_ptr, *k_new_ptr, *v_new_ptr;
  if (c.fused_qkv) {
    std::vector<uint16_t> rows(size_t(f.total_q()) * fused_row, 0xffff);  // NaN in bf16 and f16
    const auto qb = to_bits(f.q, dt), kb = to_bits(f.k_new, dt), vb = to_bits(f.v_new, dt);
    for (size_t t = 0; t < size_t(f.total_q()); ++t) {
      std::copy_n(qb.begin() + t * q_row, q_row, rows.begin() + t * fused_row);
      std::copy_n(kb.begin() + t * kv_row, kv_row, rows.begin() + t * fused_row + q_row);
      std::copy_n(vb.begin() + t * kv_row, kv_row, rows.begin() + t * fused_row + q_row + kv_row);
    }
    fused = upload(rows);
    q_ptr = fused->as<uint16_t>();
    k_new_ptr = fused->as<uint16_t>() + q_row;
    v_new_ptr = fused->as<uint16_t>() + q_row + kv_row;
  } else {
    q = upload(to_bits(f.q, dt));
    k_new = upload(to_bits(f.k_new, dt));
    v_new = upload(to_bits(f.v_new, dt));
    q_ptr = q->p;
    k_new_ptr = k_new->p;
    v_new_ptr = v_new->p;
  }
  auto q_start = upload(f.q_start);
  auto seq_lens = upload(f.seq_lens);
  auto tables = upload(f.tables);
  Dev out(f.q.size() * 2);
  Dev flag(sizeof(int32_t));
  CUDA_CHECK(cudaMemset(out.p, 0xff, out.n));  // poison: 0xffff is NaN in bf16 and f16
  CUDA_CHECK(cudaMemset(flag.p, 0, flag.n));

  FrameBatch batch = host_batch;
  batch.q_start = q_start->as<int32_t>();
  batch.seq_lens = seq_lens->as<int32_t>();
  batch.block_tables = tables->as<int32_t>();
  const auto view = f.cache_before.view();

  AppendKvParams ap;
  ap.dtype = dt;
  ap.kv = {k_pool->p, v_pool->p, view.num_blocks, view.block_size, view.kv_heads, view.head_dim};
  ap.batch = batch;
  ap.k_new = k_new_ptr;
  ap.v_new = v_new_ptr;
  ap.new_row_stride = c.fused_qkv ? int64_t(fused_row) : 0;
  ap.error_flag = flag.as<int32_t>();
  ASSERT_TRUE(append_kv(ap, nullptr).ok());

  PagedAttentionParams pp;
  pp.dtype = dt;
  pp.kv = {k_pool->p, v_pool->p, view.num_blocks, view.block_size, view.kv_heads, view.head_dim};
  pp.batch = batch;
  pp.total_q = f.total_q();
  pp.window = c.spec.window;
  pp.q_heads = f.q_heads();
  pp.scale = scale;
  pp.q = q_ptr;
  pp.q_row_stride = c.fused_qkv ? int64_t(fused_row) : 0;
  pp.out = out.p;
  pp.num_splits = c.num_splits;
  pp.error_flag = flag.as<int32_t>();
  const size_t ws_bytes = paged_attention_workspace_bytes(pp);
  Dev ws(ws_bytes);
  CUDA_CHECK(cudaMemset(ws.p, 0xff, ws.n));  // poison the partials too
  pp.workspace = ws.p;
  pp.workspace_bytes = ws_bytes;
  const Status st = paged_attention(pp, nullptr);
  ASSERT_TRUE(st.ok()) << st.error;
  CUDA_CHECK(cudaDeviceSynchronize());

  EXPECT_EQ(download<int32_t>(flag, 1)[0], 0) << "a kernel met a released block";
  // The append is a copy: bit-exact.
  EXPECT_EQ(download<uint16_t>(*k_pool, ref_cache.k().size()), to_bits(ref_cache.k(), dt));
  EXPECT_EQ(download<uint16_t>(*v_pool, ref_cache.v().size()), to_bits(ref_cache.v(), dt));
  const std::vector<float> got = from_bits(download<uint16_t>(out, f.q.size()), dt);
  EXPECT_EQ(count_nan(got), 0u) << "NaN (or an unwritten, poisoned element) in the output";
  const double err = rel_l2(got, ref_out);
  EXPECT_LT(err, tolerance(dt)) << c.name << " splits used " << paged_attention_splits(pp);
  // One wrong row (a token or head mapped to the wrong keys) hides in the whole-output L2.
  const double row_err = max_row_rel_err(got, ref_out, size_t(c.spec.head_dim));
  EXPECT_LT(row_err, 2 * tolerance(dt))
      << c.name << ": worst row; splits used " << paged_attention_splits(pp);
}

class PagedAttentionGpu : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(PagedAttentionGpu, MatchesReference) {
  REQUIRE_GPU();
  check_frame(GetParam());
}

// Fresh random inputs each run: the same shape twice with different seeds.
TEST_P(PagedAttentionGpu, MatchesReferenceOnAnotherDraw) {
  REQUIRE_GPU();
  AttentionCase c = GetParam();
  c.spec.seed += 0x5eed;
  check_frame(c);
}

INSTANTIATE_TEST_SUITE_P(Grid, PagedAttentionGpu, ::testing::ValuesIn(attention_grid()),
                         [](const auto& info) { return info.param.name; });

// Launcher validation needs no device.
TEST(PagedAttentionLauncher, RejectsUnsupportedShapes) {
  PagedAttentionParams p;
  int dummy = 0;
  p.kv = {&dummy, &dummy, 1, 16, 2, 96};
  p.q = &dummy;
  p.out = &dummy;
  p.q_heads = 4;
  EXPECT_NE(paged_attention(p, nullptr).error.find("head_dim"), std::string::npos);
  p.kv.head_dim = 128;
  p.q_heads = 3;
  EXPECT_NE(paged_attention(p, nullptr).error.find("multiple"), std::string::npos);
}

TEST(PagedAttentionGpuErrors, FlagsAReleasedVisibleBlock) {
  REQUIRE_GPU();
  FrameSpec spec;
  spec.window = {};
  spec.sessions = {{40, 1}};
  Frame f = make_frame(spec);
  f.tables[1] = -1;  // positions 16..31 are visible to an unbounded query
  auto k_pool = upload(to_bits(f.cache_before.k(), spec.dtype));
  auto q = upload(to_bits(f.q, spec.dtype));
  auto q_start = upload(f.q_start);
  auto seq_lens = upload(f.seq_lens);
  auto tables = upload(f.tables);
  Dev out(f.q.size() * 2), flag(4);
  CUDA_CHECK(cudaMemset(flag.p, 0, 4));
  PagedAttentionParams p;
  const auto view = f.cache_before.view();
  p.kv = {k_pool->p, k_pool->p, view.num_blocks, 16, view.kv_heads, view.head_dim};
  p.batch = f.batch();
  p.batch.q_start = q_start->as<int32_t>();
  p.batch.seq_lens = seq_lens->as<int32_t>();
  p.batch.block_tables = tables->as<int32_t>();
  p.total_q = 1;
  p.q_heads = f.q_heads();
  p.scale = 0.1f;
  p.q = q->p;
  p.out = out.p;
  p.num_splits = 1;
  p.error_flag = flag.as<int32_t>();
  ASSERT_TRUE(paged_attention(p, nullptr).ok());
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(download<int32_t>(flag, 1)[0], 1);
}

std::vector<float> random_rounded(size_t n, uint64_t seed, Dtype dt) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = round_to(nd(rng), dt);
  return v;
}

struct GemmCase {
  int32_t m, n, k;
  Dtype dt;
};
class LinearGpu : public ::testing::TestWithParam<GemmCase> {};

TEST_P(LinearGpu, MatchesReference) {
  REQUIRE_GPU();
  const auto [m, n, k, dt] = GetParam();
  const auto x = random_rounded(size_t(m) * k, 11 + m, dt),
             w = random_rounded(size_t(n) * k, 12 + n, dt);
  std::vector<float> ref(size_t(m) * n);
  reference::linear_ref(x, w, m, n, k, ref);
  auto dx = upload(to_bits(x, dt)), dw = upload(to_bits(w, dt));
  Dev y(ref.size() * 2);
  CUDA_CHECK(cudaMemset(y.p, 0xff, y.n));
  cublasHandle_t h;
  CUBLAS_CHECK(cublasCreate(&h));
  const Status st = linear(h, {dt, dx->p, dw->p, y.p, m, n, k}, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  cublasDestroy(h);
  ASSERT_TRUE(st.ok()) << st.error;
  const auto got = from_bits(download<uint16_t>(y, ref.size()), dt);
  EXPECT_EQ(count_nan(got), 0u);
  EXPECT_LT(rel_l2(got, ref), tolerance(dt));
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearGpu,
                         ::testing::Values(GemmCase{1, 64, 64, Dtype::kBF16},
                                           GemmCase{5, 48, 64, Dtype::kBF16},
                                           GemmCase{33, 130, 72, Dtype::kBF16},
                                           GemmCase{64, 512, 256, Dtype::kF16},
                                           GemmCase{7, 4608, 512, Dtype::kBF16}));

TEST(SiluMulGpu, MatchesReference) {
  REQUIRE_GPU();
  const int32_t m = 9, f = 300;
  const Dtype dt = Dtype::kBF16;
  const auto gu = random_rounded(size_t(m) * 2 * f, 3, dt);
  std::vector<float> ref(size_t(m) * f);
  reference::silu_mul_ref(gu, m, f, ref);
  auto dgu = upload(to_bits(gu, dt));
  Dev out(ref.size() * 2);
  CUDA_CHECK(cudaMemset(out.p, 0xff, out.n));
  ASSERT_TRUE(silu_mul(dt, dgu->p, out.p, m, f, nullptr).ok());
  const auto got = from_bits(download<uint16_t>(out, ref.size()), dt);
  EXPECT_EQ(count_nan(got), 0u);
  EXPECT_LT(rel_l2(got, ref), tolerance(dt));
}

// The harness reads exactly the keys the frame sees: S + W + q per windowed session once the
// context is long, the whole context unbounded.
TEST(LayerStepGpu, CountsAttentionBytesAndRuns) {
  REQUIRE_GPU();
  ModelShape small{"small", 2, 256, 4, 2, 64, 512};
  BatchComposition b;
  b.q_lens = {1, 10};
  b.ctx_lens = {1000, 20};
  b.window = {100, 4};
  LayerStepOptions o;
  o.layers = 2;
  LayerStep step(small, b, o);
  // Session 0: query 1000 sees 4 sinks + [900, 1000] = 105 keys. Session 1: 30 keys, all visible.
  const int64_t per_key = 2 * 2 * 64 * 2;  // K and V, 2 KV heads, head_dim 64, 2 bytes
  EXPECT_EQ(step.attention_kv_bytes(), (105 + 30) * per_key);
  EXPECT_EQ(step.total_q(), 11);
  const Status st = step.run(nullptr);
  ASSERT_TRUE(st.ok()) << st.error;
  CUDA_CHECK(cudaDeviceSynchronize());

  ModelShape moe{"moe", 1, 256, 4, 2, 64, 96, 16, 4};
  LayerStep moe_step(moe, b, o);
  ASSERT_TRUE(moe_step.run(nullptr).ok());
  CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace metronome::kernels
