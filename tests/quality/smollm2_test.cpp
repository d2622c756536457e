// Checks of the forward pass with the real model (SmolLM2-135M-Instruct) and text (Pride and
// Prejudice). They skip with a message when scripts/fetch_quality_assets.sh has not been run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "base/config_error.h"
#include "quality/bpe_tokenizer.h"
#include "quality/gguf_file.h"
#include "quality/llama_model.h"
#include "quality/quality_run.h"
#include "quality/workers.h"

namespace metronome::quality {
namespace {

std::string asset(const char* name) {
  const char* dir = std::getenv("METRONOME_QUALITY_DIR");
  return std::string(dir ? dir : METRONOME_QUALITY_DIR) + "/" + name;
}

struct Assets {
  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<BpeTokenizer> tok;
  std::string text;
};

// Loaded once for the whole suite (about 0.5 GB of float weights).
const Assets* assets() {
  static const std::unique_ptr<Assets> a = []() -> std::unique_ptr<Assets> {
    const std::string m = asset("smollm2-135m-instruct-q4_1.gguf"), t = asset("prideprejudice.txt");
    if (!std::filesystem::exists(m) || !std::filesystem::exists(t)) return nullptr;
    auto out = std::make_unique<Assets>();
    out->gguf = std::make_unique<GgufFile>(m);
    out->model = std::make_unique<LlamaModel>(*out->gguf);
    out->tok = std::make_unique<BpeTokenizer>(*out->gguf);
    std::ifstream in(t);
    std::ostringstream s;
    s << in.rdbuf();
    out->text = s.str();
    return out;
  }();
  return a.get();
}

#define REQUIRE_ASSETS()                                                                    \
  if (!assets()) {                                                                          \
    GTEST_SKIP() << "model or text missing under " << asset("")                             \
                 << ": run scripts/fetch_quality_assets.sh (or set METRONOME_QUALITY_DIR)"; \
  }

TEST(SmolLM2, ConfigComesFromTheGgufMetadata) {
  REQUIRE_ASSETS();
  const LlamaConfig& c = assets()->model->config();
  EXPECT_EQ(c.layers, 30);
  EXPECT_EQ(c.hidden, 576);
  EXPECT_EQ(c.ffn, 1536);
  EXPECT_EQ(c.q_heads, 9);
  EXPECT_EQ(c.kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.vocab, 49152);
  EXPECT_EQ(c.context, 8192);
  EXPECT_DOUBLE_EQ(c.rope_base, 100000.0);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(assets()->gguf->tensor("blk.0.attn_q.weight").type, 3u);  // Q4_1
  EXPECT_EQ(assets()->gguf->tensor("token_embd.weight").type, 8u);    // Q8_0
}

TEST(SmolLM2, TokenizerRoundTripsTheNovel) {
  REQUIRE_ASSETS();
  const BpeTokenizer& t = *assets()->tok;
  const std::string head = assets()->text.substr(0, 20000);
  const auto ids = t.encode(head);
  EXPECT_EQ(t.decode(ids), head);
  // English prose: about 4 characters per token with a 49k vocabulary.
  const double chars_per_token = static_cast<double>(head.size()) / static_cast<double>(ids.size());
  EXPECT_GT(chars_per_token, 3.5);
  EXPECT_LT(chars_per_token, 5.0);
  // Common words are single tokens with their leading space.
  for (const char* w : {" the", " Elizabeth", " said", " daughters"}) {
    EXPECT_EQ(t.encode(w).size(), 1u) << w;
  }
  EXPECT_EQ(t.encode(" 1813").size(), 5u);  // " " and one token per digit
}

// Greedy next tokens of a factual prompt.
std::string greedy(const std::string& prompt, int n) {
  const Assets& a = *assets();
  std::vector<int32_t> ids = a.tok->encode(prompt);
  KvBatch kv(a.model->config(), 8, 16);
  kv.add(kv::Window{}, PositionMode::kCache);
  std::vector<int32_t> step = ids, out;
  for (int i = 0; i < n; ++i) {
    const auto logits = a.model->step(kv, {step});
    const float* row = logits.data() + (step.size() - 1) * a.model->config().vocab;
    int32_t best = 0;
    for (int32_t v = 1; v < a.model->config().vocab; ++v) {
      if (row[v] > row[best]) best = v;
    }
    out.push_back(best);
    step = {best};
  }
  return a.tok->decode(out);
}

TEST(SmolLM2, GreedyCompletionOfAFactualPrompt) {
  REQUIRE_ASSETS();
  EXPECT_EQ(greedy("The capital of France is", 1), " Paris");
  EXPECT_EQ(greedy("The largest planet in the solar system is", 1), " Jupiter");
  EXPECT_EQ(greedy("Pride and Prejudice was written by Jane", 1), " Austen");
}

// The same text scored two ways under a small window with sinks: in 64-token steps (matrix
// products over the step, blocks released after each step) and token by token (a streaming decode,
// blocks released after every token). Both must give the same log-probabilities.
void expect_chunked_equals_streaming(PositionMode mode) {
  const Assets& a = *assets();
  const auto all = a.tok->encode(a.text.substr(0, 2000));
  const std::vector<int32_t> ids(all.begin(), all.begin() + 160);
  const kv::Window w{40, 4};
  QualityOptions o;
  o.positions = mode;
  o.threads = 2;
  o.bucket = 64;
  o.from = 41;
  const std::vector<KvPolicy> pol{{"s4w40", w}};
  o.chunk = 64;
  const auto chunked = score_text(*a.model, ids, pol, o);
  o.chunk = 1;
  const auto streamed = score_text(*a.model, ids, pol, o);
  ASSERT_EQ(chunked[0].nll.size(), ids.size() - 1);
  double worst = 0;
  for (size_t i = 0; i < ids.size() - 1; ++i) {
    ASSERT_TRUE(std::isfinite(chunked[0].nll[i]));
    worst = std::max(worst, std::abs(chunked[0].nll[i] - streamed[0].nll[i]));
  }
  EXPECT_LT(worst, 1e-3) << "largest log-prob difference";
  // And the window mattered: the same text with unbounded KV differs beyond the window.
  const auto full = score_text(*a.model, ids, {{"full", kv::Window{}}}, o);
  double diff_inside = 0, diff_beyond = 0;
  for (size_t i = 0; i < ids.size() - 1; ++i) {
    (i + 1 <= 41 ? diff_inside : diff_beyond) += std::abs(full[0].nll[i] - streamed[0].nll[i]);
  }
  EXPECT_LT(diff_inside, 1e-3);  // before the window drops a key, the policies agree
  EXPECT_GT(diff_beyond, 1.0);
}

// A reset every R tokens: token t is predicted by the query before it, which sees the tokens since
// the last reset before t - 1 and nothing else, from position 0. Checked against the full model on
// the piece alone, at the first prediction after a reset (one token of context) and the last
// before the next (R tokens).
TEST(SmolLM2, ResetForgetsEverythingBeforeIt) {
  REQUIRE_ASSETS();
  const Assets& a = *assets();
  const auto all = a.tok->encode(a.text.substr(0, 2000));
  const std::vector<int32_t> ids(all.begin(), all.begin() + 130);
  QualityOptions o;
  o.threads = 2;
  o.chunk = 16;
  const auto reset = score_text(*a.model, ids, {parse_policy("r40", "--policy")}, o);
  const auto full = score_text(*a.model, ids, {parse_policy("full", "--policy")}, o);
  ASSERT_EQ(reset[0].policy.reset, 40);
  ASSERT_EQ(reset[0].nll.size(), ids.size() - 1);
  // Tokens 1..40: the first piece is the text's start, under full attention.
  for (size_t i = 0; i < 40; ++i) EXPECT_NEAR(reset[0].nll[i], full[0].nll[i], 1e-3) << i;
  // Token 41 is predicted from token 40 alone; token 80 from tokens 40..79; token 121 from 120.
  auto alone = [&](size_t from, size_t to) {  // the full model's last prediction on [from, to]
    const std::vector<int32_t> piece(ids.begin() + static_cast<ptrdiff_t>(from),
                                     ids.begin() + static_cast<ptrdiff_t>(to) + 1);
    return score_text(*a.model, piece, {parse_policy("full", "--policy")}, o)[0].nll.back();
  };
  EXPECT_NEAR(reset[0].nll[40], alone(40, 41), 1e-3);
  EXPECT_NEAR(reset[0].nll[79], alone(40, 80), 1e-3);
  EXPECT_NEAR(reset[0].nll[120], alone(120, 121), 1e-3);
  // Forgetting costs: past the first piece the reset predicts worse on the whole.
  double reset_sum = 0, full_sum = 0;
  for (size_t i = 40; i < reset[0].nll.size(); ++i) {
    reset_sum += reset[0].nll[i];
    full_sum += full[0].nll[i];
  }
  EXPECT_GT(reset_sum, full_sum + 5.0);
  EXPECT_THROW(parse_policy("r0", "--policy"), ConfigError);
}

TEST(SmolLM2, ChunkedForwardEqualsTokenByTokenDecodeCachePositions) {
  REQUIRE_ASSETS();
  expect_chunked_equals_streaming(PositionMode::kCache);
}

TEST(SmolLM2, ChunkedForwardEqualsTokenByTokenDecodeOriginalPositions) {
  REQUIRE_ASSETS();
  expect_chunked_equals_streaming(PositionMode::kOriginal);
}

// Determinism: the logits are the same bytes on one thread or three, and a sequence stepped with
// another (one product for both) gives the bytes it gives alone (llama_model.h).
TEST(SmolLM2, SameBytesForAnyThreadCountAndAnyCompany) {
  REQUIRE_ASSETS();
  const Assets& a = *assets();
  const auto all = a.tok->encode(a.text.substr(0, 1000));
  const std::vector<int32_t> ids(all.begin(), all.begin() + 96);
  const std::vector<kv::Window> windows{kv::Window{}, kv::Window{24, 4}};
  // Steps of 32 tokens of each sequence in `seqs`; the logits of every step, concatenated.
  auto run = [&](const std::vector<int>& seqs, int threads) {
    KvBatch kv(a.model->config(), 32, 16);
    for (const int s : seqs) kv.add(windows[static_cast<size_t>(s)], PositionMode::kCache);
    Workers workers(threads);
    std::vector<float> out;
    for (int64_t c0 = 0; c0 < 96; c0 += 32) {
      const std::vector<int32_t> chunk(ids.begin() + c0, ids.begin() + c0 + 32);
      const auto logits =
          a.model->step(kv, std::vector<std::vector<int32_t>>(seqs.size(), chunk), workers);
      out.insert(out.end(), logits.begin(), logits.end());
    }
    return out;
  };
  const auto both1 = run({0, 1}, 1), both3 = run({0, 1}, 3);
  ASSERT_EQ(both1.size(), both3.size());
  EXPECT_EQ(std::memcmp(both1.data(), both3.data(), both1.size() * sizeof(float)), 0);
  const auto full = run({0}, 2), windowed = run({1}, 2);
  const size_t v = static_cast<size_t>(a.model->config().vocab), rows = 32;
  for (size_t step = 0; step < 3; ++step) {
    const float* pair = both1.data() + step * 2 * rows * v;
    EXPECT_EQ(std::memcmp(pair, full.data() + step * rows * v, rows * v * sizeof(float)), 0)
        << "full, step " << step;
    EXPECT_EQ(
        std::memcmp(pair + rows * v, windowed.data() + step * rows * v, rows * v * sizeof(float)),
        0)
        << "windowed, step " << step;
  }
}

// Windowed policies start from the unbounded policy's KV where their window has not yet dropped a
// key (quality_run.cpp): the same bytes as stepping each from its first token.
TEST(SmolLM2, SharedPrefixGivesTheSameBytes) {
  REQUIRE_ASSETS();
  const Assets& a = *assets();
  const auto all = a.tok->encode(a.text.substr(0, 2000));
  const std::vector<int32_t> ids(all.begin(), all.begin() + 200);
  const std::vector<KvPolicy> pol{{"full", kv::Window{}},
                                  {"w40", kv::Window{40, 0}},
                                  {"s4w100", kv::Window{100, 4}},
                                  {"s8w300", kv::Window{300, 8}}};
  QualityOptions o;
  o.chunk = 32;
  o.from = 41;
  o.threads = 2;
  const auto shared = score_text(*a.model, ids, pol, o);
  o.share_prefix = false;
  const auto alone = score_text(*a.model, ids, pol, o);
  for (size_t i = 0; i < pol.size(); ++i) {
    EXPECT_EQ(shared[i].nll, alone[i].nll) << pol[i].name;
    EXPECT_EQ(shared[i].ppl, alone[i].ppl) << pol[i].name;
  }
}

// The window's pool use is bounded: a windowed sequence never holds more than the rule's
// kv::step_blocks, and blocks_needed sizes the pool exactly for it.
TEST(SmolLM2, WindowedSequenceHoldsOnlyItsBlocks) {
  REQUIRE_ASSETS();
  const Assets& a = *assets();
  const auto ids = a.tok->encode(a.text.substr(0, 1500));
  const kv::Window w{32, 4};
  const int32_t need = KvBatch::blocks_needed(w, 200, 16, 16);
  EXPECT_EQ(need, kv::step_blocks(184, 16, w, 16));
  KvBatch kv(a.model->config(), need, 16);
  kv.add(w, PositionMode::kCache);
  for (int64_t c0 = 0; c0 < 200; c0 += 16) {
    a.model->step(kv, {std::vector<int32_t>(ids.begin() + c0, ids.begin() + c0 + 16)});
    EXPECT_EQ(kv.blocks(0).held_blocks(), kv::resident_blocks(c0 + 16, w, 16));
  }
  EXPECT_LT(kv.pool().used_blocks(), kv::ceil_div(200, 16));
}

}  // namespace
}  // namespace metronome::quality
