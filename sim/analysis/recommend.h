// Which window and sinks give the most schedulable sessions? For each (W, S) of a grid: the memory
// cap (pool over the per-session bound), the deadline cap (capacity probes), and N* (sessions
// served at steady state under the scenario's admission controller) across seeds, with the
// silent-frame rate and whether any run was flagged (stalled, collapsed, missed deadlines). The
// best cell is the one with the largest median N* among those that meet the quality floor (a
// minimum W and S, or a largest perplexity ratio to full attention read from `metronome quality`
// output) and whose runs are all clean.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.h"

namespace metronome {

struct RecommendSpec {
  std::vector<int64_t> windows{240, 480, 960, 1920};
  std::vector<int64_t> sinks{0, 4, 16};
  int64_t seeds = 5;
  int64_t min_window = 0, min_sinks = 0;
  // (W, S) -> perplexity ratio to full attention, from a quality run; cells without an entry have
  // no measured quality and are not recommended when max_ppl_ratio is set.
  std::vector<std::pair<std::pair<int64_t, int64_t>, double>> ppl_ratio;
  std::optional<double> max_ppl_ratio;
  // Where the perplexity ratios came from, said beside the floor ("SmolLM2-135M on Pride and
  // Prejudice"; quality_source() reads it from the file); empty without --quality.
  std::string quality_source;
  // The best-quality option: the eligible cell of best quality whose median N* is within this
  // fraction of the best cell's.
  double quality_within = 0.05;
  double fraction = 0;  // deadline-cap fraction; 0: admission.high_fraction
  int jobs = 1;
  bool progress = false;  // on stderr (base/progress.h)
};

struct RecommendCell {
  int64_t window = 0, sinks = 0;
  int64_t memory_cap = 0, deadline_cap = 0;
  std::vector<double> n_star;  // per seed
  double n_star_median = 0, n_star_p5 = 0, n_star_p95 = 0;
  double silent_fraction_mean = 0;
  int64_t flagged_runs = 0;
  // Runs in which admission turned nobody away: N* there measures the offered load, not capacity.
  int64_t unrejected_runs = 0;
  // Runs too short to settle, whose N* is not a steady state: the window (S + W) fills after half
  // the horizon (N* is read over the last half), or an adaptive cap never met congestion (it was
  // still climbing when the run ended).
  int64_t unsettled_runs = 0;
  int64_t climbing_runs = 0;  // of those, the cap still climbing
  // Runs that turned callers away at the cap (none by the memory guard) and whose cap then stayed
  // above every live count over the last half: the controller had room and no caller came to fill
  // it (all arrived at once, or the arrivals ended).
  int64_t starved_runs = 0;
  double window_fill_s = 0;  // when a session's sinks + window are full
  std::optional<double> ppl_ratio;
  bool eligible = false;  // meets the quality floor and every run is clean
  std::string why_not;
};

struct Recommendation {
  std::vector<RecommendCell> cells;  // ranked: eligible first, then by median N*
  std::optional<size_t> best;        // index into cells
  // The eligible cell of best quality with median N* >= (1 - quality_within) x the best's; may be
  // the best itself.
  std::optional<size_t> best_quality;
  double quality_within = 0.05;  // the spec's
  std::string quality_source;    // the spec's
};

Recommendation recommend(const Scenario& base, const RecommendSpec& spec);
// (W, S) -> ppl_from(W, S) / ppl_from(full attention) from a `metronome quality --json` file;
// ConfigError naming the file and field when it is not one.
std::vector<std::pair<std::pair<int64_t, int64_t>, double>> read_ppl_ratios(
    const std::string& path);
// The model and text a `metronome quality --json` file measured, in words: the shipped figure 8
// pair as "SmolLM2-135M on Pride and Prejudice", any other as its model name and file names.
std::string quality_source(const std::string& path);
nlohmann::json recommend_json(const Scenario& base, const RecommendSpec& spec,
                              const Recommendation& r);
std::string recommend_text(const Scenario& base, const Recommendation& r);

}  // namespace metronome
