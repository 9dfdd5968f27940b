// Time as a dependency (Envoy style): code that compares against the clock takes a `const Clock&`
// so tests can script time instead of sleeping.
//
//   absl::Status CheckDeadline(const Clock& clock, absl::Time deadline) {
//     if (clock.Now() >= deadline) return absl::DeadlineExceededError("deadline passed");
//     return absl::OkStatus();
//   }
//   CheckDeadline(RealClock(), deadline);        // production
//   FakeClock clock; clock.Advance(absl::Hours(1)); CheckDeadline(clock, deadline);   // a test
#pragma once

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace rlscore {

// Thread-safety: implementations must allow concurrent Now() calls.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// The system clock. Lives for the whole process.
inline const Clock& RealClock() {
  class Real final : public Clock {
   public:
    absl::Time Now() const override { return absl::Now(); }
  };
  static const Real* const clock = new Real();
  return *clock;
}

}  // namespace rlscore
