#include "engine/admission.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace rlscore::engine {
namespace {

constexpr std::string_view kRetryablePayload = "rlscore.dev/retryable";

std::string Mebibytes(uint64_t bytes) {
  return absl::StrCat(bytes, " bytes (", (bytes + (1 << 19)) >> 20, " MiB)");
}

}  // namespace

MemoryBudget::MemoryBudget(uint64_t limit) : limit_(limit) {}

absl::StatusOr<MemoryBudget::Grant> MemoryBudget::Admit(uint64_t bytes) {
  if (bytes > limit_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "memory admission: handling this request needs about ", Mebibytes(bytes),
        ", more than the whole memory budget memory_budget_bytes = ", Mebibytes(limit_),
        ": send smaller requests (fewer rewards or completions per call)"));
  }
  MutexLock lock(&mu_);
  if (in_use_ + bytes > limit_) {
    return MarkRetryable(absl::ResourceExhaustedError(absl::StrCat(
                             "memory admission: handling this request needs about ",
                             Mebibytes(bytes), "; calls in flight hold ", Mebibytes(in_use_),
                             " of the memory budget memory_budget_bytes = ", Mebibytes(limit_),
                             ": retry after a backoff")),
                         "memory_budget_bytes");
  }
  in_use_ += bytes;
  return Grant(this, bytes);
}

uint64_t MemoryBudget::in_use() const {
  MutexLock lock(&mu_);
  return in_use_;
}

MemoryBudget::Grant& MemoryBudget::Grant::operator=(Grant&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
  }
  return *this;
}

void MemoryBudget::Grant::Release() {
  if (budget_ == nullptr) return;
  MutexLock lock(&budget_->mu_);
  budget_->in_use_ -= bytes_;
  budget_ = nullptr;
}

absl::Status MarkRetryable(absl::Status status, std::string_view limit) {
  status.SetPayload(Sv(kRetryablePayload), absl::Cord(Sv(limit)));
  return status;
}

std::optional<std::string> RetryableLimit(const absl::Status& status) {
  const auto limit = status.GetPayload(Sv(kRetryablePayload));  // absl::optional<absl::Cord>
  if (!limit.has_value()) return std::nullopt;
  return std::string(*limit);
}

}  // namespace rlscore::engine
