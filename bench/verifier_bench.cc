// Answer verification speed (docs/PERFORMANCE.md): verifications per second per core, p50 and p99
// latency, over a realistic mix of answer sections and references. Goal: >= 400,000/s on one core
// and
// <= 10 us at p99 (Math-Verify manages about 20–120 per second).
//
//   ./build-release/bench/verifier_bench
//
// Every verification gets a judge prepared beforehand (as ScoreGroups prepares one per group), so
// the verdict cache never answers: each Grade() extracts, parses and compares. The rate is over
// the timed Grade() calls alone.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "scorers/math/verifier.h"

namespace {

struct Case {
  const char* reference;
  const char* answer_section;
};

// A mix of what reasoning models write after </think>, true and false.
const Case kCases[] = {
    {"\\frac{1}{2}", " Therefore the probability is $\\boxed{\\dfrac{1}{2}}$."},
    {"\\frac{1}{2}", " So the answer is 0.5."},
    {"2\\sqrt{2}", " Simplifying, $\\sqrt{8} = \\boxed{2\\sqrt{2}}$."},
    {"2\\sqrt{2}", " The length is \\boxed{\\sqrt{8}}."},
    {"3", " Hence $x = \\boxed{3}$."},
    {"1000", " The total is \\boxed{1,000} dollars."},
    {"(1, 2)", " The point is $\\boxed{(1,2)}$."},
    {"[0, 1)", " The range is \\boxed{[0,1]}."},
    {"\\{1, 3\\}", " The solutions are \\boxed{\\{3, 1\\}}."},
    {"x^2 + 2x + 1", " Expanding gives $\\boxed{(x+1)^2}$."},
    {"40\\%", " About \\boxed{0.4} of the students."},
    {"\\pi", " The area is $\\boxed{\\pi}$."},
    {"7", " We count \\boxed{6} ways."},
    {"\\frac{3}{4}", " **Final Answer:** $\\frac{3}{4}$"},
    {"12", " The answer is \\boxed{1,2}."},
    {"-5", " so the minimum is \\boxed{-5}."},
};

}  // namespace

int main() {
  using Clock = std::chrono::steady_clock;
  auto scorer = rlscore::scorers::math::NewAccuracyScorer();
  constexpr int kRounds = 2000;
  const size_t n = std::size(kCases) * kRounds;
  // As ScoreGroups does, a round's judges are prepared (untimed), graded, and released before
  // the next round's: the heap reuses their memory, so the timings are of verification, not of
  // the first touch of fresh pages that a process holding every judge at once would pay.
  std::vector<std::unique_ptr<rlscore::scorers::Judge>> judges;
  judges.reserve(std::size(kCases));
  std::vector<double> micros;
  micros.reserve(n);
  size_t correct = 0;
  double seconds = 0;
  for (int r = 0; r < kRounds; ++r) {
    judges.clear();
    for (const Case& c : kCases) {
      const std::vector<std::string> refs = {c.reference};
      judges.push_back(scorer->Prepare(rlscore::scorers::Task::kMath, refs));
    }
    for (size_t k = 0; k < std::size(kCases); ++k) {
      const auto t0 = Clock::now();
      const rlscore::scorers::AccuracyResult result = judges[k]->Grade(kCases[k].answer_section);
      const auto t1 = Clock::now();
      correct += result.verdict == rlscore::scorers::Verdict::kCorrect;
      micros.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      seconds += std::chrono::duration<double>(t1 - t0).count();
    }
  }
  std::sort(micros.begin(), micros.end());
  const double p50 = micros[micros.size() / 2];
  const double p99 = micros[micros.size() * 99 / 100];
  std::printf(
      "verifications: %zu in %.3f s on one core: %.0f/s; p50 %.2f us, p99 %.2f us, max %.2f us "
      "(%zu correct)\n",
      n, seconds, static_cast<double>(n) / seconds, p50, p99, micros.back(), correct);
  std::printf("goal: >= 400000/s, p99 <= 10 us\n");
  return 0;
}
