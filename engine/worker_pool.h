// A fixed pool of threads that scores the groups of a batch on every core.
//
//   WorkerPool pool(/*threads=*/0);                 // one per core
//   pool.ParallelFor(groups.size(), [&](size_t g) { ScoreGroupInto(g, &results[g]); });
//
// ParallelFor hands out indices dynamically and returns when every index is done; each index
// writes only its own slot, so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace rlscore::engine {

// Thread-safe: ParallelFor may be called from many threads at once (calls share the workers).
class WorkerPool {
 public:
  // `threads` == 0 means std::thread::hardware_concurrency().
  explicit WorkerPool(unsigned threads);
  // A pool without threads of its own: ParallelFor runs every index on the calling thread, for
  // callers that bring their own parallelism.
  struct CallerOnly {};
  explicit WorkerPool(CallerOnly) {}
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // The pool's own threads (0 for CallerOnly).
  unsigned size() const { return static_cast<unsigned>(workers_.size()); }

  // What `threads` means to the constructor: itself, or the number of cores for 0.
  static unsigned Resolve(unsigned threads);

  // Queues `task` to run on a pool thread and returns at once.
  void Submit(std::function<void()> task);

  // Runs fn(0) … fn(n - 1) on the pool and the calling thread; returns when all have returned.
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn);

 private:
  void Run();

  Mutex mu_;
  CondVar cv_;  // a task was queued, or the pool is stopping
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;  // set by the constructor, then only read
};

}  // namespace rlscore::engine
