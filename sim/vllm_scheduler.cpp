#include "sim/vllm_scheduler.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/kv_window.h"

namespace metronome {

VllmScheduler::VllmScheduler(const VllmSchedulerConfig& c, BlockPool& pool) : c_(c), pool_(pool) {
  if (c.block_size < 1 || c.max_num_seqs < 1 || c.max_num_batched_tokens < 1) {
    throw std::invalid_argument("VllmScheduler: block size, max_num_seqs, token budget >= 1");
  }
  sink_blocks_ = c.sliding_window > 0 ? kv::ceil_div(c.sink_tokens, c.block_size) : 0;
}

VllmScheduler::Request& VllmScheduler::req(int64_t session) {
  if (session < 0) throw std::logic_error("VllmScheduler: negative session");
  if (session >= ssize()) reqs_.resize(static_cast<size_t>(session) + 1);
  return reqs_[static_cast<size_t>(session)];
}

int64_t VllmScheduler::waiting() const {
  return static_cast<int64_t>(kv_holding_.size() + waiting_.size()) - paused_;
}

void VllmScheduler::add_frame(int64_t session, int64_t prompt_tokens, int64_t input_tokens,
                              int64_t output_tokens) {
  Request& r = req(session);
  if (output_tokens < 1) throw std::logic_error("VllmScheduler: a frame samples >= 1 token");
  const Chunk chunk{input_tokens, output_tokens};
  switch (r.status) {
    case Status::kNone:  // Scheduler.add_request: a new request, queued by KV holding
      r.history = prompt_tokens;
      start_chunk(session, chunk);
      enqueue(session);
      return;
    case Status::kIdle:  // per-frame requests: the next request of the conversation
      start_chunk(session, chunk);
      enqueue(session);
      return;
    case Status::kPaused:  // _update_request_as_session: it keeps its place in the queue
      --paused_;
      start_chunk(session, chunk);
      return;
    case Status::kFinished:
      return;  // the caller hung up
    default:  // a chunk is in progress: the streaming queue holds this one
      r.pending.push_back(chunk);
      return;
  }
}

// The request's token count for its next chunk. A streaming session drops the last sampled token
// of the previous chunk (it was never computed) and appends the input; a per-frame request starts
// over with the whole conversation as its prompt.
void VllmScheduler::start_chunk(int64_t id, const Chunk& c) {
  Request& r = reqs_[static_cast<size_t>(id)];
  if (c_.resumable && r.frame >= 0) {
    r.num_tokens = r.num_tokens - 1 + c.input_tokens;
  } else {
    r.num_tokens = r.history + c.input_tokens;
    r.computed = 0;
  }
  r.max_tokens = c.output_tokens;
  r.outputs = 0;
  ++r.frame;
  r.status = Status::kWaiting;
}

// Scheduler._enqueue_waiting_request: by whether it holds KV.
void VllmScheduler::enqueue(int64_t id) {
  if (reqs_[static_cast<size_t>(id)].computed > 0) {
    kv_holding_.push_back(id);
  } else {
    waiting_.push_back(id);
  }
}

// KVCacheManager.allocate_slots for `new_tokens` past the computed ones: first the blocks that fell
// out of the window are freed (even when the allocation then fails), then the new entries are
// taken, all or none.
bool VllmScheduler::allocate(int64_t id, int64_t new_tokens) {
  Request& r = reqs_[static_cast<size_t>(id)];
  if (c_.sliding_window > 0) {
    // SlidingWindowManager.get_num_skipped_tokens: computed - sliding_window + 1 tokens are
    // outside the window of the next token; with sinks (R-SWA) the gap starts after the sinks.
    const int64_t skipped = std::max<int64_t>(0, r.computed - c_.sliding_window + 1);
    const int64_t upto = std::min(skipped / c_.block_size, r.table);
    const int64_t from = std::max(r.freed_upto, sink_blocks_);
    if (upto > from) {
      pool_.release(upto - from);
      r.held -= upto - from;
      r.freed_upto = upto;
    }
  }
  const int64_t need = kv::ceil_div(r.computed + new_tokens, c_.block_size) - r.table;
  if (need <= 0) return true;
  if (!pool_.try_allocate(need)) return false;
  r.table += need;
  r.held += need;
  return true;
}

void VllmScheduler::free_blocks(Request& r) {
  pool_.release(r.held);
  r.held = 0;
  r.table = 0;
  r.freed_upto = 0;
}

// Scheduler._preempt_request: the request must recompute everything, from the front of the queue.
void VllmScheduler::preempt(int64_t id) {
  Request& r = reqs_[static_cast<size_t>(id)];
  free_blocks(r);
  r.computed = 0;
  r.status = Status::kPreempted;
  waiting_.push_front(id);
}

void VllmScheduler::remove_from_queues(int64_t id) {
  std::erase(running_, id);
  std::erase(kv_holding_, id);
  std::erase(waiting_, id);
}

void VllmScheduler::finish(int64_t session) {
  if (session >= ssize()) return;
  Request& r = reqs_[static_cast<size_t>(session)];
  if (r.status == Status::kFinished || r.status == Status::kNone) return;
  if (r.status == Status::kPaused) --paused_;
  remove_from_queues(session);
  free_blocks(r);
  r.pending.clear();
  r.status = Status::kFinished;
}

VllmScheduler::StepPlan VllmScheduler::schedule() {
  StepPlan plan;
  int64_t budget = c_.max_num_batched_tokens;

  // 1. Running requests.
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    const int64_t id = running_[i];
    Request& r = reqs_[static_cast<size_t>(id)];
    const int64_t n = std::min(r.num_tokens - r.computed, budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    bool fits = false;
    while (true) {
      if (allocate(id, n)) {
        fits = true;
        break;
      }
      plan.alloc_failed.push_back(id);
      const int64_t victim = running_.back();
      running_.pop_back();
      plan.preempted_blocks.push_back(reqs_[static_cast<size_t>(victim)].held);
      preempt(victim);
      plan.preempted.push_back(victim);
      if (victim == id) break;
    }
    if (!fits) break;
    plan.scheduled.push_back({id, n, r.computed});
    budget -= n;
    ++i;
  }

  // 2. Waiting requests, only if nobody was preempted.
  if (plan.preempted.empty()) {
    std::vector<int64_t> skipped;  // paused sessions passed over, in queue order
    while (budget > 0) {
      std::deque<int64_t>& q = kv_holding_.empty() ? waiting_ : kv_holding_;
      if (q.empty()) break;
      if (static_cast<int64_t>(running_.size()) + paused_ >= c_.max_num_seqs) break;
      const int64_t id = q.front();
      Request& r = reqs_[static_cast<size_t>(id)];
      if (r.status == Status::kPaused) {
        q.pop_front();
        skipped.push_back(id);
        continue;
      }
      const int64_t n = std::min(r.num_tokens - r.computed, budget);
      if (!allocate(id, n)) {
        plan.alloc_failed.push_back(id);
        break;
      }
      q.pop_front();
      running_.push_back(id);
      r.status = Status::kRunning;
      plan.scheduled.push_back({id, n, r.computed});
      budget -= n;
    }
    // Paused sessions all hold KV: they go back to the front of their queue, in order.
    kv_holding_.insert(kv_holding_.begin(), skipped.begin(), skipped.end());
  }

  // The step's tokens count as computed once it is scheduled (Scheduler._update_after_schedule).
  for (const Scheduled& s : plan.scheduled) reqs_[static_cast<size_t>(s.session)].computed += s.tokens;
  return plan;
}

std::vector<VllmScheduler::FrameDone> VllmScheduler::update_from_output(const StepPlan& plan) {
  std::vector<FrameDone> done;
  std::vector<int64_t> stopped;
  for (const Scheduled& s : plan.scheduled) {
    Request& r = reqs_[static_cast<size_t>(s.session)];
    if (r.status != Status::kRunning) continue;  // hung up during the step
    if (r.computed < r.num_tokens) continue;     // a prefill chunk: nothing sampled
    ++r.num_tokens;
    if (++r.outputs < r.max_tokens) continue;
    done.push_back({s.session, r.frame});
    stopped.push_back(s.session);
  }
  for (const int64_t id : stopped) std::erase(running_, id);
  for (const int64_t id : stopped) {
    Request& r = reqs_[static_cast<size_t>(id)];
    if (!c_.resumable) {  // the request finished: its blocks go back, the history stays
      free_blocks(r);
      r.history = r.num_tokens;
      r.computed = 0;
    }
    if (!r.pending.empty()) {
      const Chunk c = r.pending.front();
      r.pending.pop_front();
      start_chunk(id, c);
      enqueue(id);
    } else if (c_.resumable) {  // WAITING_FOR_STREAMING_REQ: it keeps a queue place and a slot
      r.status = Status::kPaused;
      ++paused_;
      enqueue(id);
    } else {
      r.status = Status::kIdle;
    }
  }
  return done;
}

}  // namespace metronome
