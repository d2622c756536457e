#include "sim/analysis/recommend.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "base/config_error.h"
#include "base/json_file.h"
#include "base/parallel_for.h"
#include "base/progress.h"
#include "base/version.h"
#include "sim/analysis/capacity.h"
#include "sim/analysis/report.h"
#include "sim/closed_form/first_order.h"
#include "sim/config/config_limits.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/step_time.h"
#include "sim/engine/engine.h"
#include "sim/kv_policy/windowed.h"

namespace metronome {
namespace {

// Two cells whose N* over seeds overlap (p5 to p95) are not told apart by this many seeds.
bool tied(const RecommendCell& a, const RecommendCell& top) {
  return a.n_star_p95 >= top.n_star_p5 && a.n_star_p5 <= top.n_star_p95;
}

// Sessions the workload offers at once: N* at or above it measures the load, not the capacity.
double offered_sessions(const Scenario& s) {
  // A call lasts at most the run: past the horizon no more callers are live at once.
  const double call_s = std::min(s.horizon_s, s.workload.duration.policy->typical_s());
  return s.workload.arrival.policy->live_callers(call_s);
}

// Better quality: the lower measured perplexity ratio where both have one, else more tokens kept.
bool better_quality(const RecommendCell& a, const RecommendCell& b) {
  return a.ppl_ratio && b.ppl_ratio ? *a.ppl_ratio < *b.ppl_ratio
                                    : a.window + a.sinks > b.window + b.sinks;
}

bool load_limited(const Scenario& s, const RecommendCell& c) {
  return (c.unrejected_runs > 0 && c.unrejected_runs == static_cast<int64_t>(c.n_star.size())) ||
         c.starved_runs > 0 || c.n_star_median >= 0.95 * offered_sessions(s);
}

// A window in seconds of conversation: W tokens at kv_tokens_per_frame per frame period.
double window_seconds(const Scenario& s, int64_t window) {
  return static_cast<double>(window) /
         static_cast<double>(std::max<int64_t>(1, s.workload.kv_tokens())) *
         s.workload.frame_period_s;
}

Scenario cell_scenario(const Scenario& base, int64_t w, int64_t s) {
  Scenario c = base;
  c.kv_policy.policy = std::make_shared<const WindowedKv>(w, s);
  return c;
}

double nearest_rank(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank =
      static_cast<size_t>(std::max(1.0, std::ceil(p * static_cast<double>(v.size()))));
  return v[std::min(rank, v.size()) - 1];
}

}  // namespace

std::vector<std::pair<std::pair<int64_t, int64_t>, double>> read_ppl_ratios(
    const std::string& path) {
  const nlohmann::json j = read_json_file(path, "quality file");
  auto bad = [&](const std::string& what) {
    return ConfigError(path + ": " + what + " (expected the output of metronome quality --json)");
  };
  if (!j.is_object() || !j.contains("perplexity") || !j["perplexity"].is_array()) {
    throw bad("perplexity: missing or not an array");
  }
  std::optional<double> full;
  std::vector<std::pair<std::pair<int64_t, int64_t>, double>> ppl;
  for (const auto& p : j["perplexity"]) {
    if (!p.is_object() || !p.contains("ppl_from") || !p["ppl_from"].is_number() ||
        !p.contains("window") || !p.contains("sinks") || !p["sinks"].is_number_integer()) {
      throw bad("perplexity[]: each entry needs window, sinks and a numeric ppl_from");
    }
    const double v = p["ppl_from"].get<double>();
    // exp(mean negative log-likelihood) >= 1: anything less is not a perplexity (and a tiny one
    // would make every ratio infinite).
    if (!std::isfinite(v) || v < 1) {
      throw bad("perplexity[].ppl_from: " + json_preview(p["ppl_from"]) +
                "; a perplexity is a finite number >= 1");
    }
    if (p["window"].is_null()) {
      if (full) throw bad("perplexity: two full-attention entries (window null); give one");
      full = v;
    } else if (p["window"].is_number_integer()) {
      const std::pair<int64_t, int64_t> ws{p["window"].get<int64_t>(), p["sinks"].get<int64_t>()};
      if (ws.first < 1 || ws.second < 0) {
        throw bad(
            fmt::format("perplexity[]: window {}, sinks {}: a window is >= 1 token and sinks "
                        ">= 0",
                        ws.first, ws.second));
      }
      for (const auto& [seen, _] : ppl) {
        if (seen == ws) {
          throw bad("perplexity: window " + std::to_string(ws.first) + ", sinks " +
                    std::to_string(ws.second) + " given twice; give each policy once");
        }
      }
      ppl.push_back({ws, v});
    } else {
      throw bad("perplexity[].window: an integer, or null for full attention");
    }
  }
  if (!full) throw bad("perplexity: no full-attention entry (window null) to compare against");
  for (auto& [ws, v] : ppl) v /= *full;
  return ppl;
}

Recommendation recommend(const Scenario& base, const RecommendSpec& spec) {
  Recommendation out;
  for (const int64_t w : spec.windows) {
    for (const int64_t s : spec.sinks) {
      RecommendCell c;
      c.window = w;
      c.sinks = s;
      out.cells.push_back(c);
    }
  }
  const size_t n = out.cells.size();
  const auto seeds = static_cast<size_t>(spec.seeds);
  if (!seeds_fit(base.seed, spec.seeds)) {
    throw ConfigError(
        fmt::format("--seeds {} from seed {}: the last seed is past {}, the largest scenario seed",
                    spec.seeds, base.seed, kMaxSeed));
  }
  // One task per capacity search and per seeded run; results land in their own slots, so the
  // output does not depend on the thread count.
  const size_t tasks = n * (1 + seeds);
  std::vector<RunResult> runs(n * seeds);
  std::vector<int64_t> deadline_caps(n);
  const auto progress =
      spec.progress ? stderr_progress("recommend", static_cast<int64_t>(tasks), "tasks") : nullptr;
  const double fraction =
      spec.fraction > 0 ? spec.fraction : base.admission.policy->congestion_fraction();
  // The cells vary the window only: one cost model serves every run (each cell's step bounds are
  // checked against it).
  const std::unique_ptr<CostModel> cost = make_unchecked_cost_model(base);
  parallel_for(tasks, spec.jobs, [&](size_t t) {
    const size_t cell = t / (1 + seeds), k = t % (1 + seeds);
    const Scenario sc = cell_scenario(base, out.cells[cell].window, out.cells[cell].sinks);
    if (k == 0) {
      deadline_caps[cell] = compute_capacity(sc, fraction).deadline_cap;
    } else {
      Scenario run = sc;
      run.seed = base.seed + (k - 1);
      check_step_bounds(run, *cost);
      runs[cell * seeds + (k - 1)] = simulate(run, *cost);
    }
    if (progress) progress->add();
  });
  if (progress) progress->finish();

  for (size_t i = 0; i < n; ++i) {
    RecommendCell& c = out.cells[i];
    const Scenario sc = cell_scenario(base, c.window, c.sinks);
    const auto p = predict_first_order(sc);
    c.memory_cap = p.memory_cap_sessions.value_or(0);
    c.deadline_cap = deadline_caps[i];
    double silent = 0;
    c.window_fill_s = window_seconds(sc, c.window + c.sinks);
    for (size_t k = 0; k < seeds; ++k) {
      const RunResult& r = runs[i * seeds + k];
      c.n_star.push_back(r.admission.n_star.value_or(static_cast<double>(r.peak_live_sessions)));
      silent += r.frames_due > 0
                    ? static_cast<double>(r.frames_silent) / static_cast<double>(r.frames_due)
                    : 0.0;
      if (!r.admission.flags.empty() || r.first_stall_s) ++c.flagged_runs;
      if (r.sessions_rejected == 0) ++c.unrejected_runs;
      // N* is the median live count over the last half: a window still filling there, or an
      // adaptive cap still climbing through it (turning callers away, ending at the top of a
      // spread wider than AIMD's sawtooth), is not a steady state.
      const auto& a = r.admission;
      const bool climbing = a.adaptive && r.sessions_rejected > 0 && a.cap_p5 && a.cap_p95 &&
                            a.cap_median && *a.cap_p95 - *a.cap_p5 > 0.25 * *a.cap_median &&
                            static_cast<double>(a.final_cap) >= *a.cap_p95;
      if (climbing) ++c.climbing_runs;
      // (Callers the memory guard refused bound the live count themselves: not this case.)
      if (a.adaptive && r.sessions_rejected > 0 && a.rejected_by_memory == 0 && a.cap_p5 &&
          a.live_p95 && *a.cap_p5 > *a.live_p95) {
        ++c.starved_runs;
      }
      if (c.window_fill_s > sc.horizon_s / 2 || climbing) ++c.unsettled_runs;
    }
    c.silent_fraction_mean = seeds > 0 ? silent / static_cast<double>(seeds) : 0;
    c.n_star_median = nearest_rank(c.n_star, 0.5);
    c.n_star_p5 = nearest_rank(c.n_star, 0.05);
    c.n_star_p95 = nearest_rank(c.n_star, 0.95);
    for (const auto& [ws, ratio] : spec.ppl_ratio) {
      if (ws.first == c.window && ws.second == c.sinks) c.ppl_ratio = ratio;
    }
    if (c.window < spec.min_window || c.sinks < spec.min_sinks) {
      c.why_not = fmt::format("below the quality floor (W >= {}, S >= {})", spec.min_window,
                              spec.min_sinks);
    } else if (spec.max_ppl_ratio && !c.ppl_ratio) {
      c.why_not = "no measured perplexity for this (W, S)";
    } else if (spec.max_ppl_ratio && *c.ppl_ratio > *spec.max_ppl_ratio) {
      c.why_not =
          fmt::format("perplexity ratio {:.3f} above {:.3f}", *c.ppl_ratio, *spec.max_ppl_ratio);
    } else if (c.flagged_runs > 0) {
      c.why_not = fmt::format("{} of {} runs flagged (stalled, collapsed or missed deadlines)",
                              c.flagged_runs, seeds);
    } else {
      c.eligible = true;
    }
  }
  // Eligible first; then the most sessions served; then the least memory per session.
  std::stable_sort(out.cells.begin(), out.cells.end(), [](const auto& a, const auto& b) {
    if (a.eligible != b.eligible) return a.eligible;
    if (a.n_star_median != b.n_star_median) return a.n_star_median > b.n_star_median;
    return a.window + a.sinks < b.window + b.sinks;
  });
  if (!out.cells.empty() && out.cells.front().eligible) out.best = 0;
  // Differences inside the seeds' spread are ties: among the eligible cells whose N* range (p5 to
  // p95) reaches the top cell's, the best is the one of best quality (lowest measured perplexity
  // ratio, else the most tokens kept: sinks + window).
  if (out.best) {
    for (size_t i = 1; i < out.cells.size(); ++i) {
      const auto& c = out.cells[i];
      const auto& b = out.cells[*out.best];
      if (!c.eligible || !tied(c, out.cells.front())) continue;
      if (better_quality(c, b)) out.best = i;
    }
  }
  // The best quality within quality_within of the best N*: what a little capacity buys.
  out.quality_within = spec.quality_within;
  out.quality_source = spec.quality_source;
  if (out.best) {
    const double floor = (1 - spec.quality_within) * out.cells[*out.best].n_star_median;
    out.best_quality = out.best;
    for (size_t i = 0; i < out.cells.size(); ++i) {
      const auto& c = out.cells[i];
      if (c.eligible && c.n_star_median >= floor &&
          better_quality(c, out.cells[*out.best_quality])) {
        out.best_quality = i;
      }
    }
  }
  return out;
}

std::string quality_source(const std::string& path) {
  const nlohmann::json j = read_json_file(path, "quality file");
  auto field = [&](const char* section, const char* key) -> std::string {
    if (!j.contains(section) || !j[section].is_object()) return "";
    const auto& s = j[section];
    return s.contains(key) && s[key].is_string() ? s[key].get<std::string>() : "";
  };
  const std::string model_file = field("config", "model"), text_file = field("config", "text");
  auto base = [](const std::string& p) { return std::filesystem::path(p).filename().string(); };
  // The pair scripts/fetch_quality_assets.sh fetches for figure 8.
  if (base(model_file) == "smollm2-135m-instruct-q4_1.gguf" &&
      base(text_file) == "prideprejudice.txt") {
    return "SmolLM2-135M on Pride and Prejudice";
  }
  const std::string name = field("model", "name");
  return fmt::format("{} on {}",
                     name.empty()
                         ? (model_file.empty() ? "an unnamed model" : base(model_file))
                         : name + (model_file.empty() ? "" : " [" + base(model_file) + "]"),
                     text_file.empty() ? "an unnamed text" : base(text_file));
}

nlohmann::json recommend_json(const Scenario& base, const RecommendSpec& spec,
                              const Recommendation& r) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : r.cells) {
    cells.push_back({{"window_tokens", c.window},
                     {"sink_tokens", c.sinks},
                     {"memory_cap_sessions", c.memory_cap},
                     {"deadline_cap_sessions", c.deadline_cap},
                     {"n_star_median", c.n_star_median},
                     {"n_star_p5", c.n_star_p5},
                     {"n_star_p95", c.n_star_p95},
                     {"n_star_per_seed", c.n_star},
                     {"silent_frame_fraction_mean", c.silent_fraction_mean},
                     {"flagged_runs", c.flagged_runs},
                     {"ppl_ratio", c.ppl_ratio ? nlohmann::json(*c.ppl_ratio) : nlohmann::json()},
                     {"eligible", c.eligible},
                     {"why_not", c.why_not},
                     {"window_seconds", window_seconds(base, c.window)},
                     {"limited_by_offered_load", load_limited(base, c)},
                     {"offered_sessions", offered_sessions(base)},
                     {"unsettled_runs", c.unsettled_runs},
                     {"too_short_to_settle", c.unsettled_runs > 0},
                     {"cap_still_climbing_runs", c.climbing_runs},
                     {"arrivals_ran_out_runs", c.starved_runs},
                     {"window_fill_s", c.window_fill_s},
                     {"tied_with_top",
                      r.best && c.eligible && &c != &r.cells.front() && tied(c, r.cells.front())}});
  }
  nlohmann::json best = nullptr;
  if (r.best) best = cells[*r.best];
  nlohmann::json best_quality = nullptr;
  if (r.best_quality) best_quality = cells[*r.best_quality];
  return {{"metronome_version", version_string()},
          {"scenario", to_json(base)},
          {"seeds", spec.seeds},
          {"quality_floor",
           {{"min_window_tokens", spec.min_window},
            {"min_sink_tokens", spec.min_sinks},
            {"max_ppl_ratio",
             spec.max_ppl_ratio ? nlohmann::json(*spec.max_ppl_ratio) : nlohmann::json()},
            {"source", spec.quality_source.empty() ? nlohmann::json()
                                                   : nlohmann::json(spec.quality_source)}}},
          {"best", best},
          {"quality_within_fraction", spec.quality_within},
          {"best_quality_within", best_quality},
          {"cells", cells}};
}

std::string recommend_text(const Scenario& base, const Recommendation& r) {
  std::string out = fmt::format("scenario   {} ({} on {}, admission {})\n", base.name,
                                base.model.name, base.gpu.name, base.admission.type());
  // Each cell runs a window in place of the scenario's KV policy: said where it was another
  // bounded rule, which the table would otherwise seem to be about.
  if (!base.kv_policy.window_or_unbounded()) {
    out +=
        fmt::format("kv_policy  the scenario's {} is replaced by each cell's window W, sinks S\n",
                    base.kv_policy.policy->describe());
  }
  if (!r.quality_source.empty()) {
    out += fmt::format("quality    perplexity ratios to full attention of {}\n", r.quality_source);
  }
  if (r.best) {
    const auto& b = r.cells[*r.best];
    out += fmt::format(
        "best       W = {}, S = {}: N* {:g} sessions served (median over seeds; p5 {:g}, p95 "
        "{:g}); memory cap {}, deadline cap {}; {:.2f}% of frames silent\n",
        b.window, b.sinks, b.n_star_median, b.n_star_p5, b.n_star_p95, b.memory_cap, b.deadline_cap,
        100 * b.silent_fraction_mean);
    out += fmt::format(
        "           W = {} tokens is {:.1f} s of conversation ({} KV tokens per {:g} s "
        "frame)\n",
        b.window, window_seconds(base, b.window), base.workload.kv_tokens(),
        base.workload.frame_period_s);
    if (*r.best != 0) {
      out += fmt::format(
          "           chosen over W = {}, S = {} (N* {:g}): their N* overlap over seeds (a tie), "
          "and this cell keeps more quality\n",
          r.cells.front().window, r.cells.front().sinks, r.cells.front().n_star_median);
    }
    if (r.best_quality && *r.best_quality != *r.best) {
      const auto& q = r.cells[*r.best_quality];
      out += fmt::format(
          "quality    within {:g}% of the best N*: W = {}, S = {} (N* {:g}, {:.1f} s of "
          "conversation{}) keeps the most quality\n",
          100 * r.quality_within, q.window, q.sinks, q.n_star_median,
          window_seconds(base, q.window),
          q.ppl_ratio ? fmt::format(", perplexity x{:.3f}", *q.ppl_ratio) : std::string());
    }
    if (b.unsettled_runs > 0) {
      out += fmt::format(
          "FLAGGED    {} of {} runs too short to settle ({}; N* is read over the last half): "
          "raise horizon_s\n",
          b.unsettled_runs, b.n_star.size(),
          b.window_fill_s > base.horizon_s / 2
              ? fmt::format("a window of {:.1f} s fills after half the {:g} s run", b.window_fill_s,
                            base.horizon_s)
              : fmt::format("the admission cap was still climbing in {} of them", b.climbing_runs));
    }
    if (b.starved_runs > 0) {
      out += fmt::format(
          "FLAGGED    N* {:g} is where the arrivals ran out, not a capacity: in {} of {} runs the "
          "cap stayed above every live count over the last half (callers turned away early never "
          "came back, and no new ones arrived); use arrivals that keep coming (fixed_interval or "
          "poisson) past the cap's climb\n",
          b.n_star_median, b.starved_runs, b.n_star.size());
    } else if (load_limited(base, b)) {
      out += fmt::format(
          "FLAGGED    N* {:g} is the offered load (nobody was turned away; {:g} sessions at once "
          "by "
          "the end): the load, not the GPU, limits it; raise workload.arrival.sessions (or the "
          "rate) to measure capacity\n",
          b.n_star_median, offered_sessions(base));
    }
  } else {
    out += "best       none: no (W, S) meets the quality floor with every run clean\n";
  }
  out += fmt::format("{:>6} {:>6} {:>4} {:>8} {:>8} {:>8} {:>8} {:>8}  {}\n", "W", "W s", "S",
                     "mem cap", "dl cap", "N* med", "silent%", "ppl x", "verdict");
  for (const auto& c : r.cells) {
    std::string verdict = c.eligible ? "eligible" : c.why_not;
    if (c.eligible && r.best && &c != &r.cells.front() && tied(c, r.cells.front())) {
      verdict += " (tie with the top N*)";
    }
    if (c.starved_runs > 0) {
      verdict += "; N* = where arrivals ran out";
    } else if (load_limited(base, c)) {
      verdict += "; N* = offered load";
    }
    if (c.unsettled_runs > 0) verdict += "; run too short to settle";
    out +=
        fmt::format("{:>6} {:>6.1f} {:>4} {:>8} {:>8} {:>8g} {:>8.2f} {:>8}  {}\n", c.window,
                    window_seconds(base, c.window), c.sinks, c.memory_cap, c.deadline_cap,
                    c.n_star_median, 100 * c.silent_fraction_mean,
                    c.ppl_ratio ? fmt::format("{:.3f}", *c.ppl_ratio) : std::string("-"), verdict);
  }
  return out;
}

}  // namespace metronome
