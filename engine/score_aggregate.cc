#include "engine/score_aggregate.h"

#include <algorithm>
#include <cmath>

namespace rlscore::engine {
namespace {

// Nearest rank: the smallest value with at least q of the data at or below it.
double Percentile(const std::vector<uint32_t>& sorted_values, double q) {
  if (sorted_values.empty()) return 0.0;
  const size_t n = sorted_values.size();
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  rank = std::clamp<size_t>(rank, 1, n);
  return sorted_values[rank - 1];
}

bool Unscorable(int verdict) {
  return verdict == v1::VERDICT_UNPARSEABLE_REFERENCE || verdict == v1::VERDICT_BUDGET_EXCEEDED;
}

}  // namespace

double PassAtK(uint32_t n, uint32_t c, uint32_t k) {
  if (n - c < k) return 1.0;
  // 1 - Π_{i = n-c+1}^{n} (1 - k/i)  ==  1 - C(n-c, k) / C(n, k)
  double keep = 1.0;
  for (uint32_t i = n - c + 1; i <= n; ++i) keep *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - keep;
}

CountedResult CountedOf(const v1::CompletionResult& result) {
  return CountedResult{
      .verdict = result.verdict(),
      .num_tokens = result.num_tokens(),
      .well_formed = result.anatomy().well_formed(),
      .repeated = result.repetition().detector() != v1::REPETITION_DETECTOR_NONE,
      .truncated = result.anatomy().truncated(),
      .accuracy = result.components().accuracy(),
  };
}

void ScoreAggregator::Add(std::string_view prompt_id, const CountedResult& result) {
  ++items_;
  const int verdict = result.verdict;
  if (verdict >= 0 && verdict < static_cast<int>(verdicts_.size())) ++verdicts_[verdict];
  lengths_.push_back(result.num_tokens);
  well_formed_ += result.well_formed;
  repeated_ += result.repeated;
  truncated_ += result.truncated;
  if (Unscorable(result.verdict)) return;
  ++scorable_;
  const double accuracy = result.accuracy;
  accuracy_sum_ += accuracy;
  const bool correct = accuracy >= 1.0;
  if (prompt_id.empty()) {
    ++anonymous_prompts_;
    anonymous_correct_ += correct;
    return;
  }
  auto it = prompts_.find(prompt_id);
  if (it == prompts_.end()) it = prompts_.emplace(std::string(prompt_id), std::pair{0u, 0u}).first;
  ++it->second.first;
  it->second.second += correct;
}

v1::ScoreAggregate ScoreAggregator::Finish(std::span<const uint32_t> ks) const {
  v1::ScoreAggregate agg;
  const double items = items_ == 0 ? 1.0 : static_cast<double>(items_);
  agg.set_items(items_);
  agg.set_accuracy(scorable_ == 0 ? 0.0 : accuracy_sum_ / static_cast<double>(scorable_));
  agg.set_format_rate(static_cast<double>(well_formed_) / items);
  agg.set_repetition_rate(static_cast<double>(repeated_) / items);
  agg.set_truncation_rate(static_cast<double>(truncated_) / items);
  std::vector<uint32_t> lengths = lengths_;
  std::sort(lengths.begin(), lengths.end());
  v1::LengthPercentiles* pct = agg.mutable_length_tokens();
  pct->set_p50(Percentile(lengths, 0.50));
  pct->set_p90(Percentile(lengths, 0.90));
  pct->set_p99(Percentile(lengths, 0.99));
  pct->set_max(lengths.empty() ? 0.0 : lengths.back());
  for (uint64_t count : verdicts_) agg.add_verdicts(count);

  std::vector<uint32_t> sorted_ks(ks.begin(), ks.end());
  if (sorted_ks.empty()) sorted_ks.push_back(1);
  std::sort(sorted_ks.begin(), sorted_ks.end());
  sorted_ks.erase(std::unique(sorted_ks.begin(), sorted_ks.end()), sorted_ks.end());
  for (uint32_t k : sorted_ks) {
    // A prompt without an id has one sample: only pass@1 counts it (first, then the named
    // prompts in id order, so the sum does not depend on the order completions arrived in).
    double sum = k == 1 ? static_cast<double>(anonymous_correct_) : 0.0;
    uint64_t counted = k == 1 ? anonymous_prompts_ : 0;
    for (const auto& [id, samples] : prompts_) {
      if (samples.first < k) continue;
      sum += PassAtK(samples.first, samples.second, k);
      ++counted;
    }
    v1::PassAtK* p = agg.add_pass_at_k();
    p->set_k(k);
    p->set_prompts(counted);
    p->set_value(counted == 0 ? 0.0 : sum / static_cast<double>(counted));
  }
  return agg;
}

}  // namespace rlscore::engine
