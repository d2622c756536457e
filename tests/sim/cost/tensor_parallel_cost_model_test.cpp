#include "sim/cost/tensor_parallel_cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/config_error.h"
#include "sim/config/scenario.h"
#include "sim/cost/roofline_cost_model.h"
#include "sim/pool/pool_sizing.h"
#include "tests/expect_error.h"

namespace metronome {
namespace {

Scenario llama70b(int k, std::vector<std::string> more = {}) {
  std::vector<std::string> sets = {"model=llama-3-70b", "gpu=h200", "cost_model.type=roofline",
                                   "engine.tensor_parallel=" + std::to_string(k)};
  sets.insert(sets.end(), more.begin(), more.end());
  return load_scenario("", sets);
}

PassShape decode(int64_t sessions, int64_t cached) {
  PassShape p;
  p.sessions = sessions;
  p.query_tokens = sessions;
  p.kv_read_tokens = sessions * cached;
  p.qk_pairs = static_cast<double>(sessions * (cached + 1));
  return p;
}

}  // namespace

TEST(TensorParallel, SliceDividesHeadsFfnVocabAndWeights) {
  const Scenario s = llama70b(4);
  const ModelConfig m = tensor_parallel_slice(s.model, 4);
  EXPECT_EQ(m.name, "llama-3-70b/tp4");
  EXPECT_EQ(m.attention_heads, 16);
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.ffn_size, 7168);
  EXPECT_EQ(m.vocab_size, 32064);
  EXPECT_EQ(m.hidden_size, 8192);
  EXPECT_EQ(m.layers, 80);
  EXPECT_DOUBLE_EQ(m.weight_bytes, 141.1e9 / 4);
  // Fewer KV heads than GPUs: each GPU keeps a copy of one.
  EXPECT_EQ(tensor_parallel_slice(s.model, 8).kv_heads, 1);
  ModelConfig two = s.model;
  two.kv_heads = 2;
  EXPECT_EQ(tensor_parallel_slice(two, 8).kv_heads, 1);
}

// t_pass = the slice's roofline + 2 x layers x (latency + 2 (k-1)/k x tokens x hidden x 2 B / bw),
// from the H200 file's 450e9 B/s and 8 us, for decode batches of several sizes.
TEST(TensorParallel, PassIsTheSliceRooflinePlusTwoAllReducesPerLayer) {
  for (int k : {2, 4, 8}) {
    const Scenario s = llama70b(k);
    const auto cost = make_cost_model(s);
    const RooflineCostModel slice(tensor_parallel_slice(s.model, k), s.gpu,
                                  s.cost_model.step_overhead_s);
    for (int64_t n : {1, 16, 256}) {
      const PassShape p = decode(n, 2000);
      const double all_reduce =
          8e-6 + 2.0 * (k - 1) / k * static_cast<double>(n) * 8192 * 2 / 4.5e11;
      EXPECT_NEAR(cost->pass_seconds(p), slice.pass_seconds(p) + 2 * 80 * all_reduce, 1e-12)
          << "k " << k << ", " << n << " sessions";
    }
    EXPECT_NE(cost->label().find("tensor parallel " + std::to_string(k)), std::string::npos);
    EXPECT_NE(cost->label().find("450 GB/s"), std::string::npos) << cost->label();
  }
  // More GPUs: a smaller slice per GPU (weights read over k GPUs in parallel), so a decode step
  // of a few sessions is faster at TP 8 than at TP 2 despite the all-reduces.
  const PassShape p = decode(8, 1000);
  EXPECT_LT(make_cost_model(llama70b(8))->pass_seconds(p),
            make_cost_model(llama70b(2))->pass_seconds(p));
}

// The one sizing rule over k GPUs: floor((k (0.9 x memory - activations) - weights) / block).
TEST(TensorParallel, PoolIsKGpusLessTheWeights) {
  const double mem = 150754820096.0;  // the H200 file's memory_bytes
  const int64_t block = 16 * 2 * 80 * 8 * 128 * 2;
  for (int k : {2, 4, 8}) {
    const PoolSizing p = size_pool(llama70b(k));
    EXPECT_EQ(p.block_bytes, block);
    const double usable = k * 0.9 * mem - 141.1e9 - k * 2e9;
    EXPECT_DOUBLE_EQ(p.usable_bytes, usable);
    EXPECT_EQ(p.num_blocks, static_cast<int64_t>(std::floor(usable / block))) << k;
  }
  // TP 1: the one-GPU rule, unchanged (and the 70B's weights leave it no pool on one H200).
  const Scenario moshi = load_scenario("");
  EXPECT_EQ(size_pool(moshi).num_blocks,
            static_cast<int64_t>((0.9 * mem - 15.4e9 - 2e9) / (16.0 * 512 * 1024)));
  expect_error([] { size_pool(llama70b(1)); }, {"the KV pool holds no block"});
  // KV heads replicated: 2 KV heads over 8 GPUs store 8 copies' worth per token.
  const PoolSizing r = size_pool(llama70b(8, {"model.kv_heads=2", "model.attention_heads=64"}));
  EXPECT_EQ(r.kv_bytes_per_token, 2 * 80 * 8 * 128 * 2);
}

TEST(TensorParallel, BadDegreesAndModelsAreRefused) {
  expect_error([] { llama70b(3); }, {"engine.tensor_parallel", "one of 1, 2, 4, 8", "got 3"});
  expect_error([] { llama70b(16); }, {"engine.tensor_parallel"});
  expect_error(
      [] {
        llama70b(8, {"model.attention_heads=36", "model.kv_heads=4"});
      },
      {"engine.tensor_parallel", "divides model.attention_heads (36)", "got 8"});
  expect_error(
      [] {
        llama70b(4, {"model.kv_heads=6", "model.attention_heads=48"});
      },
      {"engine.tensor_parallel", "model.kv_heads (6)", "got 4"});
  expect_error(
      [] {
        llama70b(8, {"model.kv_heads=3", "model.attention_heads=48"});
      },
      {"engine.tensor_parallel", "model.kv_heads (3)", "a multiple of it"});
  expect_error([] { llama70b(4, {"model.ffn_size=28670"}); },
               {"engine.tensor_parallel", "model.ffn_size (28670)"});
  expect_error(
      [] {
        load_scenario("", {"model=llama-3-70b", "engine.tensor_parallel=4",
                           "gpu={\"name\":\"x\",\"memory_bytes\":1.5e11,"
                           "\"memory_bandwidth_bytes_per_s\":4.8e12,\"bf16_flops\":9.89e14}"});
      },
      {"gpu.interconnect_bandwidth_bytes_per_s", "engine.tensor_parallel 4", "GPU x"});
}

TEST(TensorParallel, ResolvedScenarioRoundTripsAndTpOneWritesNothingNew) {
  const Scenario s = llama70b(4);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["engine"]["tensor_parallel"], 4);
  EXPECT_EQ(j["gpu"]["interconnect_bandwidth_bytes_per_s"], 4.5e11);
  const Scenario again = parse_scenario(j, "resolved");
  EXPECT_EQ(again.engine.tensor_parallel, 4);
  EXPECT_EQ(size_pool(again).num_blocks, size_pool(s).num_blocks);
  const nlohmann::json one = to_json(load_scenario(""));
  EXPECT_FALSE(one["engine"].contains("tensor_parallel"));
  EXPECT_FALSE(one["gpu"].contains("interconnect_bandwidth_bytes_per_s"));
}

}  // namespace metronome
