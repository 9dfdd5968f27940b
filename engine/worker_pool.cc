#include "engine/worker_pool.h"

#include <atomic>
#include <memory>

namespace rlscore::engine {

WorkerPool::WorkerPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void WorkerPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void WorkerPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  // Shared by the helpers this call enqueues; they may start after the call has finished its
  // work, so the state lives as long as the last of them.
  struct State {
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable done_cv;
    size_t done = 0;
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
      std::lock_guard<std::mutex> lock(state->mu);
      state->done += finished;
      if (state->done == total) state->done_cv.notify_all();
    }
  };
  const size_t helpers = std::min<size_t>(workers_.size(), n - 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t h = 0; h < helpers; ++h) tasks_.emplace_back(drain);
  }
  cv_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(state->mu);
  state->done_cv.wait(lock, [&] { return state->done == total; });
}

}  // namespace rlscore::engine
