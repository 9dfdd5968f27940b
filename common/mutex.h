// A mutex, its scoped lock and a condition variable that clang's -Wthread-safety checks: members
// marked ABSL_GUARDED_BY(mu_) may only be touched with mu_ held, and functions marked
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) only called so. The same idea as leveldb's port::Mutex.
//
//   class Counter {
//    public:
//     void Add(int n) { MutexLock lock(&mu_); total_ += n; }
//    private:
//     Mutex mu_;
//     int total_ ABSL_GUARDED_BY(mu_) = 0;
//   };
//
// Why not absl::Mutex, which carries the same annotations: Debian's abseil is built without
// ThreadSanitizer, so TSan cannot see the order an absl::Mutex imposes and would report races
// that are not there. These wrap std::mutex, which TSan understands.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace rlscore {

// Thread-safe, not reentrant.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Tells the analysis that the caller holds the lock (a callback run under it); checks nothing.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Waits release the mutex while blocked and hold it again when they return. Callers loop on
// their condition: a wait may return without a signal.
class CondVar {
 public:
  // REQUIRES: `mu` is held.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait, until `deadline`; false once it has passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex* mu, std::chrono::time_point<Clock, Duration> deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace rlscore
