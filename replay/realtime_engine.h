// RealtimeEngine: a small real serving engine. Sessions arrive and send frames on the wall clock;
// each engine step takes every ready session (release order, up to max_sessions_per_step), appends
// the frame's K/V into real blocks of a real pool (kernels::BlockPool / SessionBlocks: block ids
// and block tables), runs the passes on a StepBackend (CPU reference kernels or CUDA kernels) for
// the whole batch at once, then returns the blocks that fell out of the window to the pool.
//
// It follows the simulator (sim/engine/engine.h) rule for rule, so that the two can be compared
// frame for frame: the same arrival and duration draws (the scenario seed's streams), the same
// ready order, the same reservation at step start (kv::step_blocks blocks, all or nothing), the
// same exhaustion policies (stall: the frame waits and the session falls silent; preempt_recompute:
// the newest session is evicted and recomputes its history), the same passes (one ingest pass of
// the frame's input tokens, then output - 1 one-token decode passes), the same call spans
// (sim/engine/call_span.h) and event order at one instant (a step ends, then departures, then
// arrivals). Its frames are booked by the simulator's own ledger, as a recording of any real engine
// is (sim/output/recorded_run.h). What differs is only that time is the wall clock and a step lasts
// as long as the backend takes.
//
// The extra write-only pass at the end of a frame appends the K/V of tokens the frame's passes did
// not feed (kv_tokens_per_frame - input - (output - 1); one, the last output token, by default), so
// that the real pool holds exactly the blocks the simulator counts.
//
// Not supported (refused at construction with a ConfigError): adaptive admission control, frame
// jitter, and preempt_recompute with windowed KV (its recompute is not a contiguous range).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "core/frame_growth.h"
#include "kernels/block_table.h"
#include "replay/clock.h"
#include "replay/step_backend.h"
#include "sim/config/scenario.h"
#include "sim/output/run_observer.h"
#include "sim/output/run_result.h"

namespace metronome::replay {

// One due frame: when its input was released and when its output was produced (kNever: never).
struct FrameRecord {
  int64_t session = 0;
  int64_t frame = 0;
  Time release = 0;
  Time served = kNever;
};

// State after a change of the pool or of the sessions.
struct PoolPoint {
  Time t = 0;
  int64_t used_blocks = 0;
  int64_t live_sessions = 0;
  int64_t stalled_sessions = 0;
};

struct StepRecord {
  Time start = 0, end = 0;
  Time cpu = 0;  // the engine thread's CPU time in the step (wall minus time taken away)
  int64_t sessions = 0;
  int64_t query_tokens = 0;  // over all passes of the step
  int64_t passes = 0;
};

struct RealtimeResult {
  RunResult run;  // the simulator's fields, measured
  // The first frame refused blocks: its release time (set by block counts and the frame schedule,
  // not by how long steps took), its index and its session.
  std::optional<double> first_stall_release_s;
  std::optional<int64_t> first_stall_frame;
  std::optional<int64_t> first_stall_session;
  std::vector<FrameRecord> frames;  // every due frame, served or not
  std::vector<PoolPoint> pool;
  // The simulator's time series of the run (every output.sample_period_s), booked by its ledger
  // with the pool's state before each sample instant.
  std::vector<Sample> samples;
  std::vector<StepRecord> steps;
  double busy_cpu_s = 0;       // sum of the steps' thread CPU time (busy_s is their wall time)
  double max_start_lag_s = 0;  // largest (step start - oldest release in it): how far behind it ran
  int64_t kv_pool_bytes = 0;
  std::string backend, device;
};

// The real engine keeps a record of every frame and step in memory and runs on the wall clock, so a
// replay is bounded before it starts: a 1 ns frame period or ten million callers is a scenario for
// the simulator, not for a real run.
inline constexpr int64_t kMaxReplayCallers = 100'000;
inline constexpr int64_t kMaxReplayFrames = 5'000'000;  // 32 bytes each: 160 MB of records
inline constexpr double kMinReplayFramePeriodS = 1e-3;

// The bounds above from the scenario's fields alone (callers from the arrival section, at most
// horizon / period + 1 frames each), before anything is generated or predicted: ConfigError naming
// the field. The engine checks the exact counts again as it draws the schedule.
void check_replay_bounds(const Scenario& s);

// The decoder shape of a scenario's model (kernels::ModelShape from sim's ModelConfig).
kernels::ModelShape model_shape(const ModelConfig& m);

// The KV rule the real engine and its kernels run: the scenario's policy as a kv::Window. A
// ConfigError naming the file and kv_policy.type for a policy that is none, or that caps the
// context (the real engine does not end calls there).
kv::Window replayed_window(const Scenario& s);

class RealtimeEngine {
 public:
  // `backend` and `clock` must outlive the engine; the backend's pool must have the scenario's
  // num_blocks blocks (engine.num_blocks, or the sizing rule). Throws ConfigError for what the real
  // engine does not support.
  RealtimeEngine(const Scenario& s, StepBackend& backend, Clock& clock);
  RealtimeResult run();

  int64_t num_blocks() const { return pool_.num_blocks(); }

 private:
  struct Session {
    int64_t id = 0;
    int64_t caller = 0;  // its place in the seed's arrivals (rejected callers included)
    Time arrival = 0;
    Time end = kNever;
    int64_t frames_total = 0;
    int64_t next_frame = 0;
    Time next_release = 0;
    int64_t ctx = 0;
    int64_t recompute = 0;
    int64_t admit_order = 0;
    bool live = true, preempted = false, stalled = false, in_step = false;
    kernels::SessionBlocks blocks;
    Session(kv::Window w, int32_t bs) : blocks(w, bs) {}
  };
  struct Arrival {
    Time t;
    double duration_s;
  };

  void handle_events(Time upto, bool strictly_before);
  void on_arrival(const Arrival& a, int64_t caller);
  void on_departure(Session& s);
  bool try_start_step(Time now);
  bool reserve(Session& s, Time now);
  bool preempt_newer_than(const Session& s, int64_t need, Time now);
  void preempt(Session& s, Time now);
  void run_step(Time now);
  void on_step_done(Time now);
  void enqueue(int64_t id);
  int64_t frame_tokens(const Session& s) const;  // KV tokens this frame appends
  void take_blocks(int64_t before);
  void give_blocks(int64_t before);
  void mark(Time t);
  Time next_wake(Time now) const;
  void finish();

  const Scenario& scenario_;
  StepBackend& backend_;
  Clock& clock_;
  kv::Window window_;
  int32_t block_size_;
  kernels::BlockPool pool_;
  Time period_, deadline_, silence_after_, horizon_;
  int64_t n_in_, n_out_, max_batch_;
  kv::FrameGrowth growth_;
  bool preempt_policy_;
  int64_t cap_;  // static admission cap (none: no cap)

  std::vector<Arrival> schedule_;  // the seed's arrivals within the horizon, in order
  size_t next_arrival_ = 0;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::deque<int64_t> ready_;  // by next_release; equal times in scheduling order
  std::vector<int64_t> batch_;
  int64_t live_ = 0, stalled_ = 0, next_admit_order_ = 0;
  int64_t allocated_ = 0, released_ = 0;

  RealtimeResult result_;
};

}  // namespace metronome::replay
