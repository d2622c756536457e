#include "sim/event_queue.h"

#include <gtest/gtest.h>

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

}  // namespace metronome
