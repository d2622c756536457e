// The simulator's vLLM V1 step model against vLLM 0.33.0's own Scheduler and KVCacheManager: each
// case in tests/sim/vllm/cases/ was replayed through vLLM's real code by scripts/vllm_peer.sh and
// its steps kept in tests/sim/vllm/golden/. This test replays the same case through VllmScheduler
// with the same driver (tests/sim/vllm/FORMAT.md) and requires every step to match: tokens
// scheduled per request and their order, preemption victims, allocation failures, blocks held per
// session, frames completed, queue lengths and free blocks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/engine/engine.h"
#include "sim/vllm/vllm_scheduler.h"

namespace metronome {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kDir = fs::path(METRONOME_SOURCE_DIR) / "tests/sim/vllm";

json read(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return json::parse(in);
}

VllmSchedulerConfig config_of(const json& c) {
  VllmSchedulerConfig v;
  v.block_size = c.at("block_size");
  v.max_num_seqs = c.at("max_num_seqs");
  v.max_num_batched_tokens = c.at("max_num_batched_tokens");
  const json& kv = c.at("kv");
  const std::string type = kv.at("type");
  if (type == "sliding_window" || type == "sinks") v.sliding_window = kv.at("sliding_window");
  v.keep_prompt = type == "sinks";  // the peer runs vLLM's R-SWA with the sinks as the prompt
  v.resumable = c.at("session_model") == "resumable";
  v.prefix_caching = c.at("enable_prefix_caching");
  return v;
}

// The peer's driver (FORMAT.md), step by step, recorded in the golden's form.
json replay(const json& c, int64_t usable_blocks) {
  BlockCounter pool(usable_blocks);
  VllmScheduler sched(config_of(c), pool);
  const json& sessions = c.at("sessions");
  const int64_t n = static_cast<int64_t>(sessions.size());
  json steps = json::array();
  const bool resumable = c.at("session_model") == "resumable";
  json first_failure = nullptr, first_preemption = nullptr, first_stall = nullptr;
  int64_t frames_done = 0, preemptions = 0, deferred = 0;
  // A call without depart_step hangs up one period after its last frame's release.
  auto depart = [&](const json& s) -> int64_t {
    return s.at("depart_step").is_null()
               ? s.at("arrival_step").get<int64_t>() +
                     s.at("frames").get<int64_t>() * s.at("period_steps").get<int64_t>()
               : s.at("depart_step").get<int64_t>();
  };
  std::vector<int64_t> pending(static_cast<size_t>(n), 0), submitted(static_cast<size_t>(n), 0);
  for (int64_t k = 0; k < c.at("steps").get<int64_t>(); ++k) {
    for (int64_t i = 0; i < n; ++i) {
      if (depart(sessions[i]) == k) sched.finish(i);
    }
    for (int64_t i = 0; i < n; ++i) {
      const json& s = sessions[i];
      if (depart(s) <= k) continue;
      const int64_t a = s.at("arrival_step"), period = s.at("period_steps");
      if (k >= a && (k - a) % period == 0 && (k - a) / period < s.at("frames").get<int64_t>()) {
        ++pending[i];
      }
      // Per-frame requests: a frame due while the previous request runs is submitted once it ends.
      if (pending[i] > 0 && (resumable || sched.idle(i))) {
        --pending[i];
        if (k != a + submitted[i] * period) ++deferred;  // submitted later than released
        sched.add_frame(i, submitted[i]++ == 0 ? s.at("prompt_tokens").get<int64_t>() : 0,
                        s.at("input_tokens"), s.at("output_tokens"));
      }
    }
    const VllmScheduler::StepPlan plan = sched.schedule();
    json step = {{"step", k}};
    json scheduled = json::array(), preempted = json::array(), failed = json::array();
    for (const auto& x : plan.scheduled) scheduled.push_back({x.session, x.tokens});
    for (const auto v : plan.preempted) preempted.push_back(v);
    for (const auto v : plan.alloc_failed) failed.push_back(v);
    json blocks = json::array();
    for (int64_t i = 0; i < n; ++i) {
      if (sched.blocks_held(i) > 0) blocks.push_back({i, sched.blocks_held(i)});
    }
    const int64_t running = sched.running(), waiting = sched.waiting(), paused = sched.paused();
    const int64_t free_blocks = pool.free();
    const auto done = sched.update_from_output(plan);
    json dj = json::array();
    for (const auto& d : done) dj.push_back({d.session, d.frame});
    if (!plan.alloc_failed.empty() && first_failure.is_null()) {
      first_failure = {{"step", k}, {"session", plan.alloc_failed.front()}};
    }
    if (!plan.preempted.empty() && first_preemption.is_null()) {
      first_preemption = {{"step", k}, {"victim", plan.preempted.front()}};
    }
    if (plan.scheduled.empty() && waiting > 0 && first_stall.is_null()) first_stall = k;
    frames_done += static_cast<int64_t>(done.size());
    preemptions += static_cast<int64_t>(plan.preempted.size());
    step["scheduled"] = scheduled;
    step["preempted"] = preempted;
    step["alloc_failed"] = failed;
    step["blocks"] = blocks;
    step["frames_done"] = dj;
    step["running"] = running;
    step["waiting"] = waiting;
    step["paused"] = paused;
    step["free_blocks"] = free_blocks;
    steps.push_back(step);
  }
  return {{"steps", steps},
          {"summary",
           {{"first_alloc_failure", first_failure},
            {"first_preemption", first_preemption},
            {"first_stall_step", first_stall},
            {"frames_done", frames_done},
            {"preemptions", preemptions},
            {"deferred_releases", deferred}}}};
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  if (!fs::exists(kDir / "golden")) return names;
  for (const auto& e : fs::directory_iterator(kDir / "golden")) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class VllmConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(VllmConformance, EveryStepMatchesVllm) {
  const json golden = read(kDir / "golden" / (GetParam() + ".json"));
  ASSERT_EQ(golden.at("vllm_version"), "0.33.0");
  const json got = replay(golden.at("case"), golden.at("usable_blocks"));
  const json& want_steps = golden.at("steps");
  const json& got_steps = got.at("steps");
  // The first differing step, whole, so a mismatch reads as a diff of one scheduler decision.
  for (size_t i = 0; i < std::min(want_steps.size(), got_steps.size()); ++i) {
    json want = want_steps[i];
    for (auto it = want.begin(); it != want.end();) {  // fields the model does not report
      it = got_steps[i].contains(it.key()) ? std::next(it) : want.erase(it);
    }
    ASSERT_EQ(got_steps[i].dump(), want.dump()) << GetParam() << ": step record " << i;
  }
  ASSERT_EQ(got_steps.size(), want_steps.size()) << GetParam();
  for (const auto& [key, want] : golden.at("summary").items()) {
    ASSERT_TRUE(got.at("summary").contains(key)) << GetParam() << ": summary." << key;
    EXPECT_EQ(got.at("summary").at(key).dump(), want.dump()) << GetParam() << ": summary." << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, VllmConformance, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

TEST(VllmConformance, GoldensArePresent) {
  EXPECT_GE(case_names().size(), 6u) << "tests/sim/vllm/golden: run scripts/vllm_peer.sh";
}

}  // namespace
}  // namespace metronome

namespace metronome {
namespace {

// The engine in time runs a golden whose sessions are one arrival process: with every step costing
// 1 ms, step k of the case is [k, k+1) ms, and the engine must serve the frames vLLM served, stall
// where vLLM first failed to allocate, and preempt as often.
void engine_matches(const std::string& name, const std::string& arrivals) {
  const json g = read(kDir / "golden" / (name + ".json"));
  const json& c = g.at("case");
  const json& s0 = c.at("sessions").at(0);
  const double ms = 1e-3;
  const Scenario s = load_scenario(
      "",
      {"model=tiny", "gpu=h200", "engine.scheduler=vllm_v1",
       "engine.block_size=" + c.at("block_size").dump(),
       "engine.num_blocks=" + c.at("num_gpu_blocks").dump(),
       "engine.max_num_seqs=" + c.at("max_num_seqs").dump(),
       "engine.max_num_batched_tokens=" + c.at("max_num_batched_tokens").dump(),
       "engine.enable_prefix_caching=" + c.at("enable_prefix_caching").dump(),
       "workload.arrival=" + arrivals,
       "workload.duration={\"type\":\"fixed\",\"seconds\":" +
           std::to_string(s0.at("frames").get<int>() * s0.at("period_steps").get<int>() * ms) + "}",
       "workload.frame_period_s=" + std::to_string(s0.at("period_steps").get<int>() * ms),
       "workload.prompt_tokens=" + s0.at("prompt_tokens").dump(),
       "workload.input_tokens_per_frame=" + s0.at("input_tokens").dump(),
       "workload.output_tokens_per_frame=" + s0.at("output_tokens").dump(), "cost_model.type=fixed",
       "cost_model.step_overhead_s=0.001",
       "horizon_s=" + std::to_string(c.at("steps").get<int>() * ms)});
  const RunResult r = simulate(s);
  const json& want = g.at("summary");
  EXPECT_EQ(r.frames_served, want.at("frames_done").get<int64_t>()) << name;
  EXPECT_EQ(r.preemptions, want.at("preemptions").get<int64_t>()) << name;
  if (want.at("first_alloc_failure").is_null()) {
    EXPECT_FALSE(r.first_stall_s.has_value()) << name;
  } else {
    ASSERT_TRUE(r.first_stall_s.has_value()) << name;
    EXPECT_NEAR(*r.first_stall_s, want.at("first_alloc_failure").at("step").get<int>() * ms, 1e-9)
        << name;
  }
}

TEST(VllmConformance, EngineInTimeMatchesTheHeadOfLineStall) {
  engine_matches("resumable_unbounded_stall",
                 "{\"type\":\"fixed_interval\",\"sessions\":3,\"interval_s\":0.004}");
}

TEST(VllmConformance, EngineInTimeMatchesTheStalledQueueResuming) {
  engine_matches("batch_cap_retry_seqs8",
                 "{\"type\":\"fixed_interval\",\"sessions\":7,\"interval_s\":0.15}");
}

}  // namespace
}  // namespace metronome

#include "sim/cost/pass_shape.h"

namespace metronome {
namespace {

class StepLog : public RunObserver {
 public:
  void on_step(Time a, Time b, int64_t n, int64_t) override { steps.push_back({a, b, n}); }
  struct Step {
    Time start, end;
    int64_t batch;
  };
  std::vector<Step> steps;
};

// Chunked prefill in time: a 3,000-token prompt under a 1,024-token budget is three vLLM steps of
// 1,024, 1,024 and 952 tokens, each as long as the cost model prices that chunk, and the frame is
// answered when the last one ends.
TEST(VllmConformance, LongPromptIsChunkedUnderTheTokenBudget) {
  const Scenario s = load_scenario(
      "",
      {"model=moshi", "gpu=h200", "engine.scheduler=vllm_v1", "engine.max_num_batched_tokens=1024",
       "workload.arrival={\"type\":\"all_at_once\",\"sessions\":1}",
       "workload.duration={\"type\":\"fixed\",\"seconds\":0.08}", "workload.prompt_tokens=2999",
       "workload.input_tokens_per_frame=1", "workload.output_tokens_per_frame=1", "horizon_s=1"});
  const auto cost = make_cost_model(s);
  StepLog log;
  Engine engine(s, *cost, &log);
  const RunResult r = engine.run();
  ASSERT_EQ(log.steps.size(), 3u);
  const int64_t chunks[3][2] = {{1024, 0}, {1024, 1024}, {952, 2048}};
  Time t = 0;
  for (int i = 0; i < 3; ++i) {
    PassShape p;
    add_chunk(p, 1, chunks[i][0], chunks[i][1], kv::Window{});
    EXPECT_EQ(log.steps[i].start, t) << i;
    EXPECT_EQ(log.steps[i].end - log.steps[i].start, from_seconds(cost->pass_seconds(p))) << i;
    t = log.steps[i].end;
  }
  EXPECT_EQ(r.frames_served, 1);
  EXPECT_GT(to_seconds(t), 0.0);
}

}  // namespace
}  // namespace metronome
