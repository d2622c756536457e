// What `metronome quality` measures: for a text and a list of KV policies (unbounded, window only,
// sinks + window), the per-token negative log-likelihood of the text under each policy (all
// policies stepped together, `chunk` tokens per step, as a streaming engine would ingest frames),
// its perplexity overall, from a given token on and per bucket of tokens; and one free-running
// generation per policy from the same prompt and seed, scored by the unbounded model (perplexity)
// and by the share of ASCII letters and spaces in its text.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/kv_window.h"
#include "quality/window_attention.h"

namespace metronome::quality {

class LlamaModel;
class BpeTokenizer;

struct KvPolicy {
  std::string name;  // "full", "w256", "s4w256", "r1500"
  kv::Window window;
  // > 0: the KV is cleared every `reset` tokens and positions start again from 0 (the simulator's
  // kv_policy periodic_reset, in tokens): the model forgets everything before each reset. Scored
  // only (no generation).
  int64_t reset = 0;
};

// "full" | "wW" | "sSwW" (e.g. "s4w256") | "rR" (a reset every R tokens); ConfigError naming the
// option otherwise.
KvPolicy parse_policy(const std::string& spec, const std::string& option);
std::string policy_name(kv::Window w);

struct QualityOptions {
  int64_t tokens = 4096;  // N: tokens of the text scored
  int64_t chunk = 64;     // tokens per step
  int64_t bucket = 64;    // tokens per perplexity bucket
  int64_t from = 256;     // perplexity also reported over tokens [from, N)
  PositionMode positions = PositionMode::kCache;
  std::vector<KvPolicy> policies;  // the main comparison (perplexity + generation)
  std::vector<KvPolicy> grid;      // extra policies, perplexity only (W x S grid)
  int64_t prompt_tokens = 64;      // generation prompt: the text's first tokens
  int64_t generate_tokens = 512;   // free-running tokens per policy (0: none)
  double temperature = 0.8;        // 0: greedy
  uint64_t seed = 1;
  int threads = 2;
  // Windowed policies reuse the unbounded policy's steps before their window first drops a key
  // (the same bytes; false steps each from the first token, for the test that checks this).
  bool share_prefix = true;
  bool progress = false;  // model steps on stderr (base/progress.h)
};

struct PerplexityResult {
  KvPolicy policy;
  std::vector<double> nll;         // [N - 1]: nll[t - 1] = -log p(token t | tokens before t)
  double ppl = 0;                  // exp(mean nll) over tokens 1..N-1
  double ppl_from = 0;             // over tokens [from, N); 0 when that range is empty
  std::vector<double> bucket_ppl;  // bucket b: tokens [b * bucket, (b + 1) * bucket) (token 0
                                   // has no prediction)
};

struct GenerationResult {
  KvPolicy policy;
  std::vector<int32_t> tokens;  // generated, after the prompt
  std::string text;
  double ppl_full = 0;      // perplexity of the generated tokens under the unbounded model
  double letter_share = 0;  // share of bytes that are ASCII letters or spaces
};

struct QualityResult {
  std::vector<PerplexityResult> perplexity;  // policies, then grid
  std::vector<GenerationResult> generation;  // one per policy
  double text_letter_share = 0;              // the same share for the scored text itself
  double seconds_perplexity = 0, seconds_generation = 0;
};

// Scores `tokens` (the first N of the text) under each policy, sequences stepped together. Under a
// reset every R tokens, token t's prediction is made by the last query before it, which sees the
// tokens since the reset before t - 1: the text is scored as pieces [jR, (j + 1)R], each from
// position 0 with full attention, piece j giving tokens jR + 1 .. (j + 1)R.
std::vector<PerplexityResult> score_text(const LlamaModel& model,
                                         const std::vector<int32_t>& tokens,
                                         const std::vector<KvPolicy>& policies,
                                         const QualityOptions& o);

QualityResult run_quality(const LlamaModel& model, const BpeTokenizer& tok,
                          const std::vector<int32_t>& text_tokens, const QualityOptions& o);

// Share of bytes of s that are ASCII letters or spaces (1 for an empty string).
double letter_space_share(const std::string& s);

// JSON of a result (no timings: the same inputs give the same bytes).
nlohmann::json quality_json(const QualityResult& r, const QualityOptions& o);

}  // namespace metronome::quality
