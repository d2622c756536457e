#include "replay/realtime_engine.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "base/config_error.h"
#include "base/rng.h"
#include "sim/admission/admission_controller.h"
#include "sim/engine/call_span.h"
#include "sim/output/recorded_run.h"
#include "sim/pool/pool_sizing.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome::replay {

void check_replay_bounds(const Scenario& s) {
  const std::string where = s.source + ": real engine: ";
  if (s.workload.frame_period_s < kMinReplayFramePeriodS) {
    throw ConfigError(fmt::format(
        "{}workload.frame_period_s: expected at least {:g} s for a real-time run, got {:g}", where,
        kMinReplayFramePeriodS, s.workload.frame_period_s));
  }
  const double callers = s.workload.arrival.policy->expected_callers(s.horizon_s);
  if (callers > static_cast<double>(kMaxReplayCallers)) {
    throw ConfigError(fmt::format(
        "{}workload.arrival: {:.3g} callers; expected at most {} for a real-time run (lower the "
        "sessions or rate, or horizon_s)",
        where, callers, kMaxReplayCallers));
  }
  const double frames = callers * (std::floor(s.horizon_s / s.workload.frame_period_s) + 1);
  if (frames > static_cast<double>(kMaxReplayFrames)) {
    throw ConfigError(fmt::format(
        "{}the run would record up to {:.3g} frames (callers x horizon_s / "
        "workload.frame_period_s); expected at most {} for a real-time run (shorten horizon_s, "
        "lengthen workload.frame_period_s or lower the sessions)",
        where, frames, kMaxReplayFrames));
  }
}

kernels::ModelShape model_shape(const ModelConfig& m) {
  kernels::ModelShape s{};
  s.name = m.name;
  s.layers = static_cast<int32_t>(m.layers);
  s.hidden = static_cast<int32_t>(m.hidden_size);
  s.q_heads = static_cast<int32_t>(m.attention_heads);
  s.kv_heads = static_cast<int32_t>(m.kv_heads);
  s.head_dim = static_cast<int32_t>(m.head_dim);
  s.ffn = static_cast<int32_t>(m.moe() ? m.expert_ffn_size : m.ffn_size);
  s.experts = static_cast<int32_t>(m.experts);
  s.top_k = static_cast<int32_t>(m.experts_active);
  return s;
}

kv::Window replayed_window(const Scenario& s) {
  const std::string where =
      s.source + ": real engine: kv_policy.type \"" + s.kv_policy.type() + "\" ";
  const auto w = s.kv_policy.policy->window();
  if (!w) {
    throw ConfigError(where +
                      "is no sliding window, which the kernels run; expected "
                      "\"unbounded\" or \"windowed\"");
  }
  if (s.kv_policy.policy->context_cap()) {
    throw ConfigError(where +
                      "ends calls at a context cap, which the real engine does not; "
                      "expected \"unbounded\" or \"windowed\"");
  }
  return *w;
}

namespace {

int32_t checked_blocks(const Scenario& s) {
  const int64_t n = size_pool(s).num_blocks;
  if (n > std::numeric_limits<int32_t>::max()) {
    throw ConfigError(s.source + ": the real engine's pool holds at most 2^31 - 1 blocks (" +
                      std::to_string(n) + " asked); set engine.num_blocks or use --num-blocks");
  }
  return static_cast<int32_t>(n);
}

// CPU time of the calling thread: what the calibration measures (calibrate/benchmarks.cpp), so a
// gap between a step's wall time and this is time the machine gave to someone else.
Time thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return Time{ts.tv_sec} * kNanosPerSecond + ts.tv_nsec;
}

}  // namespace

RealtimeEngine::RealtimeEngine(const Scenario& s, StepBackend& backend, Clock& clock)
    : scenario_(s),
      backend_(backend),
      clock_(clock),
      window_(replayed_window(s)),
      block_size_(static_cast<int32_t>(s.engine.block_size)),
      pool_(checked_blocks(s)),
      period_(std::max<Time>(1, from_seconds(s.workload.frame_period_s))),
      deadline_(from_seconds(s.workload.deadline())),
      silence_after_(from_seconds(s.engine.silence_after_s.value())),
      horizon_(from_seconds(s.horizon_s)),
      n_in_(s.workload.input_tokens_per_frame),
      n_out_(s.workload.output_tokens_per_frame),
      max_batch_(s.engine.max_sessions_per_step),
      growth_(s.workload.growth()),
      preempt_policy_(s.engine.exhaustion->preempts()),
      cap_(kNoCap) {
  const std::string where = s.source + ": real engine: ";
  // A fixed cap (none or static) is replayed; a controller that learns online is not.
  const auto controller = s.admission.policy->make_controller(s.workload.deadline());
  if (controller->adaptive()) {
    throw ConfigError(where + "admission.type \"" + s.admission.type() +
                      "\" is not supported (none or static)");
  }
  cap_ = controller->cap();
  if (s.workload.frame_jitter_s > 0) {
    throw ConfigError(where +
                      "workload.frame_jitter_s must be 0 (jittered releases are not replayed)");
  }
  if (preempt_policy_ && !window_.unbounded()) {
    throw ConfigError(where +
                      "preempt_recompute with windowed KV is not supported (the recomputed "
                      "sinks + window are not one contiguous range of positions); use stall");
  }
  // The frame's passes feed input + (output - 1) tokens (or output when there is no input); the KV
  // it appends must cover them.
  const int64_t fed = n_in_ + std::max<int64_t>(0, n_out_ - (n_in_ > 0 ? 1 : 0));
  if (growth_.per_frame < fed) {
    throw ConfigError(where + "workload.kv_tokens_per_frame (" + std::to_string(growth_.per_frame) +
                      ") must be at least the tokens the frame's passes feed (" +
                      std::to_string(fed) + " = input + output - 1)");
  }
  if (s.engine.block_size > 1 << 20) throw ConfigError(where + "engine.block_size too large");
  check_replay_bounds(s);

  // The seed's arrival and duration draws, exactly as the simulator makes them (their own streams).
  // Bounded: callers, then the frames they will send (each frame is one record in memory).
  Rng arrival_rng(s.seed, "arrivals"), duration_rng(s.seed, "durations");
  auto arrivals = make_arrival_process(s.workload.arrival);
  auto durations = make_duration_distribution(s.workload.duration);
  double frames = 0;
  while (auto t = arrivals->next(arrival_rng)) {
    if (*t > horizon_) break;
    if (static_cast<int64_t>(schedule_.size()) >= kMaxReplayCallers) {
      throw ConfigError(fmt::format(
          "{}workload.arrival: more than {} callers within the horizon; expected at most that "
          "many for a real-time run (lower the sessions or rate, or horizon_s)",
          where, kMaxReplayCallers));
    }
    schedule_.push_back({*t, durations->sample(duration_rng)});
    const double call_s = std::min(schedule_.back().duration_s, to_seconds(horizon_ - *t));
    frames += std::ceil(call_s / s.workload.frame_period_s) + 1;
    if (frames > static_cast<double>(kMaxReplayFrames)) {
      throw ConfigError(fmt::format(
          "{}the run would record more than {} frames (callers x call length / "
          "workload.frame_period_s); expected at most that many for a real-time run (shorten "
          "horizon_s, lengthen workload.frame_period_s or lower the sessions)",
          where, kMaxReplayFrames));
    }
  }
  result_.backend = backend.name();
  result_.device = backend.device();
  result_.kv_pool_bytes = backend.kv_pool_bytes();
}

int64_t RealtimeEngine::frame_tokens(const Session& s) const {
  return growth_.appended(s.next_frame);
}

void RealtimeEngine::mark(Time t) {
  result_.pool.push_back({t, pool_.used_blocks(), live_, stalled_});
}

void RealtimeEngine::take_blocks(int64_t before) {
  allocated_ += pool_.used_blocks() - before;
  result_.run.peak_pool_blocks =
      std::max<int64_t>(result_.run.peak_pool_blocks, pool_.used_blocks());
}
void RealtimeEngine::give_blocks(int64_t before) { released_ += before - pool_.used_blocks(); }

RealtimeResult RealtimeEngine::run() {
  clock_.start();
  mark(0);
  while (true) {
    const Time now = clock_.now();
    if (now > horizon_) break;
    handle_events(now, false);
    if (try_start_step(now)) {
      run_step(now);
      const Time done = clock_.now();
      if (done > horizon_) {  // the step outlived the run: its frames count as never served
        handle_events(horizon_, false);
        break;
      }
      // The simulator's order at one instant: the step ends, then departures, then arrivals; what
      // happens at `done` itself waits for the next turn of the loop.
      handle_events(done, true);
      on_step_done(done);
    } else {
      clock_.sleep_until(next_wake(now));
    }
  }
  finish();
  return std::move(result_);
}

// Departures and arrivals up to `upto` (or strictly before it) in time order; at equal times a
// departure goes first, as in the simulator's event queue (sim/engine/event_queue.h).
void RealtimeEngine::handle_events(Time upto, bool strictly_before) {
  const auto due = [&](Time t) { return strictly_before ? t < upto : t <= upto; };
  while (true) {
    Session* dep = nullptr;
    for (auto& s : sessions_) {
      if (s->live && due(s->end) && (!dep || s->end < dep->end)) dep = s.get();
    }
    const bool arr = next_arrival_ < schedule_.size() && due(schedule_[next_arrival_].t);
    if (dep && (!arr || dep->end <= schedule_[next_arrival_].t)) {
      on_departure(*dep);
    } else if (arr) {
      on_arrival(schedule_[next_arrival_], static_cast<int64_t>(next_arrival_));
      ++next_arrival_;
    } else {
      return;
    }
  }
}

void RealtimeEngine::on_arrival(const Arrival& a, int64_t caller) {
  ++result_.run.sessions_arrived;
  if (live_ >= cap_) {
    ++result_.run.sessions_rejected;
    return;
  }
  auto sp = std::make_unique<Session>(window_, block_size_);
  Session& s = *sp;
  s.id = static_cast<int64_t>(sessions_.size());
  s.caller = caller;
  s.arrival = a.t;
  const CallSpan call = call_span(a.t, a.duration_s, horizon_, period_);
  s.end = call.end;
  s.frames_total = call.frames;
  s.admit_order = next_admit_order_++;
  s.next_release = a.t;
  sessions_.push_back(std::move(sp));
  ++live_;
  result_.run.peak_live_sessions = std::max(result_.run.peak_live_sessions, live_);
  enqueue(s.id);
  mark(a.t);
}

void RealtimeEngine::on_departure(Session& s) {
  const int64_t before = pool_.used_blocks();
  s.blocks.release_all(pool_);
  give_blocks(before);
  if (s.stalled) --stalled_;
  s.live = false;
  s.stalled = false;
  --live_;
  ++result_.run.sessions_departed;
  std::erase(ready_, s.id);
  mark(s.end);
}

void RealtimeEngine::enqueue(int64_t id) {
  const Time r = sessions_[static_cast<size_t>(id)]->next_release;
  auto it = ready_.end();
  while (it != ready_.begin() && sessions_[static_cast<size_t>(*(it - 1))]->next_release > r) --it;
  ready_.insert(it, id);
}

bool RealtimeEngine::reserve(Session& s, Time now) {
  // A preempted session's blocks start empty: its history is appended again with the frame.
  const int64_t n = frame_tokens(s) + (s.ctx - s.blocks.tokens());
  const int64_t need =
      kv::step_blocks(s.blocks.tokens(), n, window_, block_size_) - s.blocks.held_blocks();
  const int64_t before = pool_.used_blocks();
  bool ok = s.blocks.append(pool_, n);
  take_blocks(before);
  if (!ok && preempt_policy_ && preempt_newer_than(s, need, now)) {
    const int64_t b2 = pool_.used_blocks();
    ok = s.blocks.append(pool_, n);
    take_blocks(b2);
  }
  if (ok) {
    if (s.stalled) {
      s.stalled = false;
      --stalled_;
    }
    if (s.preempted) {
      s.preempted = false;
      s.admit_order = next_admit_order_++;
    }
    return true;
  }
  auto& r = result_.run;
  if (!r.first_stall_s) {
    r.first_stall_s = to_seconds(now);
    result_.first_stall_release_s = to_seconds(s.next_release);
    result_.first_stall_frame = s.next_frame;
    result_.first_stall_session = s.id;
  }
  if (preempt_policy_) {
    if (s.blocks.held_blocks() > 0) preempt(s, now);  // the newest holding blocks: vLLM evicts it
  } else if (!s.stalled) {
    s.stalled = true;
    ++stalled_;
  }
  return false;
}

bool RealtimeEngine::preempt_newer_than(const Session& s, int64_t need, Time now) {
  // Newest admission first, skipping sessions in this step or holding nothing.
  std::vector<Session*> order;
  for (auto& v : sessions_) {
    if (v->live && !v->preempted && v->admit_order > s.admit_order) order.push_back(v.get());
  }
  std::sort(order.begin(), order.end(),
            [](const Session* a, const Session* b) { return a->admit_order > b->admit_order; });
  for (Session* v : order) {
    if (pool_.free_blocks() >= need) break;
    if (v->in_step || v->blocks.held_blocks() == 0) continue;
    preempt(*v, now);
  }
  return pool_.free_blocks() >= need;
}

void RealtimeEngine::preempt(Session& v, Time now) {
  const int64_t before = pool_.used_blocks();
  v.blocks.release_all(pool_);
  give_blocks(before);
  // Unbounded only (checked at construction): the whole history is recomputed into fresh blocks.
  v.blocks = kernels::SessionBlocks(window_, block_size_);
  v.recompute = v.ctx;
  v.preempted = true;
  ++result_.run.preemptions;
  auto& r = result_.run;
  if (!r.first_preempt_s) r.first_preempt_s = to_seconds(now);
  if (!r.first_stall_s) {
    r.first_stall_s = to_seconds(now);
    result_.first_stall_release_s = to_seconds(v.next_release);
    result_.first_stall_frame = v.next_frame;
    result_.first_stall_session = v.id;
  }
}

bool RealtimeEngine::try_start_step(Time now) {
  batch_.clear();
  std::vector<int64_t> kept;
  while (!ready_.empty() && static_cast<int64_t>(batch_.size()) < max_batch_) {
    Session& s = *sessions_[static_cast<size_t>(ready_.front())];
    if (s.next_release > now) break;
    ready_.pop_front();
    if (reserve(s, now)) {
      s.in_step = true;
      batch_.push_back(s.id);
    } else {
      kept.push_back(s.id);
    }
  }
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) ready_.push_front(*it);
  mark(now);
  return !batch_.empty();
}

// The step's passes, as the simulator's cost model counts them: one ingest pass (input tokens, plus
// the prompt on a first frame, plus a preempted session's history), output - 1 decode passes of one
// token, then a write-only pass for the rest of the frame's KV.
void RealtimeEngine::run_step(Time now) {
  StepRecord rec;
  rec.start = now;
  const Time cpu0 = thread_cpu_now();
  rec.sessions = static_cast<int64_t>(batch_.size());
  Time oldest = now;
  std::vector<const kernels::SessionBlocks*> ptrs;
  int32_t max_blocks = 1;
  for (int64_t id : batch_) {
    const Session& s = *sessions_[static_cast<size_t>(id)];
    oldest = std::min(oldest, s.next_release);
    ptrs.push_back(&s.blocks);
    max_blocks = std::max(max_blocks, static_cast<int32_t>(s.blocks.table().size()));
  }
  result_.max_start_lag_s = std::max(result_.max_start_lag_s, to_seconds(now - oldest));
  const std::vector<int32_t> tables = kernels::dense_block_tables(ptrs, max_blocks);

  // Per session: new input tokens (with the prompt), query tokens of the ingest pass, decode
  // passes.
  struct Plan {
    int64_t ctx, fresh, q, decode, write_only;
  };
  std::vector<Plan> plan;
  int64_t decode_passes = 0, write_pass = 0;
  for (int64_t id : batch_) {
    const Session& s = *sessions_[static_cast<size_t>(id)];
    Plan p;
    p.ctx = s.ctx;
    p.fresh = n_in_ + growth_.prompt_at(s.next_frame);
    p.q = p.fresh + s.recompute;
    p.decode = std::max<int64_t>(0, n_out_ - (p.q > 0 ? 1 : 0));
    p.write_only = frame_tokens(s) - p.fresh - p.decode;
    decode_passes = std::max(decode_passes, p.decode);
    write_pass = std::max(write_pass, p.write_only);
    plan.push_back(p);
  }
  const auto run_pass = [&](auto q_len_of, auto seq_len_of, bool attend) {
    PassBatch pass;
    pass.attend = attend;
    pass.max_blocks = max_blocks;
    for (size_t i = 0; i < plan.size(); ++i) {
      const int64_t q = q_len_of(plan[i]);
      if (q <= 0) continue;
      pass.q_start.push_back(pass.q_start.back() + static_cast<int32_t>(q));
      pass.seq_lens.push_back(static_cast<int32_t>(seq_len_of(plan[i])));
      pass.block_tables.insert(pass.block_tables.end(),
                               tables.begin() + static_cast<ptrdiff_t>(i) * max_blocks,
                               tables.begin() + static_cast<ptrdiff_t>(i + 1) * max_blocks);
    }
    if (pass.sessions() == 0) return;
    backend_.run(pass);
    rec.query_tokens += pass.total_q();
    ++rec.passes;
  };
  // Ingest: positions [ctx + fresh - q, ctx + fresh).
  run_pass([](const Plan& p) { return p.q; }, [](const Plan& p) { return p.ctx + p.fresh; }, true);
  for (int64_t j = 1; j <= decode_passes; ++j) {
    run_pass([j](const Plan& p) { return p.decode >= j ? int64_t{1} : int64_t{0}; },
             [j](const Plan& p) { return p.ctx + p.fresh + j; }, true);
  }
  if (write_pass > 0) {
    run_pass([](const Plan& p) { return p.write_only; },
             [](const Plan& p) { return p.ctx + p.fresh + p.decode + p.write_only; }, false);
  }
  if (!backend_.output_finite())
    throw std::runtime_error("real engine: a pass produced NaN or inf");
  rec.end = clock_.now();
  rec.cpu = thread_cpu_now() - cpu0;
  result_.busy_cpu_s += to_seconds(rec.cpu);
  result_.steps.push_back(rec);
  ++result_.run.engine_steps;
  result_.run.busy_s += to_seconds(rec.end - rec.start);
}

void RealtimeEngine::on_step_done(Time now) {
  const int64_t before = pool_.used_blocks();
  for (int64_t id : batch_) {
    Session& s = *sessions_[static_cast<size_t>(id)];
    s.in_step = false;
    if (!s.live) continue;  // hung up during the step: its blocks went back at departure
    s.ctx = s.blocks.tokens();
    s.recompute = 0;
    s.blocks.release_outside_window(pool_);
    result_.run.max_resident_blocks_per_session =
        std::max<int64_t>(result_.run.max_resident_blocks_per_session, s.blocks.held_blocks());
    result_.frames.push_back({s.id, s.next_frame, s.next_release, now});
    ++s.next_frame;
    if (s.next_frame < s.frames_total) {
      s.next_release = s.arrival + s.next_frame * period_;
      enqueue(s.id);
    }
  }
  give_blocks(before);
  batch_.clear();
  mark(now);
}

Time RealtimeEngine::next_wake(Time now) const {
  Time t = horizon_ + 1;
  for (int64_t id : ready_) {
    const Time r = sessions_[static_cast<size_t>(id)]->next_release;
    if (r > now) {
      t = std::min(t, r);
      break;
    }
  }
  if (next_arrival_ < schedule_.size()) t = std::min(t, schedule_[next_arrival_].t);
  for (const auto& s : sessions_) {
    if (s->live && s->end != kNever) t = std::min(t, s->end);
  }
  return std::max(t, now + 1);
}

// Frame accounting with the simulator's definitions (sim/engine/frame_ledger.h: FrameLedger::serve
// and count_unserved): a frame is due if released by the horizon (or before its caller left);
// reported latency is the latency when output came within silence_after_s, else silence_after_s
// (the serving layer's pad); true latency is censored for frames never served.
void RealtimeEngine::finish() {
  auto& r = result_.run;
  for (const auto& s : sessions_) {
    const int64_t due = s->live ? std::min(s->frames_total, (horizon_ - s->arrival) / period_ + 1)
                                : s->frames_total;
    for (int64_t k = s->next_frame; k < due; ++k) {
      result_.frames.push_back({s->id, k, s->arrival + k * period_, kNever});
    }
  }
  // The frames and the pool's changes are booked by the simulator's own ledger, as a recording
  // of a real engine is: the run's totals and its time series.
  RecordedRun rec;
  rec.source = "replay";
  rec.frames.reserve(result_.frames.size());
  for (const FrameRecord& f : result_.frames) {
    RecordedRun::Frame x;
    x.session = sessions_[static_cast<size_t>(f.session)]->caller;
    x.frame = f.frame;
    x.release_s = to_seconds(f.release);
    if (f.served != kNever) x.done_s = to_seconds(f.served);
    rec.frames.push_back(std::move(x));
  }
  // A gauge holds from its instant on; a pool change at t is the state after t's events, which
  // a sample at t does not see (it is taken before them), so it is read from 1 ns later.
  for (const PoolPoint& p : result_.pool) {
    rec.gauges.push_back(
        {to_seconds(p.t + 1),
         static_cast<double>(p.used_blocks) / static_cast<double>(pool_.num_blocks()),
         p.stalled_sessions});
  }
  SampleCollector series;
  const RunResult books = book_recorded_run(scenario_, pool_.num_blocks(), rec, &series);
  result_.samples = std::move(series.samples);
  r.frames_due = books.frames_due;
  r.frames_served = books.frames_served;
  r.frames_on_time = books.frames_on_time;
  r.frames_silent = books.frames_silent;
  r.frames_reported_late = books.frames_reported_late;
  r.tokens_produced = books.tokens_produced;
  r.reported_latency = books.reported_latency;
  r.true_latency = books.true_latency;
  std::sort(result_.frames.begin(), result_.frames.end(),
            [](const FrameRecord& a, const FrameRecord& b) {
              return a.release != b.release ? a.release < b.release : a.session < b.session;
            });
  r.end_s = to_seconds(horizon_);
  r.final_pool_blocks = pool_.used_blocks();
  r.blocks_allocated = allocated_;
  r.blocks_released = released_;
  if (allocated_ - released_ != pool_.used_blocks()) {
    throw std::logic_error("real engine: blocks not conserved (allocated - released != used)");
  }
}

}  // namespace metronome::replay
