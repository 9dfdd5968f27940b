// Memory admission: the bytes that the calls being handled may hold at once are capped, so a
// burst of large requests is refused instead of growing the process until a sidecar's memory
// limit kills it (and every call of every trainer rank with it).
//
//   MemoryBudget budget(2ull << 30);   // limits { memory_budget_bytes }
//   absl::StatusOr<MemoryBudget::Grant> grant = budget.Admit(peak_bytes);
//   if (!grant.ok()) return grant.status();  // RESOURCE_EXHAUSTED naming the budget
//   ... handle the call; the grant gives its bytes back when destroyed ...
//
// A call is charged, before any work, the peak memory its handling will reach, estimated from
// its request (engine/request_cost.h). A call that would take the bytes in use past the budget
// is refused at once: retryable (MarkRetryable) when it would fit once the calls in flight
// are done, final when it alone is larger than the whole budget.
//
// Thread-safety: every member may be called concurrently; a Grant is owned by one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/mutex.h"

namespace rlscore::engine {

class MemoryBudget {
 public:
  // Bytes charged to one admitted call, given back when the grant is destroyed.
  class Grant {
   public:
    Grant() = default;
    ~Grant() { Release(); }
    Grant(Grant&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) {
      other.budget_ = nullptr;
    }
    Grant& operator=(Grant&& other) noexcept;
    Grant(const Grant&) = delete;
    Grant& operator=(const Grant&) = delete;

    uint64_t bytes() const { return bytes_; }

   private:
    friend class MemoryBudget;
    Grant(MemoryBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
    void Release();

    MemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  // `limit` bytes: the setting limits { memory_budget_bytes } (--memory-budget-bytes).
  explicit MemoryBudget(uint64_t limit);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Charges `bytes`, or RESOURCE_EXHAUSTED naming the budget, what the call needs and what is in
  // use: retryable (MarkRetryable) unless `bytes` alone exceeds the limit.
  absl::StatusOr<Grant> Admit(uint64_t bytes);

  uint64_t limit() const { return limit_; }
  uint64_t in_use() const;

 private:
  const uint64_t limit_;
  mutable Mutex mu_;
  uint64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

// Marks `status` as a refusal that the same request may retry after a backoff: the server was
// busy (`limit` names what it was short of: "memory_budget_bytes", "max_concurrent_calls"), the
// request was not wrong. The gRPC layer sends `limit` as the trailing metadata kRetryableTrailer;
// rlscore's clients retry RESOURCE_EXHAUSTED only when it is there.
absl::Status MarkRetryable(absl::Status status, std::string_view limit);
// The limit a retryable refusal names; nullopt for any other status.
std::optional<std::string> RetryableLimit(const absl::Status& status);

inline constexpr std::string_view kRetryableTrailer = "rlscore-retryable";

}  // namespace rlscore::engine
