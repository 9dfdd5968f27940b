#include "engine/score_aggregate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"

namespace rlscore::engine {
namespace {

using ::testing::ElementsAre;

v1::CompletionResult Result(v1::Verdict verdict, uint32_t tokens, bool well_formed = true,
                            bool truncated = false, bool repeated = false) {
  v1::CompletionResult r;
  r.set_verdict(verdict);
  r.mutable_components()->set_accuracy(verdict == v1::VERDICT_CORRECT ? 1.0 : 0.0);
  r.set_num_tokens(tokens);
  r.mutable_anatomy()->set_well_formed(well_formed);
  r.mutable_anatomy()->set_truncated(truncated);
  if (repeated) r.mutable_repetition()->set_detector(v1::REPETITION_DETECTOR_NGRAM);
  return r;
}

TEST(PassAtK, UnbiasedEstimator) {
  EXPECT_DOUBLE_EQ(PassAtK(5, 2, 1), 0.4);
  EXPECT_DOUBLE_EQ(PassAtK(5, 2, 2), 0.7);  // 1 - C(3,2)/C(5,2)
  EXPECT_DOUBLE_EQ(PassAtK(5, 0, 3), 0.0);
  EXPECT_DOUBLE_EQ(PassAtK(5, 5, 3), 1.0);
  EXPECT_DOUBLE_EQ(PassAtK(10, 3, 8), 1.0);  // fewer than k wrong samples
  EXPECT_NEAR(PassAtK(100, 1, 10), 0.1, 1e-12);
}

TEST(ScoreAggregator, RatesPercentilesVerdictsAndPassAtK) {
  ScoreAggregator agg;
  agg.Add("a", Result(v1::VERDICT_CORRECT, 100));
  agg.Add("a", Result(v1::VERDICT_WRONG, 200, /*well_formed=*/false));
  agg.Add("a", Result(v1::VERDICT_WRONG, 300, true, /*truncated=*/true, /*repeated=*/true));
  agg.Add("b", Result(v1::VERDICT_CORRECT, 400));
  agg.Add("b", Result(v1::VERDICT_BUDGET_EXCEEDED, 500));  // unscorable: rates only
  agg.Add("", Result(v1::VERDICT_CORRECT, 600));           // a prompt of its own
  agg.Add("", Result(v1::VERDICT_NO_ANSWER, 700, false));
  const uint32_t ks[] = {2, 1, 2};
  const v1::ScoreAggregate out = agg.Finish(ks);
  EXPECT_EQ(out.items(), 7u);
  EXPECT_DOUBLE_EQ(out.accuracy(), 3.0 / 6);
  EXPECT_DOUBLE_EQ(out.format_rate(), 5.0 / 7);
  EXPECT_DOUBLE_EQ(out.repetition_rate(), 1.0 / 7);
  EXPECT_DOUBLE_EQ(out.truncation_rate(), 1.0 / 7);
  EXPECT_EQ(out.length_tokens().p50(), 400);  // nearest rank: ceil(0.5 * 7) = 4th
  EXPECT_EQ(out.length_tokens().p90(), 700);
  EXPECT_EQ(out.length_tokens().max(), 700);
  EXPECT_THAT(out.verdicts(), ElementsAre(0, 3, 2, 1, 0, 1));
  ASSERT_EQ(out.pass_at_k_size(), 2);
  // pass@1 over a (1 of 3), b (1 of 1 scorable) and the two anonymous prompts (1 of 1, 0 of 1).
  EXPECT_EQ(out.pass_at_k(0).k(), 1u);
  EXPECT_EQ(out.pass_at_k(0).prompts(), 4u);
  EXPECT_DOUBLE_EQ(out.pass_at_k(0).value(), (1.0 / 3 + 1.0 + 1.0 + 0.0) / 4);
  // pass@2: only a has two scorable samples.
  EXPECT_EQ(out.pass_at_k(1).k(), 2u);
  EXPECT_EQ(out.pass_at_k(1).prompts(), 1u);
  EXPECT_DOUBLE_EQ(out.pass_at_k(1).value(), PassAtK(3, 1, 2));
}

TEST(ScoreAggregator, EmptyIsAllZeroWithPassAtOne) {
  const v1::ScoreAggregate out = ScoreAggregator().Finish({});
  EXPECT_EQ(out.items(), 0u);
  EXPECT_EQ(out.accuracy(), 0.0);
  EXPECT_EQ(out.length_tokens().max(), 0.0);
  ASSERT_EQ(out.pass_at_k_size(), 1);
  EXPECT_EQ(out.pass_at_k(0).k(), 1u);
  EXPECT_EQ(out.pass_at_k(0).prompts(), 0u);
}

// pass@k sums its prompts in id order, so the aggregate of 0/1 accuracies does not depend on the
// order the completions were added in, bit for bit.
TEST(ScoreAggregator, DoesNotDependOnTheOrderOfCompletions) {
  std::mt19937 rng(7);
  std::vector<std::pair<std::string, v1::CompletionResult>> items;
  for (int i = 0; i < 500; ++i) {
    const v1::Verdict verdict = static_cast<v1::Verdict>(1 + rng() % 5);
    items.emplace_back(rng() % 10 == 0 ? "" : absl::StrCat("p", rng() % 60),
                       Result(verdict, static_cast<uint32_t>(rng() % 9000), rng() % 2 == 0,
                              rng() % 5 == 0, rng() % 7 == 0));
  }
  const uint32_t ks[] = {1, 2, 4, 8};
  ScoreAggregator in_order;
  for (const auto& [id, r] : items) in_order.Add(id, r);
  const std::string expected = in_order.Finish(ks).SerializeAsString();
  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(items.begin(), items.end(), rng);
    ScoreAggregator shuffled;
    for (const auto& [id, r] : items) shuffled.Add(id, r);
    EXPECT_EQ(shuffled.Finish(ks).SerializeAsString(), expected) << "trial " << trial;
  }
}

// A scoring thread hands on CountedOf(result) and frees the result, and the aggregate counts
// only that: each field must come from its own part of the result, in both polarities.
TEST(ScoreAggregator, CountsCarryWhatTheAggregateReads) {
  // Partial credit: the accuracy is the component's, not the verdict's.
  v1::CompletionResult partial = Result(v1::VERDICT_WRONG, 1234, /*well_formed=*/false,
                                        /*truncated=*/true, /*repeated=*/true);
  partial.mutable_components()->set_accuracy(0.25);
  const CountedResult a = CountedOf(partial);
  EXPECT_EQ(a.verdict, v1::VERDICT_WRONG);
  EXPECT_EQ(a.num_tokens, 1234u);
  EXPECT_FALSE(a.well_formed);
  EXPECT_TRUE(a.truncated);
  EXPECT_TRUE(a.repeated);
  EXPECT_EQ(a.accuracy, 0.25);

  const CountedResult b = CountedOf(Result(v1::VERDICT_BUDGET_EXCEEDED, 7, /*well_formed=*/true,
                                           /*truncated=*/false, /*repeated=*/false));
  EXPECT_EQ(b.verdict, v1::VERDICT_BUDGET_EXCEEDED);
  EXPECT_EQ(b.num_tokens, 7u);
  EXPECT_TRUE(b.well_formed);
  EXPECT_FALSE(b.truncated);
  EXPECT_FALSE(b.repeated);
  EXPECT_EQ(b.accuracy, 0.0);

  // Counted, the partial result is scorable and not correct; the other is unscorable.
  ScoreAggregator agg;
  agg.Add("p", a);
  agg.Add("p", b);
  const v1::ScoreAggregate out = agg.Finish({});
  EXPECT_EQ(out.items(), 2u);
  EXPECT_DOUBLE_EQ(out.accuracy(), 0.25);
  EXPECT_DOUBLE_EQ(out.format_rate(), 0.5);
  EXPECT_DOUBLE_EQ(out.repetition_rate(), 0.5);
  EXPECT_EQ(out.length_tokens().max(), 1234);
  EXPECT_EQ(out.pass_at_k(0).prompts(), 1u);
  EXPECT_EQ(out.pass_at_k(0).value(), 0.0);
}

}  // namespace
}  // namespace rlscore::engine
