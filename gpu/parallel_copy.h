// memcpy on several threads, for the module's copies between the caller's memory and the pinned
// staging slots (module.cu). One thread moves about 8.5 GB/s into pinned memory on an H200 host and
// four move about 19 GB/s, while the bus moves 55 GB/s each way: with one thread, the host copies,
// not the transfers, make the module call slower than the CPU path at every batch size
// (docs/GPU.md, "The crossover").
//
//   ParallelCopier copier(4);              // the caller and three helper threads
//   copier.Copy(dst, src, bytes);          // returns when every byte is copied
//
// Copies below kParallelBytes run on the calling thread alone. One Copy at a time: the caller
// serialises (the module holds its context's mutex). Plain C++: the unit tests build it without
// CUDA.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace rlscore::gpu {

class ParallelCopier {
 public:
  static constexpr size_t kParallelBytes = size_t{1} << 20;

  // `threads` counts the caller: 1 copies on the calling thread only.
  explicit ParallelCopier(unsigned threads) {
    for (unsigned k = 1; k < std::max(threads, 1u); ++k) {
      helpers_.emplace_back([this, k] { Serve(k); });
    }
  }
  ParallelCopier(const ParallelCopier&) = delete;
  ParallelCopier& operator=(const ParallelCopier&) = delete;
  ~ParallelCopier() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : helpers_) t.join();
  }

  unsigned threads() const { return static_cast<unsigned>(helpers_.size()) + 1; }

  void Copy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;  // either pointer may then be null, which memcpy does not allow
    if (helpers_.empty() || bytes < kParallelBytes) {
      std::memcpy(dst, src, bytes);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      dst_ = static_cast<char*>(dst);
      src_ = static_cast<const char*>(src);
      bytes_ = bytes;
      // Parts of whole cache lines, so no two threads write the same line.
      const size_t share = (bytes + threads() - 1) / threads();
      part_ = (share + 63) / 64 * 64;
      pending_ = helpers_.size();
      ++generation_;
    }
    wake_.notify_all();
    CopyPart(0);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void CopyPart(size_t k) const {
    const size_t at = std::min(k * part_, bytes_);
    const size_t len = std::min(part_, bytes_ - at);
    if (len > 0) std::memcpy(dst_ + at, src_ + at, len);
  }

  void Serve(size_t k) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      lock.unlock();
      CopyPart(k);  // the job's fields do not change until every part is done
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, done_;
  char* dst_ = nullptr;
  const char* src_ = nullptr;
  size_t bytes_ = 0;
  size_t part_ = 0;
  size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> helpers_;  // last: started once the fields above exist
};

}  // namespace rlscore::gpu
