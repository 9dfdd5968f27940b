// Length shapes of docs/DESIGN.md §1. Lengths are in tokens.
//
//   QuadraticLengthPenalty(10240, {.weight = 0.5, .target = 4096, .max = 16384});  // -0.125
//   DapoOverlongPenalty(90, /*max=*/100, /*buffer=*/20);                           // -0.5
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rlscore::scorers {

enum class LengthShape : uint8_t {
  kNone,
  kQuadratic,     // default: 0 to L_t, -w·((L - L_t)/(L_max - L_t))² to L_max, -w beyond
  kDapoOverlong,  // DAPO soft overlong punishment (Yu et al. 2025): linear in the last buffer
  kCosine,        // cosine-scaled by correctness (Yeo et al. 2025), length ratio clamped to 1
  kKimi,          // Kimi k1.5 length reward, computed within each group
};

struct LengthOptions {
  LengthShape shape = LengthShape::kQuadratic;
  double weight = 0.5;     // w of the quadratic shape
  uint32_t target = 4096;  // L_t
  uint32_t max = 16384;    // L_max; also where a completion counts as truncated
  uint32_t dapo_buffer = 4096;
  // Cosine shape: the reward runs from *_short at length 0 to *_long at L_max.
  double cosine_correct_short = 1.0;
  double cosine_correct_long = 0.5;
  double cosine_wrong_short = -1.0;
  double cosine_wrong_long = -0.5;
};

// REQUIRES: target < max.
double QuadraticLengthPenalty(uint32_t length, const LengthOptions& options);

// 0 for L <= max - buffer; ((max - buffer) - L) / buffer up to max; -1 beyond.
// REQUIRES: 0 < buffer <= max.
double DapoOverlongPenalty(uint32_t length, uint32_t max, uint32_t buffer);

// short + (long - short) · (1 - cos(π · min(L / max, 1))) / 2, with the correct or wrong pair.
double CosineLengthReward(uint32_t length, bool correct, const LengthOptions& options);

// Kimi k1.5 (Kimi Team 2025, §2.3.3), within one group: λ = 0.5 - (L - min)/(max - min);
// λ for a correct completion, min(0, λ) for a wrong one; all 0 when every length is equal.
// REQUIRES: lengths.size() == correct.size().
std::vector<double> KimiLengthRewards(std::span<const uint32_t> lengths,
                                      std::span<const bool> correct);

// The shape's value for one completion; kKimi needs the group and returns 0 here.
double LengthComponent(uint32_t length, bool correct, const LengthOptions& options);

}  // namespace rlscore::scorers
