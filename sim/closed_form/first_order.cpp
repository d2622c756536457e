#include "sim/closed_form/first_order.h"

#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "base/time.h"
#include "sim/engine/call_span.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/durations.h"

namespace metronome {
namespace {

struct Call {
  Time arrival;
  Time end;  // kNever: outlives the horizon
};

// The same draws, from the same streams and in the same order, as the engine makes.
std::vector<Call> schedule(const Scenario& s) {
  Rng arrival_rng(s.seed, "arrivals"), duration_rng(s.seed, "durations");
  auto arrivals = make_arrival_process(s.workload.arrival);
  auto durations = make_duration_distribution(s.workload.duration);
  const Time horizon = from_seconds(s.horizon_s);
  const Time period = std::max<Time>(1, from_seconds(s.workload.frame_period_s));
  const std::optional<int64_t> cap = s.kv_rule().cap_frames();
  std::vector<Call> calls;
  while (auto t = arrivals->next(arrival_rng)) {
    if (*t > horizon) break;
    const double d = durations->sample(duration_rng);
    Call c{*t, kNever};
    if (d < to_seconds(horizon - *t)) c.end = *t + std::max<Time>(1, from_seconds(d));
    // A call the KV policy's context cap ends, as the engine ends it.
    if (CallSpan span{c.end, 0}; cap && cap_call(span, *t, *cap, horizon, period)) c.end = span.end;
    calls.push_back(c);
  }
  return calls;
}

struct FrameModel {
  Time period;
  kv::FrameGrowth growth;
  kv::BlockSize block_size;  // kept with its shift: blocks_at_frame() runs once per frame
  KvRule rule;               // the KV policy on the growth and block size
  bool bounded;              // the policy bounds a session's resident KV

  // Blocks a session holds while its frame m is served (the instantaneous-service peak).
  int64_t blocks_at_frame(int64_t m) const { return rule.step_blocks_at(m); }
  int64_t frames(const Call& c, Time horizon) const {
    const Time end = std::min(c.end == kNever ? horizon + 1 : c.end, horizon + 1);
    return kv::ceil_div(end - c.arrival, period);
  }
  // Latest frame released strictly before t, or -1.
  int64_t latest_before(const Call& c, Time t, int64_t frames_total) const {
    if (t <= c.arrival) return -1;
    return std::min(frames_total - 1, kv::ceil_div(t - c.arrival, period) - 1);
  }
};

std::optional<double> continuous_t_sat(const std::vector<Call>& calls, double tokens_per_s,
                                       double prompt, double pool_tokens, Time horizon) {
  // Piecewise-linear fill between arrival and departure events.
  struct Edge {
    Time t;
    int kind;  // 0 departure (first at ties, as in the engine), 1 arrival
    size_t i;
  };
  std::vector<Edge> edges;
  for (size_t i = 0; i < calls.size(); ++i) {
    edges.push_back({calls[i].arrival, 1, i});
    if (calls[i].end != kNever) edges.push_back({calls[i].end, 0, i});
  }
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.t != b.t ? a.t < b.t : a.kind < b.kind; });
  double level = 0;  // tokens held
  double live = 0;
  Time t_prev = edges.empty() ? 0 : edges.front().t;
  auto crossing = [&](Time t_next) -> std::optional<double> {
    const double span = to_seconds(t_next - t_prev);
    const double grow = live * tokens_per_s;
    if (level >= pool_tokens) return to_seconds(t_prev);
    if (grow > 0 && level + grow * span >= pool_tokens) {
      return to_seconds(t_prev) + (pool_tokens - level) / grow;
    }
    return std::nullopt;
  };
  for (const Edge& e : edges) {
    if (auto hit = crossing(e.t)) return hit;
    level += live * tokens_per_s * to_seconds(e.t - t_prev);
    t_prev = e.t;
    if (e.kind == 1) {
      level += prompt;
      live += 1;
    } else {
      level -= prompt + tokens_per_s * to_seconds(e.t - calls[e.i].arrival);
      live -= 1;
    }
  }
  if (auto hit = crossing(horizon); hit && *hit <= to_seconds(horizon)) return hit;
  return std::nullopt;
}

std::optional<double> whole_block_t_sat(const std::vector<Call>& calls, const FrameModel& f,
                                        int64_t num_blocks, Time horizon) {
  if (calls.empty()) return std::nullopt;
  std::vector<int64_t> frames(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) frames[i] = f.frames(calls[i], horizon);
  const Time t0 = calls.front().arrival;
  size_t arrived = 0;
  // Alive calls in arrival order, each with the latest frame it released before window w's end
  // (before the cap at its last frame): k_at_0 + w, one more each window, with no division nor
  // store per call. They are scanned for departures only in a window where the earliest alive call
  // ends.
  struct Alive {
    size_t i;
    int64_t k_at_0;
  };
  std::vector<Alive> alive;
  Time first_end = kNever;  // the earliest end among alive calls
  // Unbounded KV holds ceil(context_at(m + 1) / block) blocks at frame m, at most that over the
  // block size plus one; context_at(m + 1) = context_at(1) + m per_frame (kv::FrameGrowth): from
  // the sum of the k's, a bound on the window's bound in O(1), which skips the exact sum in the
  // windows where even it stays within the pool.
  const bool linear = !f.bounded;
  int64_t k_sum = 0;  // within int64: alive calls x frames
  struct Change {
    Time t;
    int kind;  // 0 departure, 1 release
    size_t i;
    int64_t m;
  };
  std::vector<Change> changes;
  int64_t w = 0;
  for (Time start = t0; start <= horizon; start += f.period, ++w) {
    const Time end = start + f.period;
    while (arrived < calls.size() && calls[arrived].arrival < end) {
      const int64_t k = kv::ceil_div(end - calls[arrived].arrival, f.period) - 1;
      alive.push_back({arrived, k - w});
      k_sum += k;
      first_end = std::min(first_end, calls[arrived].end);
      ++arrived;
    }
    bool within = false;
    if (linear) {  // on overflow, the exact sum decides
      const int64_t n_alive = static_cast<int64_t>(alive.size());
      int64_t a = 0, b = 0, tokens = 0;
      if (!__builtin_mul_overflow(n_alive, f.growth.context_at(1), &a) &&
          !__builtin_mul_overflow(k_sum, f.growth.per_frame, &b) &&
          !__builtin_add_overflow(a, b, &tokens)) {
        within = f.block_size.div(tokens) + n_alive <= num_blocks;
      }
    }
    // Upper bound over the window: every session present in it at its latest frame.
    int64_t bound = 0;
    if (!within) {
      for (const Alive& a : alive) {
        const int64_t m = std::min(frames[a.i] - 1, a.k_at_0 + w);  // f.latest_before(end)
        if (m >= 0) bound += f.blocks_at_frame(m);
      }
    }
    if (bound > num_blocks) {
      // Exact sweep of this window in event order.
      int64_t demand = 0;
      changes.clear();
      std::vector<int64_t> held(calls.size(), 0);
      for (const Alive& a : alive) {
        const size_t i = a.i;
        if (calls[i].end <= start) continue;
        const int64_t m = f.latest_before(calls[i], start, frames[i]);  // released before start
        if (m >= 0) held[i] = f.blocks_at_frame(m), demand += held[i];
        const int64_t next = m + 1;
        if (next < frames[i]) {
          const Time r = calls[i].arrival + next * f.period;
          if (r < end) changes.push_back({r, 1, i, next});
        }
        if (calls[i].end != kNever && calls[i].end < end)
          changes.push_back({calls[i].end, 0, i, 0});
      }
      std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
        if (a.t != b.t) return a.t < b.t;
        if (a.kind != b.kind) return a.kind < b.kind;
        return a.i < b.i;
      });
      for (const Change& c : changes) {
        if (c.t > horizon) break;
        if (c.kind == 0) {
          demand -= held[c.i];
          held[c.i] = 0;
        } else if (calls[c.i].end > c.t) {
          const int64_t now = f.blocks_at_frame(c.m);
          demand += now - held[c.i];
          held[c.i] = now;
          if (demand > num_blocks) return to_seconds(c.t);
        }
      }
    }
    if (first_end < end) {
      first_end = kNever;
      std::erase_if(alive, [&](const Alive& a) {
        const Time e = calls[a.i].end;
        const bool gone = e != kNever && e < end;
        if (gone) {
          k_sum -= a.k_at_0 + w;
        } else {
          first_end = std::min(first_end, e);
        }
        return gone;
      });
    }
    k_sum += static_cast<int64_t>(alive.size());
    if (alive.empty() && arrived == calls.size()) break;
  }
  return std::nullopt;
}

}  // namespace

FirstOrderPrediction predict_first_order(const Scenario& s) {
  FirstOrderPrediction p;
  p.pool = size_pool(s);
  const auto& w = s.workload;
  const double pool_tokens =
      static_cast<double>(p.pool.num_blocks) * static_cast<double>(s.engine.block_size);
  p.tokens_per_s_per_session = static_cast<double>(w.kv_tokens()) / w.frame_period_s;
  p.r_per_s = p.tokens_per_s_per_session / pool_tokens;

  const std::vector<Call> calls = schedule(s);
  const Time horizon = from_seconds(s.horizon_s);
  p.sessions = static_cast<int64_t>(calls.size());
  for (const Call& c : calls) {
    if (c.arrival == calls.front().arrival) {
      p.rho0 += static_cast<double>(w.prompt_tokens) / pool_tokens;
    }
  }
  {  // peak concurrency of the schedule
    std::vector<std::pair<Time, int>> edges;
    for (const Call& c : calls) {
      edges.push_back({c.arrival, 1});
      if (c.end != kNever) edges.push_back({c.end, -1});
    }
    std::sort(edges.begin(), edges.end());  // departures (-1) before arrivals at ties
    int64_t live = 0;
    for (auto& [t, d] : edges)
      p.peak_concurrent_sessions = std::max(p.peak_concurrent_sessions, live += d);
  }

  const FrameModel f{std::max<Time>(1, from_seconds(w.frame_period_s)), w.growth(),
                     s.engine.block_size, s.kv_rule(), s.kv_policy.bounded()};
  if (!s.kv_policy.bounded()) {
    p.t_sat_continuous_s =
        continuous_t_sat(calls, p.tokens_per_s_per_session, static_cast<double>(w.prompt_tokens),
                         pool_tokens, horizon);
  } else {
    const int64_t most = max_blocks_per_session(s);
    p.max_blocks_per_session = most;
    p.memory_cap_sessions = p.pool.num_blocks / std::max<int64_t>(1, most);
  }
  const bool may_fill = !p.max_blocks_per_session ||
                        p.peak_concurrent_sessions * *p.max_blocks_per_session > p.pool.num_blocks;
  if (may_fill) p.t_sat_blocks_s = whole_block_t_sat(calls, f, p.pool.num_blocks, horizon);
  const Time full = p.t_sat_blocks_s ? from_seconds(*p.t_sat_blocks_s) : kNever;
  for (const Call& c : calls) {
    if (full != kNever && c.arrival <= full && (c.end == kNever || c.end > full)) {
      ++p.sessions_at_t_sat;
    }
    const Time last = std::min(c.end == kNever ? horizon : c.end - 1, horizon);
    p.longest_call_frames = std::max(p.longest_call_frames, (last - c.arrival) / f.period + 1);
  }
  return p;
}

std::vector<double> predicted_fill(const Scenario& s, const std::vector<double>& times_s) {
  const PoolSizing pool = size_pool(s);
  const auto& w = s.workload;
  const double pool_tokens =
      static_cast<double>(pool.num_blocks) * static_cast<double>(s.engine.block_size);
  const double rate = static_cast<double>(w.kv_tokens()) / w.frame_period_s;
  const KvRule rule = s.kv_rule();
  const double cap = s.kv_policy.bounded()
                         ? static_cast<double>(s.kv_policy.policy->max_resident_tokens(w.growth()))
                         : std::numeric_limits<double>::infinity();
  const std::vector<Call> calls = schedule(s);
  std::vector<double> rho;
  rho.reserve(times_s.size());
  for (double t : times_s) {
    const Time now = from_seconds(t);
    double tokens = 0;
    for (const Call& c : calls) {
      if (c.arrival > now || (c.end != kNever && c.end <= now)) continue;
      const double grown =
          static_cast<double>(w.prompt_tokens) + rate * to_seconds(now - c.arrival);
      // A window holds what has grown, up to its bound; another rule, what it holds after the
      // frames released by now.
      tokens +=
          rule.is_window()
              ? std::min(cap, grown)
              : static_cast<double>(rule.resident_tokens(w.growth().context_at(
                    (now - c.arrival) / std::max<Time>(1, from_seconds(w.frame_period_s)) + 1)));
    }
    rho.push_back(tokens / pool_tokens);
  }
  return rho;
}

}  // namespace metronome
