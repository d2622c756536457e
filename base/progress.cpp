#include "base/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>

namespace metronome {
namespace {

std::atomic<bool> g_quiet{false};

std::string rate_text(double per_s) {
  // Two significant figures are what a rate means here; more would flicker on every redraw.
  if (per_s >= 10) return fmt::format("{:.0f}", per_s);
  if (per_s >= 1) return fmt::format("{:.1f}", per_s);
  return fmt::format("{:.2f}", per_s);
}

}  // namespace

Progress::Progress(std::string what, int64_t total, std::string unit, std::ostream& out,
                   Style style, Clock clock)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      out_(out),
      style_(style),
      clock_(std::move(clock)),
      total_(std::max<int64_t>(0, total)) {
  start_ = last_ = clock_();
}

Progress::~Progress() { finish(); }

std::string Progress::duration(double s) {
  if (!std::isfinite(s) || s < 0) s = 0;
  const auto t = static_cast<int64_t>(std::llround(s));
  if (t < 60) return fmt::format("{} s", t);
  if (t < 3600) return fmt::format("{} min {:02} s", t / 60, t % 60);
  return fmt::format("{} h {:02} min", t / 3600, (t % 3600) / 60);
}

std::string Progress::line(const std::string& what, int64_t done, int64_t total,
                           const std::string& unit, double elapsed_s, bool final) {
  std::string s = what + ": ";
  if (total > 0) {
    s += fmt::format(
        "{}/{} {} ({:.0f}%)", done, total, unit,
        100.0 * static_cast<double>(std::min(done, total)) / static_cast<double>(total));
  } else {
    s += fmt::format("{} {}", done, unit);
  }
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
  if (done > 0 && elapsed_s > 0) s += fmt::format(", {} {}/s", rate_text(rate), unit);
  if (final) return s + ", " + duration(elapsed_s);
  s += ", " + duration(elapsed_s) + " elapsed";
  if (total > 0 && done > 0 && done < total) {
    s += ", ETA " + duration(static_cast<double>(total - done) / rate);
  }
  return s;
}

void Progress::draw(double now, bool final) {
  const std::string l = line(what_, done_, total_, unit_, now - start_, final);
  if (style_.terminal) {
    out_ << '\r' << l;
    if (l.size() < width_) out_ << std::string(width_ - l.size(), ' ');
    width_ = l.size();
    if (final) out_ << '\n';
  } else {
    out_ << l << '\n';
  }
  out_.flush();
  last_ = now;
  shown_ = true;
}

void Progress::add(int64_t n) {
  std::lock_guard lock(m_);
  if (finished_) return;
  done_ += n;
  const double now = clock_();
  const double every = style_.terminal ? style_.redraw_s : style_.line_s;
  if (now - last_ >= every) draw(now, false);
}

void Progress::set_total(int64_t total) {
  std::lock_guard lock(m_);
  total_ = std::max<int64_t>(0, total);
}

void Progress::finish() {
  std::lock_guard lock(m_);
  if (finished_) return;
  finished_ = true;
  if (shown_) draw(clock_(), true);
}

void set_progress_quiet(bool quiet) { g_quiet.store(quiet); }

std::unique_ptr<Progress> stderr_progress(std::string what, int64_t total, std::string unit) {
  if (g_quiet.load()) return nullptr;
  Progress::Style style;
  style.terminal = isatty(STDERR_FILENO) != 0;
  return std::make_unique<Progress>(std::move(what), total, std::move(unit), std::cerr, style, [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  });
}

}  // namespace metronome
