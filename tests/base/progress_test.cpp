// Progress lines and their rate limit, on an injected clock (no test waits).
#include "base/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <thread>
#include <vector>

namespace metronome {
namespace {

struct FakeClock {
  double now = 100.0;  // any origin: only differences count
  Progress::Clock fn() {
    return [this] { return now; };
  }
};

size_t count(const std::string& s, char c) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), c));
}

TEST(Progress, LineGivesCountPercentRateAndEta) {
  // 30 of 120 in 10 s: 3 per s, 90 left -> 30 s.
  EXPECT_EQ(Progress::line("sweep", 30, 120, "runs", 10.0, false),
            "sweep: 30/120 runs (25%), 3.0 runs/s, 10 s elapsed, ETA 30 s");
  // The final line: no ETA, the whole time.
  EXPECT_EQ(Progress::line("sweep", 120, 120, "runs", 40.0, true),
            "sweep: 120/120 runs (100%), 3.0 runs/s, 40 s");
}

TEST(Progress, UnknownTotalHasNoPercentOrEta) {
  const std::string l = Progress::line("capacity", 7, 0, "probes", 2.0, false);
  EXPECT_EQ(l, "capacity: 7 probes, 3.5 probes/s, 2 s elapsed");
}

TEST(Progress, NothingDoneYetHasNoRate) {
  EXPECT_EQ(Progress::line("sweep", 0, 10, "runs", 3.0, false),
            "sweep: 0/10 runs (0%), 3 s elapsed");
}

TEST(Progress, DurationsReadAsMinutesAndHours) {
  EXPECT_EQ(Progress::duration(0.4), "0 s");
  EXPECT_EQ(Progress::duration(59.4), "59 s");
  EXPECT_EQ(Progress::duration(185), "3 min 05 s");
  EXPECT_EQ(Progress::duration(2 * 3600 + 7 * 60 + 30), "2 h 07 min");
  EXPECT_EQ(Progress::duration(-1), "0 s");
}

TEST(Progress, RatesKeepTwoSignificantFigures) {
  EXPECT_NE(Progress::line("q", 1, 0, "steps", 3.0, false).find("0.33 steps/s"), std::string::npos);
  EXPECT_NE(Progress::line("q", 250, 0, "steps", 10.0, false).find(" 25 steps/s"),
            std::string::npos);
}

TEST(Progress, PlainLinesAtMostEveryLineInterval) {
  std::ostringstream out;
  FakeClock c;
  Progress::Style st;  // not a terminal: a line every 5 s
  {
    Progress p("sweep", 100, "runs", out, st, c.fn());
    for (int i = 0; i < 100; ++i) {
      c.now += 0.5;  // 50 s of work, 0.5 s per run
      p.add();
    }
  }
  const std::string s = out.str();
  // Lines at 5, 10, ..., 50 s (10) and the final one; no carriage returns off a terminal.
  EXPECT_EQ(count(s, '\n'), 11u) << s;
  EXPECT_EQ(count(s, '\r'), 0u);
  EXPECT_NE(s.find("sweep: 10/100 runs (10%), 2.0 runs/s, 5 s elapsed, ETA 45 s\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("sweep: 100/100 runs (100%), 2.0 runs/s, 50 s\n"), std::string::npos) << s;
}

TEST(Progress, TerminalRedrawsOneLineAtMostFourTimesASecond) {
  std::ostringstream out;
  FakeClock c;
  Progress::Style st;
  st.terminal = true;
  Progress p("sweep", 1000, "runs", out, st, c.fn());
  for (int i = 0; i < 1000; ++i) {
    c.now += 0.01;  // 10 s, 100 runs a second
    p.add();
  }
  p.finish();
  const std::string s = out.str();
  const size_t redraws = count(s, '\r');
  EXPECT_GE(redraws, 39u);  // every 0.25 s over 10 s, plus the final one
  EXPECT_LE(redraws, 41u);
  EXPECT_EQ(count(s, '\n'), 1u);  // only the final line ends
  EXPECT_EQ(s.back(), '\n');
}

TEST(Progress, TerminalBlanksWhatAShorterLineLeaves) {
  std::ostringstream out;
  FakeClock c;
  Progress::Style st;
  st.terminal = true;
  Progress p("w", 0, "u", out, st, c.fn());
  c.now += 1;
  p.add(1000000);  // a long line
  c.now += 1;
  p.add(-999999);  // a shorter one (rate and count fall)
  const std::string s = out.str();
  const auto second = s.rfind('\r');
  const auto first = s.find('\r');
  EXPECT_EQ(s.size() - second, second - first) << "the redraw is as wide as the line it covers";
}

TEST(Progress, ShortWorkPrintsNothing) {
  std::ostringstream out;
  FakeClock c;
  {
    Progress p("capacity", 0, "probes", out, Progress::Style{}, c.fn());
    for (int i = 0; i < 20; ++i) {
      c.now += 0.1;  // 2 s in all: under the first line's 5 s
      p.add();
    }
  }
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, CountsFromManyThreadsAllLand) {
  std::ostringstream out;
  Progress::Style st;
  st.line_s = 0;  // a line on every add: the stream is written from every thread
  Progress p("sweep", 4000, "runs", out, st, [] { return 1.0; });
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) p.add();
    });
  for (auto& t : ts) t.join();
  p.finish();
  const std::string s = out.str();
  EXPECT_EQ(count(s, '\n'), 4001u);  // whole lines, none torn
  EXPECT_NE(s.find("sweep: 4000/4000 runs (100%)"), std::string::npos);
}

TEST(Progress, QuietGivesNoReporter) {
  set_progress_quiet(true);
  EXPECT_EQ(stderr_progress("sweep", 10, "runs"), nullptr);
  set_progress_quiet(false);
  EXPECT_NE(stderr_progress("sweep", 10, "runs"), nullptr);
}

}  // namespace
}  // namespace metronome
