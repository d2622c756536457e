#include "quality/workers.h"

#include <atomic>
#include <chrono>
#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace metronome::quality {
namespace {

// Spins until done() or about 50 microseconds have passed; returns done(). Long enough to cover
// the gap between two regions of one decode step, short enough that a waiting thread on a shared
// machine soon gives its core back.
template <class Done>
bool spin_until(Done done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  for (int i = 0;; ++i) {
    if (done()) return true;
#if defined(__x86_64__)
    _mm_pause();
#endif
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return done();
  }
}

}  // namespace

Workers::Workers(int threads) {
  if (threads < 1) throw std::invalid_argument("Workers: at least one thread");
  errors_.resize(static_cast<size_t>(threads));
  for (int w = 1; w < threads; ++w) helpers_.emplace_back([this, w] { loop(w); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

void Workers::loop(int w) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    try {
      (*job)(w);
    } catch (...) {
      errors_[static_cast<size_t>(w)] = std::current_exception();
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(m_);  // so a waiter that saw pending_ > 0 is asleep by now
      done_.notify_one();
    }
  }
}

void Workers::run(const std::function<void(int)>& fn) {
  if (!helpers_.empty()) {
    {
      std::lock_guard<std::mutex> lock(m_);
      job_ = &fn;
      pending_.store(static_cast<int>(helpers_.size()), std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
  }
  try {
    fn(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  if (!helpers_.empty() &&
      !spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
  for (auto& e : errors_) {
    if (e) {
      const std::exception_ptr first = e;
      for (auto& f : errors_) f = nullptr;
      std::rethrow_exception(first);
    }
  }
}

void Workers::for_range(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t t = size();
  if (t == 1 || n <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  run([&](int w) {
    const int64_t lo = n * w / t, hi = n * (w + 1) / t;
    if (lo < hi) fn(lo, hi);
  });
}

void Workers::for_each(int64_t n, const std::function<void(int64_t)>& fn) {
  if (size() == 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  run([&](int) {
    for (int64_t i; (i = next.fetch_add(1)) < n;) fn(i);
  });
}

}  // namespace metronome::quality
