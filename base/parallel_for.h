// Independent tasks over a few threads, for the commands that run many simulations (recommend's
// cells, plan's candidates).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace metronome {

// Runs task(i) once for each i in [0, n) on `jobs` threads, the calling thread one of them, handing
// the indices out one at a time. A task that writes only its own slot gives the same bytes for any
// `jobs`. The first exception a task throws is rethrown here once every thread has stopped (the
// others take no new index after it).
template <class Task>
void parallel_for(size_t n, int jobs, Task&& task) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex m;
  auto work = [&] {
    for (size_t i; !failed.load() && (i = next++) < n;) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard lock(m);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int j = 1; j < std::max(1, jobs); ++j) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace metronome
