#include "sim/scheduler/vllm_v1.h"

#include <algorithm>

#include "sim/cost/pass_shape.h"
#include "sim/cost/step_time.h"

namespace metronome {
namespace {

VllmSchedulerConfig vllm_config(const Scenario& s) {
  VllmSchedulerConfig c;
  c.block_size = s.engine.block_size;
  c.max_num_seqs = s.engine.max_sessions_per_step;
  c.max_num_batched_tokens = s.engine.max_num_batched_tokens;
  if (const kv::Window w = s.kv_policy.window(); !w.unbounded()) {
    c.sliding_window = w.window + 1;  // vLLM's window counts the query
    c.sink_tokens = w.sinks;
  }
  c.resumable = s.engine.session_model == "resumable";
  c.prefix_caching = s.engine.enable_prefix_caching;
  return c;
}

}  // namespace

VllmV1Scheduler::VllmV1Scheduler(EngineCore& core)
    : core_(core), vllm_(vllm_config(core.scenario), core.pool) {}

void VllmV1Scheduler::open(int64_t id) {
  vllm_.open(id);
  core_.queue(id);
}

std::optional<Time> VllmV1Scheduler::start_step(Time now) {
  EngineCore& c = core_;
  const FrameRule& rule = c.rule;
  while (!c.ready.empty()) {
    const Ticket t = c.ready.front();
    if (!c.valid(t)) {
      c.ready.pop_front();
      continue;
    }
    Session& s = c.sessions[t.id];
    if (s.next_release > now) break;
    c.ready.pop_front();
    vllm_.add_frame(t.id, rule.growth.prompt_at(s.frames_added), rule.n_in,
                    std::max<int64_t>(1, rule.n_out));
    if (++s.frames_added < s.frames_total) {
      s.next_release = c.release_time(s, s.frames_added);
      c.queue(t.id);
    }
  }
  plan_ = vllm_.schedule();
  const VllmScheduler::StepPlan& p = plan_;
  if (!p.alloc_failed.empty()) c.note_exhaustion(now);
  for (size_t i = 0; i < p.preempted.size(); ++i) {
    ++c.result.preemptions;
    if (!c.result.first_preempt_s) c.result.first_preempt_s = to_seconds(now);
    if (c.observer) c.observer->on_preempt(now, p.preempted[i], p.preempted_blocks[i]);
  }
  // Requests left waiting in a step that could not allocate are the stalled sessions.
  c.stalled = p.alloc_failed.empty() ? 0 : vllm_.waiting();
  if (!p.alloc_failed.empty() && c.observer) c.observer->on_stall(now, c.stalled);
  if (p.empty()) {
    c.wake_at_next_release(now);
    return std::nullopt;
  }
  PassShape pass;
  for (const VllmScheduler::Scheduled& x : p.scheduled) {
    add_chunk(pass, 1, x.tokens, rule.residency.cached(x.computed), rule.w);
    c.result.max_resident_blocks_per_session =
        std::max(c.result.max_resident_blocks_per_session, vllm_.blocks_held(x.session));
  }
  return now + step_duration(c.cost.pass_seconds(pass), c.cost);
}

void VllmV1Scheduler::end_step(Time now) {
  for (const VllmScheduler::FrameDone& d : vllm_.update_from_output(plan_)) {
    Session& s = core_.sessions[d.session];
    const Time scheduled = s.arrival + d.frame * core_.period;
    core_.ledger.serve(scheduled, now - scheduled, s.count);
    ++s.next_frame;
  }
}

}  // namespace metronome
