// A fixed set of threads that run one parallel region at a time for the forward pass.
//
// Determinism: a region hands worker w a task range that depends only on (w, size()), or tasks
// that each write their own outputs, and every output is computed by one worker with a fixed order
// of operations, so results are the same bytes whatever the thread count. The threads live as long
// as the Workers object (one forward run), so a region costs a wake-up, not a thread start:
// a step has about six regions per layer. A decoded token's regions last microseconds, about what
// a sleep and a futex wake-up cost, so each side spins a little on the region's counters before it
// sleeps (as OpenMP runtimes do).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace metronome::quality {

class Workers {
 public:
  // threads >= 1: the calling thread is worker 0, threads - 1 helpers are started.
  explicit Workers(int threads);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  // fn(w) for every worker w in [0, size()), concurrently; returns when all have returned and
  // rethrows the lowest-numbered worker's exception, if any.
  void run(const std::function<void(int)>& fn);

  // fn(i) for i in [0, n): worker w takes the contiguous range [w n / size(), (w + 1) n / size()).
  void for_range(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

  // fn(i) for i in [0, n), handed out one at a time (for tasks of unequal cost); each task must
  // write only its own outputs.
  void for_each(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  void loop(int w);

  std::mutex m_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // written under m_; read spinning without it
  std::atomic<int> pending_{0};
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> helpers_;
};

}  // namespace metronome::quality
