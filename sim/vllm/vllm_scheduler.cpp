#include "sim/vllm/vllm_scheduler.h"

#include <algorithm>
#include <stdexcept>

#include "core/kv_window.h"

namespace metronome {

VllmScheduler::VllmScheduler(const VllmSchedulerConfig& c, BlockCounter& pool)
    : c_(c), pool_(pool.capacity() + 1, pool) {
  if (c.block_size < 1 || c.max_num_seqs < 1 || c.max_num_batched_tokens < 1) {
    throw std::invalid_argument("VllmScheduler: block size, max_num_seqs, token budget >= 1");
  }
  sink_blocks_ = c.sliding_window > 0 ? kv::ceil_div(c.sink_tokens, c.block_size) : 0;
  keeps_head_ = c.sliding_window > 0 && (c.keep_prompt || sink_blocks_ > 0);
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
      if (r.uid == 0) r.uid = ++next_uid_;
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
    default:   // a chunk is in progress: the streaming queue holds this one
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
  r.prompt = r.num_tokens;
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
// stm:get_num_blocks_to_allocate for `tokens`: table entries to add, null ones included, plus the
// cache hits that sit free in the queue (adopting them takes them out of it). The admission
// estimate of a plain sliding window is capped at one window plus one batch of in-flight tokens
// (SlidingWindowSpec.max_admission_blocks_per_request).
int64_t VllmScheduler::blocks_needed(const Request& r, int64_t tokens, int64_t computed,
                                     const std::vector<int64_t>& hits, bool admission) const {
  int64_t entries = kv::ceil_div(tokens, c_.block_size);
  const bool plain_window = c_.sliding_window > 0 && !keeps_head_;
  if (admission && plain_window) {
    entries = std::min(
        entries,
        kv::ceil_div(std::min(c_.sliding_window - 1 + c_.max_num_batched_tokens, c_.max_model_len),
                     c_.block_size) +
            1);
  }
  // SlidingWindowManager.get_num_skipped_tokens: computed - sliding_window + 1 tokens are outside
  // the window of the next token, and their blocks need no entry.
  const int64_t skipped =
      plain_window ? std::max<int64_t>(0, computed - c_.sliding_window + 1) / c_.block_size : 0;
  int64_t evictable = 0;
  for (const int64_t b : hits) evictable += pool_.ref(b) == 0;
  const int64_t have = static_cast<int64_t>(hits.size() + r.table.size());
  return std::max<int64_t>(0, entries - std::max(skipped, have)) + evictable;
}

// stm:remove_skipped_blocks: the entries wholly before the window of the next token become null,
// after the kept head (nothing for a plain window, the sink blocks with sinks, the prompt's blocks
// for vLLM's R-SWA). Freed last to first, as vLLM does.
void VllmScheduler::remove_skipped(Request& r, int64_t computed) {
  if (c_.sliding_window <= 0) return;
  const int64_t bs = c_.block_size;
  const int64_t head = !keeps_head_     ? 0
                       : c_.keep_prompt ? kv::ceil_div(r.prompt, bs)
                                        : sink_blocks_;
  const int64_t start = std::max(c_.keep_prompt ? r.prompt : 0, computed - c_.sliding_window + 1);
  const int64_t upto =
      std::min(std::max<int64_t>(0, start) / bs, static_cast<int64_t>(r.table.size()));
  std::vector<int64_t> freed;
  for (int64_t j = upto - 1; j >= head; --j) {
    int64_t& b = r.table[static_cast<size_t>(j)];
    if (b == 0) break;
    freed.push_back(b);
    b = 0;
  }
  r.held -= static_cast<int64_t>(freed.size());
  pool_.release(freed);
}

// kvm:get_computed_blocks: the longest run of the request's leading full blocks still cached, at
// most (tokens - 1) / block_size of them (one token is always computed).
std::vector<int64_t> VllmScheduler::lookup(const Request& r) const {
  std::vector<int64_t> hits;
  if (!c_.prefix_caching) return hits;
  for (int64_t j = 0; j < (r.num_tokens - 1) / c_.block_size; ++j) {
    const int64_t b = pool_.cached(hash(r, j));
    if (b < 0) break;
    hits.push_back(b);
  }
  return hits;
}

// KVCacheManager.allocate_slots for `new_tokens` past the computed ones and the cache hits: the
// full-sequence gate for a waiting request, then the window's freeing (kept even when the
// allocation then fails), then the new entries, all or none, then the full blocks are cached.
bool VllmScheduler::allocate(int64_t id, int64_t new_tokens, bool admission,
                             const std::vector<int64_t>& hits) {
  Request& r = reqs_[static_cast<size_t>(id)];
  const int64_t computed = r.computed + static_cast<int64_t>(hits.size()) * c_.block_size;
  if (admission && c_.reserve_full_sequence &&
      blocks_needed(r, std::min(r.num_tokens, c_.max_model_len), computed, hits, true) >
          pool_.free()) {
    return false;
  }
  remove_skipped(r, computed);
  if (blocks_needed(r, computed + new_tokens, computed, hits, false) > pool_.free()) return false;
  if (!hits.empty()) {
    pool_.touch(hits);
    r.table.insert(r.table.end(), hits.begin(), hits.end());
    r.held += static_cast<int64_t>(hits.size());
    r.hashed = static_cast<int64_t>(hits.size());
  }
  const int64_t add =
      kv::ceil_div(computed + new_tokens, c_.block_size) - static_cast<int64_t>(r.table.size());
  if (add > 0) {
    pool_.take(add, r.table);
    r.held += add;
  }
  if (c_.prefix_caching) {
    const int64_t full = std::min(computed + new_tokens, r.num_tokens) / c_.block_size;
    for (int64_t j = r.hashed; j < full; ++j) {
      if (r.table[static_cast<size_t>(j)] != 0)
        pool_.insert(hash(r, j), r.table[static_cast<size_t>(j)]);
    }
    r.hashed = std::max(r.hashed, full);
  }
  return true;
}

void VllmScheduler::free_blocks(Request& r) {
  std::vector<int64_t> last_first(r.table.rbegin(), r.table.rend());  // tail evicted first
  pool_.release(last_first);
  r.table.clear();
  r.held = 0;
  r.hashed = 0;
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
      if (allocate(id, n, false, {})) {
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
      const std::vector<int64_t> hits = r.computed == 0 ? lookup(r) : std::vector<int64_t>{};
      const int64_t hit_tokens = static_cast<int64_t>(hits.size()) * c_.block_size;
      const int64_t n = std::min(r.num_tokens - r.computed - hit_tokens, budget);
      if (!allocate(id, n, true, hits)) {
        plan.alloc_failed.push_back(id);
        break;
      }
      q.pop_front();
      running_.push_back(id);
      r.status = Status::kRunning;
      r.computed += hit_tokens;
      plan.scheduled.push_back({id, n, r.computed});
      budget -= n;
    }
    // Paused sessions all hold KV: they go back to the front of their queue, in order.
    kv_holding_.insert(kv_holding_.begin(), skipped.begin(), skipped.end());
  }

  // The step's tokens count as computed once it is scheduled (Scheduler._update_after_schedule).
  for (const Scheduled& s : plan.scheduled)
    reqs_[static_cast<size_t>(s.session)].computed += s.tokens;
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
