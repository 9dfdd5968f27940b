#include "engine/worker_pool.h"

#include <atomic>
#include <memory>

namespace rlscore::engine {

unsigned WorkerPool::Resolve(unsigned threads) {
  return threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : threads;
}

WorkerPool::WorkerPool(unsigned threads) {
  threads = Resolve(threads);
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && tasks_.empty()) cv_.Wait(&mu_);
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void WorkerPool::Submit(std::function<void()> task) {
  {
    MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.Signal();
}

void WorkerPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  // Shared by the helpers this call enqueues; they may start after the call has finished its
  // work, so the state lives as long as the last of them.
  struct State {
    std::atomic<size_t> next{0};
    Mutex mu;
    CondVar done_cv;
    size_t done ABSL_GUARDED_BY(mu) = 0;
  };
  auto state = std::make_shared<State>();
  const size_t total = n;
  auto drain = [state, total, &fn] {
    size_t finished = 0;
    for (size_t i; (i = state->next.fetch_add(1)) < total;) {
      fn(i);
      ++finished;
    }
    if (finished > 0) {
      MutexLock lock(&state->mu);
      state->done += finished;
      if (state->done == total) state->done_cv.SignalAll();
    }
  };
  const size_t helpers = std::min<size_t>(workers_.size(), n - 1);
  {
    MutexLock lock(&mu_);
    for (size_t h = 0; h < helpers; ++h) tasks_.emplace_back(drain);
  }
  cv_.SignalAll();
  drain();
  MutexLock lock(&state->mu);
  while (state->done != total) state->done_cv.Wait(&state->mu);
}

}  // namespace rlscore::engine
