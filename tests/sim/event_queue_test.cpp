#include "sim/engine/event_queue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <tuple>

#include "base/time.h"

namespace metronome {

// Pins the documented order of simultaneous events: step done, departure, control, arrival, engine
// wake; then scheduling order within a kind.
TEST(EventQueue, SameTimeOrderIsDocumentedOrder) {
  EventQueue q;
  q.push(5, EventKind::kEngineWake, 0);
  q.push(5, EventKind::kArrival, 1);
  q.push(5, EventKind::kArrival, 2);
  q.push(5, EventKind::kStepDone, 3);
  q.push(5, EventKind::kDeparture, 4);
  q.push(4, EventKind::kEngineWake, 5);
  q.push(5, EventKind::kDeparture, 6);
  q.push(5, EventKind::kControl, 7);
  std::vector<int64_t> order;
  while (!q.empty()) order.push_back(q.pop().target);
  EXPECT_EQ(order, (std::vector<int64_t>{5, 3, 4, 6, 7, 1, 2, 0}));
}

// The pending step-done event waits beside the heap: whatever the interleaving (several step-done
// events pending at once, ties in time with every kind), each pop is the least of (time, kind,
// scheduling order) among the pending events, as an ordered set of them says.
TEST(EventQueue, StepDoneSlotKeepsTheTotalOrder) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    EventQueue q;
    std::set<std::tuple<Time, int, int64_t>> pending;  // time, kind, scheduling order
    int64_t n = 0;
    Time now = 0;
    for (int i = 0; i < 400; ++i) {
      if (pending.empty() || rng() % 3 != 0) {
        const Time t = now + static_cast<Time>(rng() % 4);
        const auto kind = static_cast<EventKind>(rng() % 5);
        pending.emplace(t, static_cast<int>(kind), n);
        q.push(t, kind, n++);
      } else {
        ASSERT_FALSE(q.empty());
        const Event e = q.pop();
        const auto least = *pending.begin();
        pending.erase(pending.begin());
        EXPECT_EQ(e.time, std::get<0>(least));
        EXPECT_EQ(static_cast<int>(e.kind()), std::get<1>(least));
        EXPECT_EQ(e.target, std::get<2>(least));
        now = e.time;
      }
      EXPECT_EQ(q.size(), pending.size());
    }
  }
}

// from_seconds gives llround's nanoseconds (halves away from zero) without calling it: at exact
// halves, next to them and across magnitudes.
// Stale departures are dropped without changing the order of the rest.
TEST(EventQueue, RemoveIfKeepsTheOrderOfTheRest) {
  EventQueue a, b;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const Time t = static_cast<Time>(rng() % 50);
    const auto kind = static_cast<EventKind>(rng() % 5);
    const bool dead = kind == EventKind::kDeparture && i % 3 == 0;
    a.push(t, kind, i, dead ? 1 : 0);
    b.push(t, kind, i, dead ? 1 : 0);
  }
  a.remove_if([](const Event& e) { return e.incarnation == 1; });
  while (!b.empty()) {
    const Event e = b.pop();
    if (e.incarnation == 1) continue;
    ASSERT_FALSE(a.empty());
    const Event x = a.pop();
    EXPECT_EQ(x.time, e.time);
    EXPECT_EQ(x.target, e.target);
  }
  EXPECT_TRUE(a.empty());
}

TEST(Time, FromSecondsIsLlround) {
  std::mt19937_64 rng(11);
  auto check = [](double s) { EXPECT_EQ(from_seconds(s), std::llround(s * 1e9)) << s; };
  for (int64_t k = -5000; k <= 5000; ++k) {
    check((static_cast<double>(k) + 0.5) * 1e-9);
    check(static_cast<double>(k) * 0.5e-9);
    check(std::nextafter((static_cast<double>(k) + 0.5) * 1e-9, 0.0));
  }
  for (int i = 0; i < 200000; ++i) {
    const double mantissa = static_cast<double>(rng() >> 11) * 0x1p-53;
    const double s = std::ldexp(mantissa, static_cast<int>(rng() % 100) - 60);
    check(s);
    check(-s);
  }
  check(0.0);
  check(-0.0);
  check(1e9);  // kMaxSeconds
}

}  // namespace metronome
