// `metronome quality`: perplexity and free-running generation of a real language model under
// unbounded, window-only and sinks + window KV (quality/quality_run.h).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "app/commands.h"
#include "app/option_checks.h"
#include "base/config_error.h"
#include "base/json_file.h"
#include "base/output_file.h"
#include "quality/bpe_tokenizer.h"
#include "quality/gguf_file.h"
#include "quality/llama_model.h"
#include "quality/quality_run.h"

#ifndef METRONOME_SOURCE_DIR
#define METRONOME_SOURCE_DIR "."
#endif

namespace metronome::cli {

namespace {

// A novel is a few hundred KiB; 64 MiB is far more text than a run can score and stops --text
// /dev/zero or a huge file from eating memory.
constexpr size_t kMaxTextBytes = size_t{64} << 20;

std::string read_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw ConfigError(path +
                      ": cannot open the text (scripts/fetch_quality_assets.sh fetches "
                      "Pride and Prejudice into .cache/quality)");
  }
  return read_text_file(path, "text (--text)", kMaxTextBytes);
}

}  // namespace

Run add_quality(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "quality",
      "Perplexity of a text and free-running generation of a real language model (GGUF, Llama "
      "architecture, run on the CPU over the paged KV cache) with unbounded KV, a window only, "
      "and sinks + window: what bounding the KV costs in quality. Fetch the default model "
      "(SmolLM2-135M-Instruct) and text (Pride and Prejudice) with "
      "scripts/fetch_quality_assets.sh.");
  struct Options {
    std::string model =
        std::string(METRONOME_SOURCE_DIR) + "/.cache/quality/smollm2-135m-instruct-q4_1.gguf";
    std::string text = std::string(METRONOME_SOURCE_DIR) + "/.cache/quality/prideprejudice.txt";
    int64_t window = 256, sinks = 4;
    std::vector<std::string> policies;
    std::vector<int64_t> grid_windows, grid_sinks;
    std::string positions = "cache";
    int64_t from = -1;
    int64_t tokens = -1, generate = -1;
    bool quick = false, json = false;
    std::string out;
    quality::QualityOptions q;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("--model", o->model, "GGUF model file")->capture_default_str();
  cmd->add_option("--text", o->text, "UTF-8 text to score")->capture_default_str();
  cmd->add_option("--tokens", o->tokens,
                  "Tokens of the text scored, N (default 4096; 2048 --quick)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  cmd->add_option("--window", o->window, "W of the default policies full, wW, sSwW")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--sinks", o->sinks, "S of the default sinks + window policy")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option(
      "--policy", o->policies,
      "Policies compared instead of the defaults: full, wW, sSwW (e.g. s4w256) or rR (the "
      "KV cleared every R tokens, perplexity only)");
  cmd->add_option("--grid-windows", o->grid_windows,
                  "Also score every W here with every S of --grid-sinks (perplexity only)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--grid-sinks", o->grid_sinks, "Sink counts of the grid (0: window only)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_option("--positions", o->positions,
                  "RoPE positions: cache (StreamingLLM: slots in the cache) or original (the "
                  "text's positions)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cache", "original"}));
  cmd->add_option("--chunk", o->q.chunk, "Tokens per step when scoring")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--bucket", o->q.bucket, "Tokens per perplexity bucket")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--from", o->from, "Perplexity also over tokens [from, N) (default: W)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--generate", o->generate,
                  "Free-running tokens per policy (default 2W; 0: no generation)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 16));
  cmd->add_option("--prompt-tokens", o->q.prompt_tokens,
                  "Generation prompt: the text's first tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_option("--temperature", o->q.temperature, "Sampling temperature (0: greedy)")
      ->capture_default_str()
      ->check(kFiniteNumber)
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--seed", o->q.seed, "Seed of the sampling")->capture_default_str();
  cmd->add_option("-j,--threads", o->q.threads, "Threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--quick", o->quick,
                "N = 2048, the three default policies, no grid (what CI runs)");
  cmd->add_flag("--json", o->json, "JSON on stdout");
  cmd->add_option("--out", o->out, "Also write the JSON to this file");
  return [o]() {
    quality::QualityOptions q = o->q;
    q.progress = true;  // stderr_progress decides: terminal or not, --quiet
    q.tokens = o->tokens > 0 ? o->tokens : o->quick ? 2048 : 4096;
    q.positions =
        o->positions == "cache" ? quality::PositionMode::kCache : quality::PositionMode::kOriginal;
    q.from = o->from > 0 ? o->from : o->window;
    q.generate_tokens = o->generate >= 0 ? o->generate : 2 * o->window;
    if (o->policies.empty()) {
      q.policies = {
          quality::parse_policy("full", "--policy"),
          quality::parse_policy("w" + std::to_string(o->window), "--window"),
          quality::parse_policy("s" + std::to_string(o->sinks) + "w" + std::to_string(o->window),
                                "--sinks")};
    } else {
      for (const auto& p : o->policies) q.policies.push_back(quality::parse_policy(p, "--policy"));
    }
    if (o->grid_windows.empty() != o->grid_sinks.empty()) {
      throw ConfigError("--grid-windows and --grid-sinks: give both or neither");
    }
    for (const int64_t w : o->grid_windows) {
      for (const int64_t s : o->grid_sinks) {
        q.grid.push_back(
            quality::KvPolicy{quality::policy_name(kv::Window{w, s}), kv::Window{w, s}});
      }
    }
    // Every input and the output are checked before minutes of scoring.
    if (!o->out.empty()) require_writable_target(o->out, "--out");
    if (std::error_code ec; std::filesystem::exists(o->text, ec)) {
      require_regular_file(o->text, "text (--text)");
    }
    require_regular_file(o->model, "GGUF model file");
    const auto t0 = std::chrono::steady_clock::now();
    const quality::GgufFile gguf(o->model);
    const quality::LlamaModel model(gguf);
    const quality::BpeTokenizer tok(gguf);
    const std::vector<int32_t> ids = tok.encode(read_text(o->text));
    std::cerr << "quality: " << gguf.path() << " loaded, " << ids.size() << " tokens of text in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
              << " s\n";
    const quality::QualityResult r = quality::run_quality(model, tok, ids, q);
    std::cerr << "quality: perplexity of " << r.perplexity.size() << " policies over " << q.tokens
              << " tokens in " << r.seconds_perplexity << " s; " << r.generation.size() << " x "
              << q.generate_tokens << " generated tokens (and scored) in " << r.seconds_generation
              << " s\n";
    nlohmann::json j = quality::quality_json(r, q);
    j["config"]["model"] = o->model;
    j["config"]["text"] = o->text;
    j["model"] = {{"name", gguf.string("general.name")},   {"layers", model.config().layers},
                  {"hidden", model.config().hidden},       {"q_heads", model.config().q_heads},
                  {"kv_heads", model.config().kv_heads},   {"head_dim", model.config().head_dim},
                  {"rope_base", model.config().rope_base}, {"context", model.config().context}};
    const std::string dumped = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    // Written whole and checked: a full disk is exit 1 naming the path, never a silent 0.
    if (!o->out.empty()) write_file_atomically(o->out, dumped + "\n", "--out");
    if (o->json) {
      std::cout << dumped << "\n";
      return 0;
    }
    std::printf("%-10s %10s %14s %14s %12s\n", "policy", "ppl", "ppl from tok", "gen ppl(full)",
                "gen letters");
    for (size_t i = 0; i < r.perplexity.size(); ++i) {
      const auto& p = r.perplexity[i];
      const quality::GenerationResult* g = nullptr;
      for (const auto& x : r.generation) {
        if (x.policy.name == p.policy.name) g = &x;
      }
      std::printf("%-10s %10.2f", p.policy.name.c_str(), p.ppl);
      if (p.ppl_from > 0) {
        std::printf(" %14.2f", p.ppl_from);
      } else {
        std::printf(" %14s", "-");  // an empty range [from, N)
      }
      if (g) {
        std::printf(" %14.2f %12.3f\n", g->ppl_full, g->letter_share);
      } else {
        std::printf(" %14s %12s\n", "-", "-");
      }
    }
    std::printf("(ppl from token %lld; the text itself has letter+space share %.3f)\n",
                static_cast<long long>(q.from), r.text_letter_share);
    return 0;
  };
}

}  // namespace metronome::cli
