// Length shapes of docs/DESIGN.md §1 (see length.h). Every shape is bounded and never NaN: a
// violated REQUIRES degrades to a step at the boundary instead of dividing by zero.
#include "scorers/length.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <vector>

namespace rlscore::scorers {

double QuadraticLengthPenalty(uint32_t length, const LengthOptions& options) {
  // L_max is tested first: it is where a completion counts as truncated, and with a violated
  // REQUIRES (target >= max) it keeps the formula below away from a zero or negative span.
  if (length >= options.max) return -options.weight;
  if (length <= options.target) return 0.0;
  const double x = static_cast<double>(length - options.target) /
                   static_cast<double>(options.max - options.target);
  return -options.weight * x * x;
}

double DapoOverlongPenalty(uint32_t length, uint32_t max, uint32_t buffer) {
  if (length > max) return -1.0;
  if (buffer == 0) return 0.0;  // violated REQUIRES: a hard step at max
  // Signed: with buffer > max (violated REQUIRES) the soft zone starts below 0 and the value
  // stays in [-1, 0).
  const double expected = static_cast<double>(max) - static_cast<double>(buffer);
  const double l = static_cast<double>(length);
  if (l <= expected) return 0.0;
  return (expected - l) / static_cast<double>(buffer);
}

double CosineLengthReward(uint32_t length, bool correct, const LengthOptions& options) {
  const double short_value = correct ? options.cosine_correct_short : options.cosine_wrong_short;
  const double long_value = correct ? options.cosine_correct_long : options.cosine_wrong_long;
  // max == 0: every length is at or past L_max.
  const double ratio = (options.max == 0 || length >= options.max)
                           ? 1.0
                           : static_cast<double>(length) / static_cast<double>(options.max);
  return short_value +
         (long_value - short_value) * (1.0 - std::cos(std::numbers::pi * ratio)) / 2.0;
}

std::vector<double> KimiLengthRewards(std::span<const uint32_t> lengths,
                                      std::span<const bool> correct) {
  std::vector<double> rewards(lengths.size(), 0.0);
  if (lengths.empty() || correct.size() != lengths.size()) return rewards;  // REQUIRES violated
  const auto [min_it, max_it] = std::minmax_element(lengths.begin(), lengths.end());
  const uint32_t min_len = *min_it;
  const uint32_t max_len = *max_it;
  if (min_len == max_len) return rewards;
  const double span = static_cast<double>(max_len - min_len);
  for (size_t i = 0; i < lengths.size(); ++i) {
    const double lambda = 0.5 - static_cast<double>(lengths[i] - min_len) / span;
    rewards[i] = correct[i] ? lambda : std::min(0.0, lambda);
  }
  return rewards;
}

double LengthComponent(uint32_t length, bool correct, const LengthOptions& options) {
  switch (options.shape) {
    case LengthShape::kNone:
      return 0.0;
    case LengthShape::kQuadratic:
      return QuadraticLengthPenalty(length, options);
    case LengthShape::kDapoOverlong:
      return DapoOverlongPenalty(length, options.max, options.dapo_buffer);
    case LengthShape::kCosine:
      return CosineLengthReward(length, correct, options);
    case LengthShape::kKimi:
      return 0.0;  // needs the whole group: KimiLengthRewards
  }
  return 0.0;
}

}  // namespace rlscore::scorers
