#include "sim/analysis/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <sstream>
#include <thread>

#include "base/config_error.h"
#include "base/parallel_for.h"
#include "base/progress.h"
#include "base/version.h"
#include "sim/fleet/fleet.h"
#include "sim/pool/pool_sizing.h"

namespace metronome {
namespace {

using nlohmann::json;

// The autoscale section a fleet of at most `replicas` runs: the spec's, its floor within reach.
json autoscale_section(const PlanSpec& spec, int64_t replicas) {
  json a = spec.autoscale;
  a["min_replicas"] = std::min<int64_t>(a.value("min_replicas", int64_t{1}), replicas);
  a["max_replicas"] = replicas;
  return a;
}

std::string kv_label(const PlanCandidate& c) {
  return c.kv_policy == "unbounded" ? "unbounded KV" : fmt::format("W {} S {}", c.window, c.sinks);
}

// The candidate's scenario: the base with its GPU, degree and window, and a fleet of `replicas`
// (none for 0).
Scenario candidate_scenario(const Scenario& base, const PlanSpec& spec, const PlanCandidate& c,
                            int64_t replicas) {
  json j = to_json(base);
  j.erase("fleet");
  apply_set(j, "gpu=" + c.gpu, "");
  // A cost model the base left to "auto" is chosen again for each GPU (its best).
  if (!base.cost_model.chosen.empty()) {
    j["cost_model"]["type"] = "auto";
    j["cost_model"].erase("file");
  }
  j["engine"]["tensor_parallel"] = c.tensor_parallel;
  j["kv_policy"] =
      c.kv_policy == "unbounded"
          ? json{{"type", "unbounded"}}
          : json{{"type", "windowed"}, {"window_tokens", c.window}, {"sink_tokens", c.sinks}};
  if (replicas > 0) {
    const json a = c.autoscaled ? autoscale_section(spec, replicas) : json(nullptr);
    const int64_t count = c.autoscaled ? a["min_replicas"].get<int64_t>() : replicas;
    j["fleet"] = {{"groups", json::array({{{"name", "plan"}, {"count", count}}})},
                  {"router", {{"type", "least_sessions"}}},
                  {"gateway", {{"type", "none"}}}};
    if (c.autoscaled) j["fleet"]["autoscale"] = a;
  }
  return parse_scenario(j, fmt::format("plan {} tp {} {}{}", c.gpu, c.tensor_parallel, kv_label(c),
                                       c.autoscaled ? " autoscaled" : ""));
}

// Why a fleet fails the plan's tests, "" where it meets them: the one verdict a search gives and
// a merge checks a shard's against.
std::string why_not(const PlanFleet& f, double deadline_ms) {
  if (f.replicas_stalled > 0) {
    return fmt::format("{} of {} replicas stalled", f.replicas_stalled, f.replicas);
  }
  if (f.calls_rejected > 0) return fmt::format("{} calls turned away", f.calls_rejected);
  if (!(f.true_p99_ms <= deadline_ms)) {
    return std::isfinite(f.true_p99_ms)
               ? fmt::format("true p99 {:.1f} ms over the {:.1f} ms deadline", f.true_p99_ms,
                             deadline_ms)
               : std::string("frames never served (true p99 censored)");
  }
  return "";
}

PlanFleet run_fleet(const Scenario& base, const PlanSpec& spec, const PlanCandidate& c,
                    int64_t replicas) {
  const Scenario s = candidate_scenario(base, spec, c, replicas);
  const FleetResult r = Fleet(s).run();
  const RunResult t = r.totals();
  PlanFleet f;
  f.replicas = replicas;
  f.calls_offered = r.offered;
  f.calls_rejected = r.rejected_total();
  for (const auto& o : r.replicas) f.replicas_stalled += o.run.first_stall_s ? 1 : 0;
  const double p99 = t.true_latency.output_percentile(0.99);
  f.true_p99_ms = std::isfinite(p99) ? p99 * 1e3 : std::numeric_limits<double>::infinity();
  f.silent_fraction = t.frames_due > 0
                          ? static_cast<double>(t.frames_silent) / static_cast<double>(t.frames_due)
                          : 0;
  f.call_hours = static_cast<double>(t.frames_due) * s.workload.frame_period_s / 3600;
  f.hours = s.horizon_s / 3600;
  f.gpu_hours = r.gpu_seconds() / 3600;
  f.why_not = why_not(f, s.workload.deadline() * 1e3);
  f.meets = f.why_not.empty();
  return f;
}

// The fewest replicas in [1, max] that meet the tests: doubling from 1 until a fleet meets them
// (or max fails), then bisection between the last count that failed and the first that met; the
// count below the answer is kept. From below because small fleets are the cheap runs: each call
// brings every replica up to its instant, so a run costs about calls x replicas, and the counts
// tried stay under twice the answer instead of starting at max.
void search(const Scenario& base, const PlanSpec& spec, PlanCandidate& c) {
  int64_t lo = 0, hi = 0;  // lo fails (0: nothing), hi meets
  std::optional<PlanFleet> at_lo, at_hi;
  for (int64_t n = 1; !at_hi; n = std::min(2 * n, spec.max_replicas)) {
    PlanFleet f = run_fleet(base, spec, c, n);
    ++c.runs;
    if (f.meets) {
      hi = n;
      at_hi = std::move(f);
    } else {
      lo = n;
      at_lo = std::move(f);
      if (n == spec.max_replicas) {
        c.short_of = std::move(at_lo);
        return;
      }
    }
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    PlanFleet f = run_fleet(base, spec, c, mid);
    ++c.runs;
    if (f.meets) {
      hi = mid;
      at_hi = std::move(f);
    } else {
      lo = mid;
      at_lo = std::move(f);
    }
  }
  c.best = at_hi;
  c.short_of = at_lo;
}

std::string quality_skip(const PlanSpec& spec, PlanCandidate& c) {
  if (c.kv_policy == "unbounded") {
    c.ppl_ratio = 1.0;  // full attention: what the ratio is measured against
    return "";
  }
  for (const auto& [ws, r] : spec.ppl_ratio) {
    if (ws.first == c.window && ws.second == c.sinks) c.ppl_ratio = r;
  }
  if (!spec.max_ppl_ratio) return "";
  if (!c.ppl_ratio) return fmt::format("no measured perplexity for W {} S {}", c.window, c.sinks);
  if (*c.ppl_ratio > *spec.max_ppl_ratio) {
    return fmt::format("perplexity ratio {:.3f} over the floor {:.3f}", *c.ppl_ratio,
                       *spec.max_ppl_ratio);
  }
  return "";
}

json fleet_json(const std::optional<PlanFleet>& f) {
  if (!f) return nullptr;
  return {{"replicas", f->replicas},
          {"meets", f->meets},
          {"why_not", f->why_not.empty() ? json(nullptr) : json(f->why_not)},
          {"true_p99_ms", std::isfinite(f->true_p99_ms) ? json(f->true_p99_ms) : json(nullptr)},
          {"silent_fraction", f->silent_fraction},
          {"calls_offered", f->calls_offered},
          {"calls_rejected", f->calls_rejected},
          {"replicas_stalled", f->replicas_stalled},
          {"call_hours", f->call_hours},
          {"gpu_hours", f->gpu_hours}};
}

Plan plan_candidates(const PlanSpec& spec) {
  Plan out;
  auto add = [&](PlanCandidate c) {
    out.candidates.push_back(c);
    if (!spec.autoscale.is_null()) {
      c.autoscaled = true;
      out.candidates.push_back(c);
    }
  };
  for (const auto& gpu : spec.gpus) {
    for (int64_t k : spec.tensor_parallel) {
      for (const auto& kv : spec.kv_policies) {
        PlanCandidate c;
        c.gpu = gpu;
        c.tensor_parallel = k;
        c.kv_policy = kv;
        if (kv == "unbounded") {
          add(c);
          continue;
        }
        if (kv != "windowed") {
          throw ConfigError("--kv: expected windowed or unbounded, not '" + kv + "'");
        }
        for (int64_t w : spec.windows) {
          for (int64_t s : spec.sinks) {
            c.window = w;
            c.sinks = s;
            add(c);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace

double PlanCandidate::cost_per_hour() const {
  if (!best) return 0;
  if (autoscaled) return best->gpu_hours / best->hours * price_per_gpu_hour;
  return static_cast<double>(best->replicas * tensor_parallel) * price_per_gpu_hour;
}

double PlanCandidate::cost_per_call_hour() const {
  if (!best || !(best->call_hours > 0)) return 0;
  return cost_per_hour() * best->hours / best->call_hours;
}

namespace {

// The candidates in the order given (GPU x TP x KV x W x S), each loaded and priced, none
// searched yet.
Plan prepare(const Scenario& base, const PlanSpec& spec) {
  if (base.engine.num_blocks) {
    throw ConfigError(base.source +
                      ": engine.num_gpu_blocks: plan sizes each candidate's pool from its GPU and "
                      "degree; expected none (remove it)");
  }
  if (!spec.autoscale.is_null()) {
    // The section is the user's: an error in it is theirs, not a reason to skip a candidate.
    if (!spec.autoscale.is_object() || spec.autoscale.contains("max_replicas")) {
      throw ConfigError(
          "--autoscale: expected a fleet.autoscale object without max_replicas (plan searches "
          "it), e.g. {\"signal\": \"kv_usage\", \"scale_up_above\": 0.6, "
          "\"scale_down_below\": 0.3, \"startup_s\": 120}");
    }
    json j = to_json(base);
    j["fleet"] = {{"groups", json::array({{{"count", 1}}})},
                  {"autoscale", autoscale_section(spec, spec.max_replicas)}};
    (void)parse_scenario(j, "plan --autoscale");
  }
  // Each GPU on the base as given: a name or file that does not load is the user's error for the
  // whole plan, not a reason to skip its candidates.
  for (const std::string& g : spec.gpus) {
    json j = to_json(base);
    j.erase("fleet");
    try {
      apply_set(j, "gpu=" + g, "");
      (void)parse_scenario(j, "plan");
    } catch (const ConfigError& e) {
      throw ConfigError("--gpus " + g + ": " + e.what());
    }
  }
  Plan out = plan_candidates(spec);
  // Load each candidate once here (one thread): a GPU without a price is an error for the whole
  // plan; a degree or window the scenario refuses is a reason to skip that candidate.
  for (PlanCandidate& c : out.candidates) {
    const std::string below_floor = quality_skip(spec, c);  // the reason shown, where there is one
    try {
      const Scenario one = candidate_scenario(base, spec, c, 0);
      if (!one.gpu.price_per_gpu_hour) {
        throw ConfigError(fmt::format(
            "{}: price_per_gpu_hour: expected the price of one GPU-hour (metronome plan ranks "
            "fleets by it); GPU {}'s description states none",
            one.gpu.loaded_from.empty() ? "gpu " + one.gpu.name : one.gpu.loaded_from,
            one.gpu.name));
      }
      c.price_per_gpu_hour = *one.gpu.price_per_gpu_hour;
      (void)size_pool(one);
      (void)make_cost_model(one);
    } catch (const ConfigError& e) {
      if (std::string(e.what()).find("price_per_gpu_hour") != std::string::npos) throw;
      c.skipped = e.what();
    }
    // Loaded all the same, for its price, which a skipped row still shows (not a price of 0).
    if (!below_floor.empty()) c.skipped = below_floor;
  }
  return out;
}

// Searches the candidates the shard owns (by their index in the order given), on spec.jobs
// threads. One task per candidate; each result lands in its own slot, so no byte depends on -j.
void search_owned(const Scenario& base, const PlanSpec& spec, Plan& p) {
  std::vector<size_t> owned;
  for (size_t i = 0; i < p.candidates.size(); ++i) {
    if (spec.shard.owns(static_cast<int64_t>(i))) owned.push_back(i);
  }
  const auto progress =
      spec.progress ? stderr_progress("plan", static_cast<int64_t>(owned.size()), "candidates")
                    : nullptr;
  parallel_for(owned.size(), spec.jobs, [&](size_t k) {
    PlanCandidate& c = p.candidates[owned[k]];
    if (c.skipped.empty()) search(base, spec, c);
    if (progress) progress->add();
  });
  if (progress) progress->finish();
}

// Those that meet the tests, cheapest first (fewer GPUs, then the order given, among equals);
// then the rest in the order given.
void rank(Plan& p) {
  std::stable_sort(
      p.candidates.begin(), p.candidates.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
        if (a.best.has_value() != b.best.has_value()) return a.best.has_value();
        if (!a.best) return false;
        if (a.cost_per_hour() != b.cost_per_hour()) {
          return a.cost_per_hour() < b.cost_per_hour();
        }
        return a.best->replicas * a.tensor_parallel < b.best->replicas * b.tensor_parallel;
      });
  if (!p.candidates.empty() && p.candidates.front().best) p.best = 0;
}

json search_json(const PlanSpec& spec) {
  json q = nullptr;
  if (spec.max_ppl_ratio) {
    q = {{"max_ppl_ratio", *spec.max_ppl_ratio}, {"source", spec.quality_source}};
  }
  return {{"gpus", spec.gpus},
          {"tensor_parallel", spec.tensor_parallel},
          {"windows", spec.windows},
          {"sinks", spec.sinks},
          {"kv_policies", spec.kv_policies},
          {"max_replicas", spec.max_replicas},
          {"autoscale", spec.autoscale},
          {"quality_floor", q},
          {"tests", "no replica stalled, no call turned away, true p99 <= deadline_s"}};
}

// A searched fleet as a shard writes it: every field, every double exactly (nlohmann's
// round-trip printing), so the merge ranks and prints what the single process would.
json fleet_state(const std::optional<PlanFleet>& f) {
  if (!f) return nullptr;
  json j = fleet_json(f);  // what the plan prints, plus the hours only the merge needs
  j["hours"] = f->hours;
  return j;
}

// `where` names the shard file and row, for a value no search could have written.
std::optional<PlanFleet> fleet_from_state(const json& j, const std::string& where,
                                          double deadline_ms) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_object()) throw ConfigError(where + ": expected a searched fleet (an object) or null");
  // The value at key, of the JSON type `is` tests.
  const auto typed = [&](const char* key, bool (json::*is)() const noexcept,
                         const char* expected) -> const json& {
    const json& v = j.at(key);
    if (!(v.*is)())
      throw ConfigError(fmt::format("{}.{}: expected {}, got {}", where, key, expected, v.dump()));
    return v;
  };
  const auto count = [&](const char* key) {
    const auto n = typed(key, &json::is_number_integer, "a whole number").get<int64_t>();
    if (n < 0)
      throw ConfigError(fmt::format("{}.{}: expected a count >= 0, got {}", where, key, n));
    return n;
  };
  const auto amount = [&](const char* key, double most) {
    const auto v = typed(key, &json::is_number, "a number").get<double>();
    if (!(v >= 0 && v <= most)) {
      throw ConfigError(fmt::format("{}.{}: expected 0 to {:g}, got {}", where, key, most, v));
    }
    return v;
  };
  constexpr double kAny = std::numeric_limits<double>::max();
  PlanFleet f;
  f.replicas = count("replicas");
  if (f.replicas < 1) throw ConfigError(where + ".replicas: expected at least 1, got 0");
  f.meets = typed("meets", &json::is_boolean, "true or false").get<bool>();
  f.why_not = j.at("why_not").is_null()
                  ? ""
                  : typed("why_not", &json::is_string, "a string or null").get<std::string>();
  f.true_p99_ms = j.at("true_p99_ms").is_null() ? std::numeric_limits<double>::infinity()
                                                : amount("true_p99_ms", kAny);
  f.silent_fraction = amount("silent_fraction", 1);
  f.calls_offered = count("calls_offered");
  f.calls_rejected = count("calls_rejected");
  f.replicas_stalled = count("replicas_stalled");
  f.call_hours = amount("call_hours", kAny);
  f.hours = amount("hours", kAny);
  f.gpu_hours = amount("gpu_hours", kAny);
  // A shard's numbers are exact doubles, so the verdict they give is the one its search wrote.
  if (const std::string why = why_not(f, deadline_ms); f.meets != why.empty() || f.why_not != why) {
    throw ConfigError(fmt::format(
        "{}: meets {}, why_not \"{}\": not the verdict of its numbers (meets {}, why_not \"{}\"); "
        "a shard is plan --shard's output, not edited by hand",
        where, f.meets, f.why_not, why.empty(), why));
  }
  return f;
}

// What names a candidate, to check that a shard's candidate i is this plan's.
json candidate_key(const PlanCandidate& c) {
  return {{"gpu", c.gpu},
          {"tensor_parallel", c.tensor_parallel},
          {"kv_policy", c.kv_policy},
          {"window_tokens", c.window},
          {"sink_tokens", c.sinks},
          {"autoscaled", c.autoscaled}};
}

}  // namespace

Plan plan(const Scenario& base, const PlanSpec& spec) {
  Plan out = prepare(base, spec);
  PlanSpec whole = spec;
  whole.shard = Shard{};
  search_owned(base, whole, out);
  rank(out);
  return out;
}

json plan_shard(const Scenario& base, const PlanSpec& spec) {
  Plan p = prepare(base, spec);
  search_owned(base, spec, p);
  json rows = json::array();
  for (size_t i = 0; i < p.candidates.size(); ++i) {
    if (!spec.shard.owns(static_cast<int64_t>(i))) continue;
    const PlanCandidate& c = p.candidates[i];
    rows.push_back({{"index", i},
                    {"candidate", candidate_key(c)},
                    {"best", fleet_state(c.best)},
                    {"one_fewer", fleet_state(c.short_of)},
                    {"simulations", c.runs}});
  }
  return {{"metronome_plan_shard", {{"index", spec.shard.index}, {"count", spec.shard.count}}},
          {"metronome_version", version_string()},
          {"scenario", to_json(base)},
          {"search", search_json(spec)},
          {"candidates", rows}};
}

Plan merge_plan(const Scenario& base, const PlanSpec& spec,
                const std::vector<std::pair<std::string, json>>& shards) {
  if (shards.empty()) throw ConfigError("plan --merge: expected at least one shard file");
  Plan p = prepare(base, spec);
  const json scenario = to_json(base), search = search_json(spec);
  const double deadline_ms = base.workload.deadline() * 1e3;  // every candidate's
  std::optional<int64_t> count;
  std::vector<std::string> seen;  // by shard index: the file that gave it
  std::vector<bool> filled(p.candidates.size(), false);
  for (const auto& [file, j] : shards) {
    try {
      if (!j.is_object() || !j.contains("metronome_plan_shard")) {
        throw ConfigError(file + ": expected a plan shard (the output of plan --shard I/N)");
      }
      const json& sh = j.at("metronome_plan_shard");
      const int64_t index = sh.at("index").get<int64_t>(), n = sh.at("count").get<int64_t>();
      if (n < 1 || index < 0 || index >= n) {
        throw ConfigError(file + ": metronome_plan_shard: expected 0 <= index < count");
      }
      if (count && n != *count) {
        throw ConfigError(fmt::format(
            "{}: metronome_plan_shard.count: shard {} of {}, expected one of {} as {} is", file,
            index, n, *count, shards.front().first));
      }
      count = n;
      seen.resize(static_cast<size_t>(n));
      if (!seen[static_cast<size_t>(index)].empty()) {
        throw ConfigError(fmt::format("{}: shard {} of {} given twice (also {})", file, index, n,
                                      seen[static_cast<size_t>(index)]));
      }
      seen[static_cast<size_t>(index)] = file;
      if (j.at("scenario") != scenario) {
        throw ConfigError(file +
                          ": scenario: this shard planned another scenario than the one given "
                          "here; expected the --scenario and --set the shards were given");
      }
      if (j.at("search") != search) {
        std::string key;  // the first option that differs
        for (const auto& [k, v] : search.items()) {
          if (!j.at("search").contains(k) || j.at("search").at(k) != v) {
            key = k;
            break;
          }
        }
        throw ConfigError(fmt::format(
            "{}: search: this shard searched other candidates ({} {}), expected the same options "
            "as here ({} {})",
            file, key, j.at("search").value(key, json(nullptr)).dump(), key,
            search.value(key, json(nullptr)).dump()));
      }
      for (const json& row : j.at("candidates")) {
        if (!row.is_object() || !row.contains("index") || !row.at("index").is_number_unsigned()) {
          throw ConfigError(fmt::format("{}: candidates: expected rows with a whole index, got {}",
                                        file, row.dump().substr(0, 80)));
        }
        const auto i = row.at("index").get<size_t>();
        if (i >= p.candidates.size() || static_cast<int64_t>(i) % n != index ||
            row.at("candidate") != candidate_key(p.candidates[i])) {
          throw ConfigError(
              fmt::format("{}: candidates: candidate {} is not this plan's", file, i));
        }
        PlanCandidate& c = p.candidates[i];
        const std::string where = fmt::format("{}: candidates[{}]", file, i);
        c.best = fleet_from_state(row.at("best"), where + ".best", deadline_ms);
        c.short_of = fleet_from_state(row.at("one_fewer"), where + ".one_fewer", deadline_ms);
        const json& runs = row.at("simulations");
        if (!runs.is_number_unsigned()) {
          throw ConfigError(
              fmt::format("{}.simulations: expected a count >= 0, got {}", where, runs.dump()));
        }
        c.runs = runs.get<int64_t>();
        filled[i] = true;
      }
    } catch (const json::exception& e) {
      throw ConfigError(file + ": not a whole plan shard (" + e.what() + ")");
    }
  }
  for (size_t k = 0; k < seen.size(); ++k) {
    if (seen[k].empty()) {
      throw ConfigError(fmt::format("plan --merge: shard {} of {} is missing", k, *count));
    }
  }
  for (size_t i = 0; i < filled.size(); ++i) {
    if (!filled[i]) {
      throw ConfigError(
          fmt::format("{}: candidates: candidate {} is missing", seen[i % seen.size()], i));
    }
  }
  rank(p);
  return p;
}

json plan_json(const Scenario& base, const PlanSpec& spec, const Plan& p) {
  json rows = json::array();
  for (const auto& c : p.candidates) {
    const bool windowed = c.kv_policy == "windowed";
    rows.push_back({{"gpu", c.gpu},
                    {"tensor_parallel", c.tensor_parallel},
                    {"kv_policy", c.kv_policy},
                    {"window_tokens", windowed ? json(c.window) : json(nullptr)},
                    {"sink_tokens", windowed ? json(c.sinks) : json(nullptr)},
                    {"autoscaled", c.autoscaled},
                    {"price_per_gpu_hour", c.price_per_gpu_hour},
                    {"ppl_ratio", c.ppl_ratio ? json(*c.ppl_ratio) : json(nullptr)},
                    {"skipped", c.skipped.empty() ? json(nullptr) : json(c.skipped)},
                    {"fleet", fleet_json(c.best)},
                    {"one_fewer", fleet_json(c.short_of)},
                    {"gpus", c.best ? json(c.best->replicas * c.tensor_parallel) : json(nullptr)},
                    {"cost_per_hour", c.best ? json(c.cost_per_hour()) : json(nullptr)},
                    {"cost_per_call_hour", c.best ? json(c.cost_per_call_hour()) : json(nullptr)},
                    {"simulations", c.runs}});
  }
  return {{"metronome_version", version_string()},
          {"scenario", to_json(base)},
          {"search", search_json(spec)},
          {"best", p.best ? json(*p.best) : json(nullptr)},
          {"candidates", rows}};
}

std::string plan_text(const Scenario& base, const PlanSpec& spec, const Plan& p) {
  std::ostringstream o;
  size_t tried = 0, skipped = 0;
  for (const auto& c : p.candidates) (c.skipped.empty() ? tried : skipped) += 1;
  o << fmt::format(
      "plan       {}: {} candidates (GPU x TP x W x S), {} tried, {} skipped; up to {} "
      "replicas\n",
      base.name, p.candidates.size(), tried, skipped, spec.max_replicas);
  o << fmt::format(
      "tests      over {:.0f} s of the scenario's traffic: no replica stalled, no call turned "
      "away, true p99 <= {:.1f} ms\n",
      base.horizon_s, base.workload.deadline() * 1e3);
  // Candidates run windowed or unbounded KV (--kv): said where the scenario had another rule.
  if (!base.kv_policy.window_or_unbounded()) {
    o << fmt::format("kv_policy  the scenario's {} is replaced by each candidate's KV (--kv)\n",
                     base.kv_policy.policy->describe());
  }
  if (!p.best && tried == 0) {
    o << "best       none: every candidate was skipped (each row below says why)\n";
  } else if (!p.best) {
    o << "best       none: no candidate meets the tests within max_replicas\n";
  } else {
    const PlanCandidate& b = p.candidates[*p.best];
    o << fmt::format(
        "best       {}{} x {} (TP {}, {} GPUs), {}: ${:.2f} per hour, ${:.4f} per "
        "call-hour; true p99 {:.1f} ms, {:.2f}% silent, {} of {} calls rejected\n",
        b.autoscaled ? "autoscaled up to " : "", b.best->replicas, b.gpu, b.tensor_parallel,
        b.best->replicas * b.tensor_parallel, kv_label(b), b.cost_per_hour(),
        b.cost_per_call_hour(), b.best->true_p99_ms, 100 * b.best->silent_fraction,
        b.best->calls_rejected, b.best->calls_offered);
    if (b.short_of) {
      o << fmt::format("           one replica fewer ({}): {}\n", b.short_of->replicas,
                       b.short_of->why_not);
    }
  }
  o << fmt::format("{:<10} {:>3} {:>6} {:>4} {:>9} {:>5} {:>10} {:>12} {:>10}  {}\n", "gpu", "tp",
                   "W", "S", "replicas", "gpus", "$/hour", "$/call-hour", "p99 ms", "note");
  size_t shown = 0;
  for (const auto& c : p.candidates) {
    if (++shown > 12) break;
    // An unbounded candidate has no window or sinks: "-" in both columns.
    const bool windowed = c.kv_policy == "windowed";
    const std::string w = windowed ? std::to_string(c.window) : "-";
    const std::string s = windowed ? std::to_string(c.sinks) : "-";
    if (c.best) {
      std::string note = c.kv_policy == "unbounded" ? "unbounded KV" : "";
      if (c.autoscaled) {
        note += fmt::format("{}autoscaled: {:.1f} GPU-hours", note.empty() ? "" : "; ",
                            c.best->gpu_hours);
      }
      o << fmt::format("{:<10} {:>3} {:>6} {:>4} {:>9} {:>5} {:>10.2f} {:>12.4f} {:>10.1f}{}\n",
                       c.gpu, c.tensor_parallel, w, s, c.best->replicas,
                       c.best->replicas * c.tensor_parallel, c.cost_per_hour(),
                       c.cost_per_call_hour(), c.best->true_p99_ms,
                       note.empty() ? "" : "  " + note);
    } else {
      o << fmt::format(
          "{:<10} {:>3} {:>6} {:>4} {:>9} {:>5} {:>10} {:>12} {:>10}  {}\n", c.gpu,
          c.tensor_parallel, w, s, "-", "-", "-", "-", "-",
          !c.skipped.empty() ? "skipped: " + c.skipped.substr(0, 100)
          : c.short_of ? fmt::format("{} replicas: {}", c.short_of->replicas, c.short_of->why_not)
                       : std::string());
    }
  }
  if (p.candidates.size() > 12) {
    o << fmt::format("           ({} more in --json)\n", p.candidates.size() - 12);
  }
  return o.str();
}

}  // namespace metronome
