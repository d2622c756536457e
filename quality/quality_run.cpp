#include "quality/quality_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <regex>
#include <stdexcept>

#include "base/config_error.h"
#include "base/progress.h"
#include "base/rng.h"
#include "base/version.h"
#include "quality/bpe_tokenizer.h"
#include "quality/llama_model.h"
#include "quality/workers.h"

namespace metronome::quality {

namespace {

constexpr int32_t kBlockSize = 16;  // vLLM's default block size

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double mean_ppl(const std::vector<double>& nll, size_t from, size_t to) {
  if (to <= from) return 0;
  double s = 0;
  for (size_t i = from; i < to; ++i) s += nll[i];
  return std::exp(s / static_cast<double>(to - from));
}

// The first step (its first token) in which a window makes a difference: before it every query of
// the step sees every earlier key at its own position (kv::visible_keys(p, w) = p + 1, and the
// cache position of the query is then p too), so a windowed sequence computes exactly what the
// unbounded one does on the same tokens. n (never) for an unbounded window.
int64_t first_windowed_step(kv::Window w, int64_t n, int64_t chunk) {
  if (w.unbounded()) return n;
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    const int64_t last = std::min(n, c0 + chunk) - 1;
    if (kv::visible_keys(last, w) != last + 1) return c0;
  }
  return n;
}

// Negative log-likelihoods of every token after the first of each sequence, the sequences
// stepped together `chunk` tokens a step (a sequence that has ended sits the step out), each
// under its window, as a streaming engine ingests frames: one product per weight matrix and step
// for all of them. Result [i][t - 1] for token t of sequence i; each row's value is the same
// whatever the other sequences or the worker count (llama_model.h).
//
// Shared prefix: a windowed sequence with the same tokens as an unbounded one (every policy of
// score_text) sits out the steps before its window first drops a key; its KV is then copied from
// the unbounded sequence and its log-likelihoods so far are the unbounded ones. Rows do not depend
// on their company, so this gives the same bytes as stepping it from the start (a test checks).
std::vector<std::vector<double>> stream_nll(const LlamaModel& model,
                                            const std::vector<std::vector<int32_t>>& seqs,
                                            const std::vector<kv::Window>& windows,
                                            PositionMode mode, int64_t chunk, Workers& workers,
                                            Progress* progress = nullptr, bool share = true) {
  const LlamaConfig& c = model.config();
  const auto trunk = static_cast<size_t>(
      std::find_if(windows.begin(), windows.end(), [](kv::Window w) { return w.unbounded(); }) -
      windows.begin());
  std::vector<int64_t> own(seqs.size(), 0);  // first step sequence i computes itself
  int32_t blocks = 0;
  int64_t longest = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto n = static_cast<int64_t>(seqs[i].size());
    if (share && trunk < seqs.size() && i != trunk && seqs[i] == seqs[trunk]) {
      own[i] = first_windowed_step(windows[i], n, chunk);
    }
    // The copy holds the prefix's blocks before the window's are released.
    blocks += std::max(KvBatch::blocks_needed(windows[i], n, chunk, kBlockSize),
                       static_cast<int32_t>(kv::ceil_div(own[i], kBlockSize)));
    longest = std::max(longest, n);
  }
  KvBatch kv(c, std::max(blocks, 1), kBlockSize);
  std::vector<std::vector<double>> nll(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    kv.add(windows[i], mode);
    nll[i].assign(seqs[i].empty() ? 0 : seqs[i].size() - 1, 0.0);
  }
  for (int64_t c0 = 0; c0 < longest; c0 += chunk) {
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (own[i] > 0 && own[i] == c0 && c0 < static_cast<int64_t>(seqs[i].size())) {
        kv.copy_from(static_cast<int32_t>(i), static_cast<int32_t>(trunk));
      }
    }
    std::vector<std::vector<int32_t>> step(seqs.size());
    std::vector<std::pair<size_t, int64_t>> row_of;  // logits row -> (sequence, position)
    for (size_t i = 0; i < seqs.size(); ++i) {
      const auto n = static_cast<int64_t>(seqs[i].size());
      if (c0 < own[i]) continue;
      for (int64_t p = c0; p < std::min(n, c0 + chunk); ++p) {
        step[i].push_back(seqs[i][static_cast<size_t>(p)]);
        row_of.emplace_back(i, p);
      }
    }
    const std::vector<float>& logits = model.step(kv, step, workers);
    workers.for_range(static_cast<int64_t>(row_of.size()), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const auto [i, p] = row_of[static_cast<size_t>(r)];
        if (p + 1 >= static_cast<int64_t>(seqs[i].size())) continue;
        const std::span<const float> row(logits.data() + r * c.vocab, static_cast<size_t>(c.vocab));
        nll[i][static_cast<size_t>(p)] = -log_prob(row, seqs[i][static_cast<size_t>(p) + 1]);
      }
    });
    if (progress) progress->add();
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto shared = std::min<size_t>(static_cast<size_t>(own[i]), nll[i].size());
    std::copy_n(nll[trunk].begin(), shared, nll[i].begin());
  }
  return nll;
}

// Next token from a logits row: argmax at temperature 0 (lowest id on ties), else a draw from
// softmax(logits / temperature). Control tokens (end of text, chat markers) are never drawn: the
// generation is free-running by construction.
int32_t next_token(std::span<const float> logits, const BpeTokenizer& tok, double temperature,
                   Rng& rng) {
  int32_t best = -1;
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    if (tok.is_control(i)) continue;
    if (best < 0 || logits[static_cast<size_t>(i)] > logits[static_cast<size_t>(best)]) best = i;
  }
  if (temperature <= 0) return best;
  const double mx = logits[static_cast<size_t>(best)];
  std::vector<double> w(logits.size(), 0.0);
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (tok.is_control(static_cast<int32_t>(i))) continue;
    w[i] = std::exp((double{logits[i]} - mx) / temperature);
    sum += w[i];
  }
  double u = rng.uniform() * sum;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == 0) continue;
    u -= w[i];
    if (u < 0) return static_cast<int32_t>(i);
  }
  return best;
}

}  // namespace

std::string policy_name(kv::Window w) {  // a window's; a reset's is "rR"
  if (w.unbounded()) return "full";
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) of "s" + std::string&&.
  std::string name;
  if (w.sinks > 0) name.append("s").append(std::to_string(w.sinks));
  return name.append("w").append(std::to_string(w.window));
}

KvPolicy parse_policy(const std::string& spec, const std::string& option) {
  if (spec == "full") return {"full", kv::Window{}};
  static const std::regex reset("r([0-9]{1,7})");
  if (std::smatch m; std::regex_match(spec, m, reset) && std::stoll(m[1].str()) >= 1) {
    return {spec, kv::Window{}, std::stoll(m[1].str())};
  }
  static const std::regex re("(?:s([0-9]{1,6}))?w([0-9]{1,7})");
  std::smatch m;
  if (!std::regex_match(spec, m, re)) {
    throw ConfigError(option + ": policy \"" + spec +
                      "\", expected full, wW (window of W tokens), sSwW (S sinks + W window) or "
                      "rR (a reset every R >= 1 tokens), e.g. s4w256");
  }
  kv::Window w;
  w.sinks = m[1].matched ? std::stoll(m[1].str()) : 0;
  w.window = std::stoll(m[2].str());
  return {policy_name(w), w};
}

double letter_space_share(const std::string& s) {
  if (s.empty()) return 1;
  size_t n = 0;
  for (const char ch : s) {
    n += (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == ' ';
  }
  return static_cast<double>(n) / static_cast<double>(s.size());
}

std::vector<PerplexityResult> score_text(const LlamaModel& model,
                                         const std::vector<int32_t>& tokens,
                                         const std::vector<KvPolicy>& policies,
                                         const QualityOptions& o) {
  const auto steps = (static_cast<int64_t>(tokens.size()) + o.chunk - 1) / o.chunk;
  const auto progress =
      o.progress ? stderr_progress("quality perplexity", steps, "steps") : nullptr;
  // The policies' sequences, then the pieces of the resets' (see the header), stepped together.
  std::vector<std::vector<int32_t>> seqs;
  for (const auto& p : policies) seqs.push_back(p.reset > 0 ? std::vector<int32_t>{} : tokens);
  std::vector<kv::Window> windows;
  for (const auto& p : policies) windows.push_back(p.window);
  const auto n_tok = static_cast<int64_t>(tokens.size());
  std::vector<size_t> first_piece(policies.size(), 0);
  for (size_t i = 0; i < policies.size(); ++i) {
    first_piece[i] = seqs.size();
    for (int64_t j0 = 0; policies[i].reset > 0 && j0 + 1 < n_tok; j0 += policies[i].reset) {
      seqs.emplace_back(tokens.begin() + j0,
                        tokens.begin() + std::min(n_tok, j0 + policies[i].reset + 1));
      windows.push_back(kv::Window{});
    }
  }
  Workers workers(o.threads);
  std::vector<std::vector<double>> nll = stream_nll(model, seqs, windows, o.positions, o.chunk,
                                                    workers, progress.get(), o.share_prefix);
  if (progress) progress->finish();
  for (size_t i = 0; i < policies.size(); ++i) {
    if (policies[i].reset == 0) continue;
    nll[i].assign(static_cast<size_t>(std::max<int64_t>(0, n_tok - 1)), 0.0);
    auto at = nll[i].begin();  // token jR + t's nll from piece j's t-th
    for (size_t k = first_piece[i]; at != nll[i].end(); ++k)
      at = std::copy(nll[k].begin(), nll[k].end(), at);
  }
  std::vector<PerplexityResult> out;
  for (size_t i = 0; i < policies.size(); ++i) {
    PerplexityResult r;
    r.policy = policies[i];
    r.nll = nll[i];
    const size_t n = r.nll.size();  // tokens 1..N-1 at indices 0..N-2
    r.ppl = mean_ppl(r.nll, 0, n);
    r.ppl_from = mean_ppl(r.nll, static_cast<size_t>(std::max<int64_t>(o.from, 1) - 1), n);
    for (int64_t b = 0; b * o.bucket < static_cast<int64_t>(n) + 1; ++b) {
      const int64_t first = std::max<int64_t>(b * o.bucket, 1),
                    last = std::min<int64_t>((b + 1) * o.bucket, static_cast<int64_t>(n) + 1);
      r.bucket_ppl.push_back(
          mean_ppl(r.nll, static_cast<size_t>(first - 1), static_cast<size_t>(last - 1)));
    }
    out.push_back(std::move(r));
  }
  return out;
}

QualityResult run_quality(const LlamaModel& model, const BpeTokenizer& tok,
                          const std::vector<int32_t>& text_tokens, const QualityOptions& o) {
  if (static_cast<int64_t>(text_tokens.size()) < o.tokens) {
    throw ConfigError("--tokens: the text has " + std::to_string(text_tokens.size()) +
                      " tokens, fewer than the " + std::to_string(o.tokens) + " asked for");
  }
  QualityResult r;
  const std::vector<int32_t> scored(text_tokens.begin(), text_tokens.begin() + o.tokens);
  r.text_letter_share = letter_space_share(tok.decode(scored));
  // Every policy once: grid entries equal to a main policy are not run twice.
  std::vector<KvPolicy> all = o.policies;
  for (const auto& g : o.grid) {
    if (std::none_of(all.begin(), all.end(), [&](const KvPolicy& p) { return p.name == g.name; })) {
      all.push_back(g);
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  r.perplexity = score_text(model, scored, all, o);
  r.seconds_perplexity = seconds_since(t0);

  // A reset is scored only: generation runs under the windows.
  std::vector<KvPolicy> generated;
  for (const auto& p : o.policies) {
    if (p.reset == 0) generated.push_back(p);
  }
  if (o.generate_tokens > 0 && !generated.empty()) {
    t0 = std::chrono::steady_clock::now();
    const int64_t P = std::min<int64_t>(o.prompt_tokens, o.tokens);
    const std::vector<int32_t> prompt(text_tokens.begin(), text_tokens.begin() + P);
    const LlamaConfig& c = model.config();
    const size_t np = generated.size();
    // The policies decode together, one token each per step: a decode step reads every weight
    // once for all of them (memory-bound), and the fixed grouping keeps the result independent of
    // the thread count.
    int32_t blocks = 0;
    for (const auto& pol : generated) {
      blocks += KvBatch::blocks_needed(pol.window, P + o.generate_tokens, P, kBlockSize);
    }
    KvBatch kv(c, blocks, kBlockSize);
    Workers workers(o.threads);
    std::vector<Rng> rngs;
    for (const auto& pol : generated) {
      kv.add(pol.window, o.positions);
      rngs.emplace_back(o.seed, "generation");  // the same draws for every policy
    }
    std::vector<std::vector<int32_t>> step(np, prompt), gen(np);
    const auto progress =
        o.progress ? stderr_progress("quality generation", o.generate_tokens, "tokens") : nullptr;
    for (int64_t i = 0; i < o.generate_tokens; ++i) {
      const std::vector<float>& logits = model.step(kv, step, workers);
      int64_t row = -1;
      for (size_t s = 0; s < np; ++s) {
        row += static_cast<int64_t>(step[s].size());  // the last row of sequence s
        const std::span<const float> z(logits.data() + row * c.vocab, static_cast<size_t>(c.vocab));
        gen[s].push_back(next_token(z, tok, o.temperature, rngs[s]));
      }
      for (size_t s = 0; s < np; ++s) step[s] = {gen[s].back()};
      if (progress) progress->add();
    }
    if (progress) progress->finish();
    // Each continuation scored by the unbounded model, the prompt as context.
    std::vector<std::vector<int32_t>> texts(np, prompt);
    for (size_t s = 0; s < np; ++s) texts[s].insert(texts[s].end(), gen[s].begin(), gen[s].end());
    const std::vector<std::vector<double>> nll = stream_nll(
        model, texts, std::vector<kv::Window>(np, kv::Window{}), o.positions, o.chunk, workers);
    for (size_t s = 0; s < gen.size(); ++s) {
      GenerationResult g;
      g.policy = generated[s];
      g.tokens = gen[s];
      g.text = tok.decode(gen[s]);
      g.ppl_full = mean_ppl(nll[s], static_cast<size_t>(P - 1), nll[s].size());
      g.letter_share = letter_space_share(g.text);
      r.generation.push_back(std::move(g));
    }
    r.seconds_generation = seconds_since(t0);
  }
  return r;
}

nlohmann::json quality_json(const QualityResult& r, const QualityOptions& o) {
  using nlohmann::json;
  auto window_json = [](const KvPolicy& p) {
    json j{{"name", p.name}};
    if (p.reset > 0) j["reset_tokens"] = p.reset;
    if (p.window.unbounded()) {
      j["window"] = nullptr;
      j["sinks"] = 0;
    } else {
      j["window"] = p.window.window;
      j["sinks"] = p.window.sinks;
    }
    return j;
  };
  json cfg{{"tokens", o.tokens},
           {"chunk", o.chunk},
           {"bucket", o.bucket},
           {"from", o.from},
           {"positions", o.positions == PositionMode::kCache ? "cache" : "original"},
           {"prompt_tokens", o.prompt_tokens},
           {"generate_tokens", o.generate_tokens},
           {"temperature", o.temperature},
           {"seed", o.seed}};
  json ppl = json::array();
  for (const auto& p : r.perplexity) {
    json j = window_json(p.policy);
    j["ppl"] = p.ppl;
    // An empty range [from, N) (from >= N) has no perplexity: null, never 0.
    j["ppl_from"] = p.ppl_from > 0 ? json(p.ppl_from) : json(nullptr);
    json buckets = json::array();
    for (const double b : p.bucket_ppl) buckets.push_back(b > 0 ? json(b) : json(nullptr));
    j["bucket_ppl"] = buckets;
    ppl.push_back(j);
  }
  json gen = json::array();
  for (const auto& g : r.generation) {
    json j = window_json(g.policy);
    j["ppl_full_model"] = g.ppl_full;
    j["letter_space_share"] = g.letter_share;
    j["text"] = g.text;
    j["tokens"] = g.tokens;
    gen.push_back(j);
  }
  return json{{"version", version_string()},
              {"config", cfg},
              {"text_letter_space_share", r.text_letter_share},
              {"perplexity", ppl},
              {"generation", gen}};
}

}  // namespace metronome::quality
