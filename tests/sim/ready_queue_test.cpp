// The ready queue against a sorted reference: whatever mix of in-order and early tickets goes in,
// tickets come out in service order (earlier()), whether popped one at a time or taken as the
// ring's front run (the bulk path), also while early tickets wait in the heap, and whether pushed
// one at a time or through an Appender (step end's path).
#include "sim/engine/ready_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "base/rng.h"

namespace metronome {
namespace {

bool same(const Ticket& a, const Ticket& b) {
  return a.id == b.id && a.incarnation == b.incarnation && a.seq == b.seq &&
         a.release == b.release && a.order == b.order;
}

TEST(ReadyQueue, ServesInServiceOrderOneByOneAndAsRuns) {
  Rng rng(7, "ready-queue");
  ReadyQueue q;
  std::vector<Ticket> reference;  // every queued ticket, kept sorted by earlier()
  uint64_t seq = 0;
  Time clock = 0;
  int64_t runs_moved = 0, early = 0;
  int64_t appended = 0;
  for (int round = 0; round < 20000; ++round) {
    const double u = rng.uniform();
    // Mostly one period after the last release; sometimes earlier (an arrival), sometimes the
    // same instant (a tie broken by seq).
    auto next = [&] {
      Time release = clock + 80;
      const double v = rng.uniform();
      if (v < 0.02) {
        release = clock - static_cast<Time>(rng.uniform() * 50);
        ++early;
      } else if (v < 0.12) {
        release = clock;
      }
      clock = std::max(clock, release);
      const Ticket t{static_cast<int32_t>(round), 1, seq++, release, round};
      reference.insert(std::upper_bound(reference.begin(), reference.end(), t, earlier), t);
      return t;
    };
    if (u < 0.45) {
      q.push_fresh(next());
    } else if (u < 0.55) {
      // A step's end: up to n pushes through an Appender (which makes room for n first),
      // published midway at times (as before a merge check reads the back) and at the end.
      const size_t n = static_cast<size_t>(rng.uniform() * 100);
      ReadyQueue::Appender a(q, n);
      for (size_t i = 0; i < n; ++i) {
        if (rng.uniform() < 0.9) a.push_fresh(next());
        if (rng.uniform() < 0.05) a.publish();
      }
      a.publish();
      appended += n > 0;
    } else if (u < 0.8) {
      if (q.empty()) continue;
      ASSERT_TRUE(same(q.front(), reference.front())) << "round " << round;
      q.pop_front();
      reference.erase(reference.begin());
    } else {
      // The ring's tickets released by run_bound() are the first in service order.
      size_t run = 0;
      while (run < q.ring_size() && q.run_at(run).release <= q.run_bound()) ++run;
      const size_t n = std::min<size_t>(run, static_cast<size_t>(rng.uniform() * 40));
      const RingQueue<Ticket>::View view = q.run();
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(same(q.run_at(i), reference[i])) << round;
        ASSERT_TRUE(same(view[i], reference[i])) << round;
      }
      q.pop_run(n);
      reference.erase(reference.begin(), reference.begin() + static_cast<ptrdiff_t>(n));
      runs_moved += n > 0;
    }
    ASSERT_EQ(q.size(), reference.size());
  }
  EXPECT_GT(runs_moved, 500);
  EXPECT_GT(early, 100);
  EXPECT_GT(appended, 500);
  while (!q.empty()) {
    ASSERT_TRUE(same(q.front(), reference.front()));
    q.pop_front();
    reference.erase(reference.begin());
  }
  EXPECT_TRUE(reference.empty());
}

}  // namespace
}  // namespace metronome
