#include "engine/admission.h"

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::engine {
namespace {

using ::testing::HasSubstr;

TEST(MemoryBudget, AdmitsUntilFullAndTakesBackWhatAGrantHeld) {
  MemoryBudget budget(1000);
  absl::StatusOr<MemoryBudget::Grant> a = budget.Admit(600);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(budget.in_use(), 600u);
  absl::StatusOr<MemoryBudget::Grant> b = budget.Admit(400);  // exactly full
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(budget.in_use(), 1000u);

  const absl::StatusOr<MemoryBudget::Grant> c = budget.Admit(1);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("calls in flight hold 1000 bytes (0 MiB) of the memory budget "
                        "memory_budget_bytes = 1000 bytes"));
  EXPECT_EQ(RetryableLimit(c.status()), "memory_budget_bytes");

  *a = MemoryBudget::Grant();  // released
  EXPECT_EQ(budget.in_use(), 400u);
  MemoryBudget::Grant moved = *std::move(b);  // a move does not release twice
  EXPECT_EQ(budget.in_use(), 400u);
  EXPECT_EQ(moved.bytes(), 400u);
  { const MemoryBudget::Grant gone = std::move(moved); }
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_TRUE(budget.Admit(1000).ok());
}

TEST(MemoryBudget, ACallLargerThanTheWholeBudgetIsRefusedForGood) {
  MemoryBudget budget(1 << 20);
  const absl::StatusOr<MemoryBudget::Grant> g = budget.Admit((1 << 20) + 1);
  ASSERT_EQ(g.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(g.status().message()),
              HasSubstr("more than the whole memory budget memory_budget_bytes = 1048576 bytes "
                        "(1 MiB): send smaller requests"));
  EXPECT_EQ(RetryableLimit(g.status()), std::nullopt);
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(MemoryBudget, ConcurrentCallsNeverHoldMoreThanTheBudget) {
  // Eight threads admit and release grants of every size from 1 to 300 against a budget of 1000:
  // what is held never exceeds it, and all of it comes back.
  MemoryBudget budget(1000);
  std::atomic<uint64_t> held{0};
  std::atomic<uint64_t> worst{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 2000; ++i) {
        const uint64_t bytes = 1 + (i * 7 + static_cast<uint64_t>(t) * 31) % 300;
        absl::StatusOr<MemoryBudget::Grant> g = budget.Admit(bytes);
        if (!g.ok()) {
          ++refused;
          continue;
        }
        const uint64_t now = held += bytes;
        uint64_t seen = worst.load();
        while (now > seen && !worst.compare_exchange_weak(seen, now)) {
        }
        held -= bytes;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(worst.load(), 1000u);
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(Retryable, OnlyMarkedStatusesAreRetryable) {
  EXPECT_EQ(RetryableLimit(absl::ResourceExhaustedError("max_group_size")), std::nullopt);
  EXPECT_EQ(RetryableLimit(absl::OkStatus()), std::nullopt);
  const absl::Status busy =
      MarkRetryable(absl::ResourceExhaustedError("busy"), "max_concurrent_calls");
  EXPECT_EQ(busy.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(busy.message(), "busy");
  EXPECT_EQ(RetryableLimit(busy), "max_concurrent_calls");
}

}  // namespace
}  // namespace rlscore::engine
