// Bring your own model: HuggingFace config.json files as published (tests/sim/hf_configs/, values
// copied from each checkpoint's config.json) give the parameter counts their model cards state
// and the pool sizes worked out by hand from the sizing rule in sim/pool/pool_sizing.h.
#include "sim/config/hf_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/config_error.h"
#include "sim/config/scenario.h"
#include "sim/pool/pool_sizing.h"

namespace metronome {
namespace {

std::string config(const std::string& name) {
  return "hf:" + std::string(METRONOME_SOURCE_DIR) + "/tests/sim/hf_configs/" + name +
         "/config.json";
}

Scenario load(const std::string& name, std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {"model=" + config(name)};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_scenario("", sets);  // the default scenario: H200, utilization 0.9, 2e9 B reserve
}

// The default scenario's sizing rule with the H200's device-reported 143,771 MiB:
//   blocks = floor((0.9 x 143771 x 2^20 - weights - 2e9) / (16 x KV bytes per token)).
int64_t hand_blocks(double weight_bytes, int64_t kv_bytes_per_token) {
  return static_cast<int64_t>(std::floor((0.9 * 143771.0 * 1048576 - weight_bytes - 2e9) /
                                         static_cast<double>(16 * kv_bytes_per_token)));
}

struct Expected {
  const char* name;
  double params_published;  // from the model card
  double tolerance;         // relative
  int64_t kv_bytes_per_token;
  bool moe;
};

class HfConfig : public ::testing::TestWithParam<Expected> {};

TEST_P(HfConfig, MatchesPublishedParametersAndHandSizedPool) {
  const Expected e = GetParam();
  const Scenario s = load(e.name);
  EXPECT_EQ(s.model.name, e.name);
  EXPECT_NEAR(s.model.total_params() / e.params_published, 1.0, e.tolerance);
  EXPECT_EQ(s.model.kv_bytes_per_token(), e.kv_bytes_per_token);
  EXPECT_DOUBLE_EQ(s.model.weight_bytes, 2 * s.model.total_params());  // bfloat16
  EXPECT_EQ(s.model.moe(), e.moe);
  const PoolSizing p = size_pool(s);
  EXPECT_EQ(p.num_blocks, hand_blocks(s.model.weight_bytes, e.kv_bytes_per_token));
  EXPECT_FALSE(s.model.notes.empty());  // what was derived is said
  // The resolved scenario keeps what was derived, and reads back to the same pool.
  const Scenario again = parse_scenario(to_json(s), "round trip");
  EXPECT_EQ(to_json(again), to_json(s));
}

// KV bytes per token = 2 x layers x kv_heads x head_dim x 2 bytes.
INSTANTIATE_TEST_SUITE_P(
    Published, HfConfig,
    ::testing::Values(Expected{"llama-3.1-8b", 8.03e9, 0.001, 2 * 32 * 8 * 128 * 2, false},
                      Expected{"qwen2.5-14b", 14.77e9, 0.001, 2 * 48 * 8 * 128 * 2, false},
                      Expected{"mixtral-8x7b", 46.7e9, 0.001, 2 * 32 * 8 * 128 * 2, true},
                      Expected{"qwen1.5-moe-a2.7b", 14.3e9, 0.005, 2 * 24 * 16 * 128 * 2, true},
                      Expected{"mistral-7b-v0.1", 7.24e9, 0.001, 2 * 32 * 8 * 128 * 2, false}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

// Exact counts, summed by hand from the shapes.
TEST(HfConfigShapes, ExactParameterCounts) {
  // Llama-3.1-8B: 2 x 128256 x 4096 + 32 x (4096 x 128 x 80 + 3 x 4096 x 14336 + 2 x 4096) + 4096
  EXPECT_EQ(load("llama-3.1-8b").model.total_params(), 8'030'261'248.0);
  // Qwen2.5-14B: + q, k, v bias 40 x 128 + 2 x 8 x 128 per layer
  EXPECT_EQ(load("qwen2.5-14b").model.total_params(), 14'770'033'664.0);
  EXPECT_EQ(load("qwen2.5-14b").model.attention_bias, "qkv");
  // Mixtral-8x7B: 8 experts of 3 x 4096 x 14336 and a 4096 x 8 router per layer, no dense MLP
  EXPECT_EQ(load("mixtral-8x7b").model.total_params(), 46'702'792'704.0);
  EXPECT_EQ(load("mixtral-8x7b").model.ffn_size, 0);
  EXPECT_EQ(load("mixtral-8x7b").model.experts_active, 2);
  // Qwen1.5-MoE: the shared expert is a dense MLP of 5632 beside 60 routed experts of 1408
  const ModelConfig q = load("qwen1.5-moe-a2.7b").model;
  EXPECT_EQ(q.ffn_size, 5632);
  EXPECT_EQ(q.expert_ffn_size, 1408);
  EXPECT_EQ(q.experts, 60);
  EXPECT_EQ(q.experts_active, 4);
  EXPECT_EQ(load("mistral-7b-v0.1").model.total_params(), 7'241'732'096.0);
}

TEST(HfConfigShapes, SlidingWindowIsReportedNotApplied) {
  const Scenario s = load("mistral-7b-v0.1");
  EXPECT_EQ(s.kv_policy.type(), "unbounded");
  bool said = false;
  for (const auto& n : s.model.notes) said = said || n.find("sliding_window 4096 on all 32") == 0;
  EXPECT_TRUE(said);
  // Applied by hand as the note says, the pool bounds each session.
  const Scenario w =
      load("mistral-7b-v0.1", {"kv_policy.type=windowed", "kv_policy.window_tokens=4096"});
  EXPECT_GT(max_blocks_per_session(w), 4096 / 16);
}

TEST(HfConfigShapes, OverridesAfterTheSwapWhateverTheirOrder) {
  // fp8 KV given before the swap used to vanish with the replaced description.
  const Scenario before =
      load_scenario("", {"model.kv_bytes_per_element=1", "model=" + config("llama-3.1-8b")});
  const Scenario after =
      load_scenario("", {"model=" + config("llama-3.1-8b"), "model.kv_bytes_per_element=1"});
  EXPECT_EQ(before.model.kv_bytes_per_element, 1);
  EXPECT_EQ(size_pool(before).num_blocks, size_pool(after).num_blocks);
  EXPECT_EQ(size_pool(before).num_blocks, hand_blocks(2 * 8'030'261'248.0, 2 * 32 * 8 * 128));
  // The name and comment follow the swap.
  EXPECT_EQ(before.name, "default: llama-3.1-8b-h200-300-unbounded");
  EXPECT_NE(before.comment.find("moshi replaced by llama-3.1-8b"), std::string::npos);
  EXPECT_EQ(before.comment.find("Moshi callers"), std::string::npos);
  const Scenario gpu = load_scenario("", {"gpu=h100"});
  EXPECT_EQ(gpu.name, "default: moshi-h100-300-unbounded");
}

TEST(HfConfigShapes, BadConfigsNameTheFileAndField) {
  const auto dir = std::filesystem::temp_directory_path() / "metronome_hf_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string no_layers =
      write("no_layers.json", R"({"hidden_size": 64, "num_attention_heads": 4,
    "intermediate_size": 128, "vocab_size": 100})");
  try {
    load_scenario("", {"model=hf:" + no_layers});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(no_layers + ": num_hidden_layers: expected"),
              std::string::npos)
        << e.what();
  }
  const std::string quant = write("quant.json", R"({"num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
    "quantization_config": {"quant_method": "awq"}})");
  EXPECT_THROW(load_scenario("", {"model=hf:" + quant}), ConfigError);
  // A metronome model file given by path: its bad field is reported against that file.
  const std::string bad =
      write("bad_model.json", R"({"layers": -1, "hidden_size": 64, "attention_heads": 4,
    "kv_heads": 4, "head_dim": 16, "weight_bytes": 1e6})");
  try {
    load_scenario("", {"model=" + bad});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad + ": layers: expected", 0), 0u) << e.what();
    EXPECT_EQ(std::string(e.what()).find("default.json"), std::string::npos) << e.what();
  }
}

// Qwen2.5-Omni-7B's config.json keeps its language model under thinker_config.text_config (as
// published); the audio and vision encoders, the talker and the vocoder beside it are trimmed to a
// few fields in the test copy, since only their presence is read.
TEST(HfConfigShapes, OmniCheckpointReadsTheThinkersLanguageModelAndNamesTheRest) {
  const Scenario s = load("qwen2.5-omni-7b");
  EXPECT_EQ(s.model.layers, 28);
  EXPECT_EQ(s.model.kv_heads, 4);
  EXPECT_EQ(s.model.kv_bytes_per_token(), 2 * 28 * 4 * 128 * 2);
  EXPECT_NEAR(s.model.total_params() / 7.62e9, 1.0, 0.005);  // Qwen2.5-7B's language model
  EXPECT_DOUBLE_EQ(s.model.weight_bytes, 2 * s.model.total_params());
  std::string warned;
  for (const auto& w : s.warnings) warned += w + "\n";
  for (const char* part : {"thinker_config.audio_config", "thinker_config.vision_config",
                           "talker_config", "token2wav_config"}) {
    EXPECT_NE(warned.find(part), std::string::npos) << part << " not named in: " << warned;
  }
  EXPECT_EQ(warned.find("thinker_config.text_config"), std::string::npos) << warned;
}

TEST(HfConfigShapes, ACheckpointsIndexGivesTheWeightsOnTheDevice) {
  const auto dir = std::filesystem::temp_directory_path() / "metronome_hf_omni_index";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(
      std::string(METRONOME_SOURCE_DIR) + "/tests/sim/hf_configs/qwen2.5-omni-7b/config.json",
      dir / "config.json", std::filesystem::copy_options::overwrite_existing);
  const std::string index = (dir / "model.safetensors.index.json").string();
  std::ofstream(index) << R"({"metadata": {"total_size": 21400000000}, "weight_map": {}})";
  const Scenario s = load_scenario("", {"model=hf:" + (dir / "config.json").string()});
  EXPECT_DOUBLE_EQ(s.model.weight_bytes, 21.4e9);
  for (const auto& w : s.warnings) EXPECT_EQ(w.find("not counted"), std::string::npos) << w;
  EXPECT_EQ(size_pool(s).num_blocks, hand_blocks(21.4e9, s.model.kv_bytes_per_token()));
  // Without its index the pool is larger by the uncounted parts' bytes.
  const Scenario lm_only = load("qwen2.5-omni-7b");
  EXPECT_GT(size_pool(lm_only).num_blocks, size_pool(s).num_blocks);

  std::ofstream(index) << R"({"weight_map": {}})";
  try {
    load_scenario("", {"model=hf:" + (dir / "config.json").string()});
    FAIL() << "an index without metadata.total_size was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(index + ": metadata.total_size: expected"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace metronome
