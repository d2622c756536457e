// vLLM V1's scheduler and KV cache manager (version 0.33.0) as a step model: which requests a step
// schedules and with how many tokens, which blocks each holds, whom it preempts. docs/vllm.md maps
// every rule to vLLM's source; tests/sim/vllm_conformance_test.cpp replays the cases that vLLM's
// own code ran (scripts/vllm_peer.sh) and compares step by step.
//
// One request per session. `resumable`: a streaming session whose KV stays between chunks (vLLM's
// resumable requests); a chunk appends its input and drops the previous chunk's last sampled token,
// so the context grows by n_in + n_out - 1 per frame. Otherwise each frame is a new request whose
// prompt is the whole history, freed when it finishes.
//
// The rules, in vLLM's order (Scheduler.schedule):
//  1. Running requests, in order, while the token budget lasts: each gets min(tokens left, budget)
//     (chunked prefill). When its blocks cannot be allocated, the last running request is preempted
//     (all its blocks freed, its progress reset to zero, put at the front of the waiting queue)
//     until the allocation fits or the request preempted itself.
//  2. Only in a step that preempted nobody: the waiting requests, those holding KV first (resumed
//     streaming sessions), then new and preempted ones, first come first served; the first that
//     cannot get blocks ends the pass (head of line). Paused sessions (no chunk yet) keep their
//     place and, like running requests, count against max_num_seqs.
// Block accounting (KVCacheManager.allocate_slots): a request holds ceil(tokens / block_size)
// table entries; a sliding window frees the entries wholly before the window of the next token,
// but only when the request next allocates (lazily); the pool keeps one null block.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "sim/pool/block_counter.h"
#include "sim/vllm/vllm_block_pool.h"

namespace metronome {

struct VllmSchedulerConfig {
  int64_t block_size = 16;
  int64_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 8192;
  // < 0: full attention. vLLM's sliding_window counts the query itself: a query sees the
  // sliding_window - 1 keys before it (Metronome's W = sliding_window - 1).
  int64_t sliding_window = -1;
  // > 0 with a window: the first sink_tokens stay (Metronome's sinks; vLLM 0.33.0 cannot pin them
  // in a streaming session, docs/vllm.md says why). The window then frees the gap between the sink
  // blocks and the window, as vLLM's prompt-keeping R-SWA manager does for a fixed prompt.
  int64_t sink_tokens = 0;
  // vLLM's own R-SWA (RSWAManager): the kept head is the request's prompt, which for a streaming
  // session grows with every chunk, so it keeps everything. Only the conformance cases use it.
  bool keep_prompt = false;
  bool resumable = true;
  bool prefix_caching = false;  // vLLM's enable_prefix_caching
  // vLLM's SchedulerConfig.scheduler_reserve_full_isl (default true): a waiting request is admitted
  // only if its whole sequence fits, not just this step's chunk.
  bool reserve_full_sequence = true;
  int64_t max_model_len = 8192;  // bounds the sliding window's admission estimate
};

class VllmScheduler {
 public:
  struct Scheduled {
    int64_t session;
    int64_t tokens;    // computed this step
    int64_t computed;  // tokens already in KV before the step (what its queries read)
  };
  struct StepPlan {
    std::vector<Scheduled> scheduled;  // in vLLM's order: running first, then admitted
    std::vector<int64_t> preempted;
    std::vector<int64_t> preempted_blocks;  // blocks each victim gave back
    std::vector<int64_t> alloc_failed;      // sessions whose allocation returned None
    bool empty() const { return scheduled.empty(); }
  };
  struct FrameDone {
    int64_t session;
    int64_t frame;
  };

  // `pool` counts the usable blocks (vLLM's pool less its null block); it must outlive this.
  VllmScheduler(const VllmSchedulerConfig& c, BlockCounter& pool);

  // A new session in `session`'s slot (slots are reused once a session finished).
  void open(int64_t session) {
    req(session) = Request{};
    reqs_[static_cast<size_t>(session)].uid = ++next_uid_;
  }
  // A frame of `input_tokens` whose answer is `output_tokens` sampled tokens. The first frame of a
  // session carries its prompt. Sessions are numbered by the caller, densely.
  void add_frame(int64_t session, int64_t prompt_tokens, int64_t input_tokens,
                 int64_t output_tokens);
  void finish(int64_t session);  // the caller hung up: every block freed, queues left
  StepPlan schedule();
  // The step ran: one token sampled for each request whose prompt is complete. Returns the frames
  // whose last output token was sampled.
  std::vector<FrameDone> update_from_output(const StepPlan& plan);

  int64_t blocks_held(int64_t session) const { return session < ssize() ? reqs_[session].held : 0; }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  int64_t waiting() const;
  int64_t paused() const { return paused_; }
  // Requests with work to do (running or waiting with a chunk): an engine with none is idle.
  bool has_work() const { return !running_.empty() || waiting() > 0; }
  // Per-frame requests: the session has no request in vLLM, so its next frame can be submitted.
  bool idle(int64_t session) const {
    return session >= ssize() || reqs_[session].status == Status::kNone ||
           reqs_[session].status == Status::kIdle;
  }

 private:
  // kIdle: a per-frame session between its requests, outside vLLM altogether.
  enum class Status : uint8_t { kNone, kIdle, kWaiting, kRunning, kPreempted, kPaused, kFinished };
  struct Chunk {
    int64_t input_tokens, output_tokens;
  };
  struct Request {
    Status status = Status::kNone;
    int64_t num_tokens = 0;      // prompt and outputs so far
    int64_t prompt = 0;          // prompt tokens (a streaming update extends the prompt)
    int64_t computed = 0;        // tokens whose KV is computed
    int64_t max_tokens = 0;      // outputs this chunk asks for
    int64_t outputs = 0;         // sampled in this chunk
    std::vector<int64_t> table;  // block ids; 0 is the null block (freed by the window)
    int64_t held = 0;            // real blocks: table less the null entries
    int64_t hashed = 0;          // leading full blocks entered in the prefix cache
    uint64_t uid = 0;            // the conversation: its block j's content is the same every frame
    int64_t frame = -1;          // the frame in progress
    int64_t history = 0;         // per-frame requests: tokens of the whole conversation so far
    std::deque<Chunk> pending;   // frames released while one is in progress
  };

  int64_t ssize() const { return static_cast<int64_t>(reqs_.size()); }
  Request& req(int64_t session);
  void start_chunk(int64_t id, const Chunk& c);
  void enqueue(int64_t id);
  bool allocate(int64_t id, int64_t new_tokens, bool admission, const std::vector<int64_t>& hits);
  int64_t blocks_needed(const Request& r, int64_t tokens, int64_t computed,
                        const std::vector<int64_t>& hits, bool admission) const;
  void remove_skipped(Request& r, int64_t computed);
  std::vector<int64_t> lookup(const Request& r) const;
  uint64_t hash(const Request& r, int64_t block) const {
    return (r.uid << 24) | uint64_t(block + 1);
  }
  void free_blocks(Request& r);
  void preempt(int64_t id);
  void remove_from_queues(int64_t id);

  VllmSchedulerConfig c_;
  VllmBlockPool pool_;
  std::vector<Request> reqs_;
  uint64_t next_uid_ = 0;
  std::vector<int64_t> running_;
  std::deque<int64_t> kv_holding_;  // waiting requests that hold KV (resumed sessions, paused ones)
  std::deque<int64_t> waiting_;     // new and preempted requests
  int64_t paused_ = 0;              // resumable sessions waiting for their next chunk
  int64_t sink_blocks_ = 0;
  bool keeps_head_ = false;  // the window keeps sinks or (vLLM's R-SWA) the prompt
};

}  // namespace metronome
