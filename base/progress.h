// Progress of long work (sweeps, capacity probes, recommend, quality runs), on stderr only, so
// that what a command writes to stdout and to its files never depends on it.
//
// On a terminal: one line redrawn in place ('\r') at most every `redraw_s` (0.25 s). Elsewhere (a
// pipe, a log file, make_figures.sh): a plain line every `line_s` (5 s). Work that ends before the
// first line is due prints nothing, so short commands stay silent. Counts may come from any
// thread. The clock is injected so the formatting and the rate limit are tested without waiting.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>

namespace metronome {

class Progress {
 public:
  using Clock = std::function<double()>;  // monotonic seconds

  struct Style {
    bool terminal = false;  // redraw one line with '\r'; else a new line each time
    double redraw_s = 0.25;
    double line_s = 5.0;
  };

  // `what` names the work ("sweep"); `total` units of `unit` ("runs") are expected; total 0:
  // not known in advance (a bisection), so no percentage and no ETA.
  Progress(std::string what, int64_t total, std::string unit, std::ostream& out, Style style,
           Clock clock);
  ~Progress();  // finish()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(int64_t n = 1);
  void set_total(int64_t total);
  // Ends the line: the final count, rate and time, if any line was shown before.
  void finish();

  // "sweep: 37/120 runs (31%), 4.2 runs/s, 9 s elapsed, ETA 20 s"
  static std::string line(const std::string& what, int64_t done, int64_t total,
                          const std::string& unit, double elapsed_s, bool final);
  // "42 s", "3 min 05 s", "2 h 07 min"
  static std::string duration(double seconds);

 private:
  void draw(double now, bool final);  // mutex held

  std::string what_, unit_;
  std::ostream& out_;
  Style style_;
  Clock clock_;
  std::mutex m_;
  int64_t done_ = 0, total_ = 0;
  double start_ = 0, last_ = 0;
  bool shown_ = false, finished_ = false;
  size_t width_ = 0;  // of the last terminal line, to blank what a shorter one leaves behind
};

// `--quiet` (any command): no progress at all.
void set_progress_quiet(bool quiet);

// The process's reporter on stderr (terminal style when stderr is a tty), or null under --quiet.
std::unique_ptr<Progress> stderr_progress(std::string what, int64_t total, std::string unit);

}  // namespace metronome
