#include "engine/advantage_mapping.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace rlscore::engine {
namespace {

// What the answer must parse as: the message built field by field.
v1::ComputeAdvantagesResponse Expected(const std::vector<double>& advantages,
                                       const std::vector<advantage::GroupStats>& groups,
                                       const advantage::BatchSummary& summary,
                                       const std::string& backend) {
  v1::ComputeAdvantagesResponse response;
  for (double a : advantages) response.add_advantages(a);
  FillGroupStatistics(groups, response.mutable_groups());
  FillBatchSummary(summary, response.mutable_summary());
  response.set_backend(backend);
  return response;
}

TEST(AdvantagesAnswer, ParsesAsTheMessageBuiltFieldByField) {
  std::mt19937_64 rng(5);
  // Group counts and scorable counts that take 1, 2 and 3 varint bytes; no rewards at all.
  for (const auto& [rewards, groups] : std::vector<std::pair<size_t, size_t>>{
           {0, 0}, {1, 1}, {5, 2}, {1000, 125}, {70000, 1}, {300, 300}}) {
    for (size_t misalign = 0; misalign < 8; ++misalign) {
      SCOPED_TRACE(testing::Message()
                   << rewards << " rewards, " << groups << " groups, storage +" << misalign);
      std::vector<advantage::GroupStats> stats(groups);
      for (advantage::GroupStats& g : stats) {
        g.mean = std::uniform_real_distribution<double>(-2, 2)(rng);
        g.std = std::uniform_real_distribution<double>(0, 1)(rng);
        g.scorable = static_cast<uint32_t>(rewards / std::max<size_t>(groups, 1) - rng() % 2);
        g.cause =
            static_cast<advantage::ZeroVarianceCause>(rng() % advantage::kNumZeroVarianceCauses);
        g.outside_keep_band = rng() % 4 == 0;
      }
      advantage::BatchSummary summary;
      summary.groups = groups;
      summary.rewards = rewards;
      summary.unscorable = rng() % 10;
      summary.zero_variance_groups = rng() % 1000;
      summary.groups_by_cause[3] = ~uint64_t{0};  // the longest varint there is
      summary.zero_variance_fraction = 0.25;
      summary.reward_mean = -1e300;
      summary.reward_std = 1e-300;
      std::vector<double> values(rewards);
      for (double& v : values) v = std::uniform_real_distribution<double>(-3, 3)(rng);

      AdvantagesAnswer answer(rewards, groups);
      std::vector<char> storage(answer.capacity() + misalign);
      const std::span<double> advantages = answer.Start(storage.data() + misalign);
      ASSERT_EQ(advantages.size(), rewards);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(advantages.data()) % alignof(double), 0u);
      std::copy(values.begin(), values.end(), advantages.begin());
      const std::string_view wire = answer.Finish(stats, summary, "cuda");
      ASSERT_GE(wire.data(), storage.data() + misalign);
      ASSERT_LE(wire.data() + wire.size(), storage.data() + storage.size());

      v1::ComputeAdvantagesResponse parsed;
      ASSERT_TRUE(parsed.ParseFromArray(wire.data(), static_cast<int>(wire.size())));
      const v1::ComputeAdvantagesResponse expected = Expected(values, stats, summary, "cuda");
      EXPECT_EQ(parsed.SerializeAsString(), expected.SerializeAsString());
      EXPECT_EQ(parsed.groups().keep_size(), static_cast<int>(groups));
    }
  }
}

TEST(AdvantageOptions, EveryEstimatorAndTheKeepBandMapBothWays) {
  const std::vector<std::pair<v1::Estimator, advantage::Estimator>> estimators = {
      {v1::ESTIMATOR_GRPO, advantage::Estimator::kGrpo},
      {v1::ESTIMATOR_DR_GRPO, advantage::Estimator::kDrGrpo},
      {v1::ESTIMATOR_RLOO, advantage::Estimator::kRloo},
      {v1::ESTIMATOR_BATCH_NORMALIZED, advantage::Estimator::kBatchNormalized},
      {v1::ESTIMATOR_REINFORCE_PP_BASELINE, advantage::Estimator::kReinforcePlusPlusBaseline},
      {v1::ESTIMATOR_GRPO_PASSK, advantage::Estimator::kGrpoPassK},
      {v1::ESTIMATOR_GDPO, advantage::Estimator::kGdpo},
  };
  ASSERT_EQ(estimators.size() + 1, static_cast<size_t>(v1::Estimator_ARRAYSIZE));
  for (const auto& [wire, core] : estimators) {
    SCOPED_TRACE(v1::Estimator_Name(wire));
    v1::AdvantageOptions in;
    in.set_estimator(wire);
    in.mutable_keep_band()->set_lo(0.125);
    in.mutable_keep_band()->set_hi(0.875);
    advantage::Options options;
    ASSERT_TRUE(ApplyAdvantageOptions(in, &options).ok());
    EXPECT_EQ(options.estimator, core);
    EXPECT_TRUE(options.keep_band.enabled);
    EXPECT_EQ(options.keep_band.lo, 0.125);
    EXPECT_EQ(options.keep_band.hi, 0.875);
    v1::AdvantageOptions out;
    AdvantageOptionsToProto(options, &out);
    EXPECT_EQ(out.estimator(), wire);
    EXPECT_TRUE(out.has_keep_band());
    EXPECT_EQ(out.keep_band().lo(), 0.125);
    EXPECT_EQ(out.keep_band().hi(), 0.875);
  }
  // No band: none printed (profile hashes stay what they were), and a request without one keeps
  // the profile's.
  v1::AdvantageOptions out;
  AdvantageOptionsToProto(advantage::Options{}, &out);
  EXPECT_FALSE(out.has_keep_band());
  advantage::Options banded;
  banded.keep_band = {.enabled = true, .lo = 0.2, .hi = 0.4};
  ASSERT_TRUE(ApplyAdvantageOptions(v1::AdvantageOptions(), &banded).ok());
  EXPECT_TRUE(banded.keep_band.enabled);
  for (const auto& [lo, hi] :
       std::vector<std::pair<double, double>>{{0.6, 0.4}, {std::nan(""), 1.0}, {0.0, HUGE_VAL}}) {
    v1::AdvantageOptions bad;
    bad.mutable_keep_band()->set_lo(lo);
    bad.mutable_keep_band()->set_hi(hi);
    advantage::Options options;
    const absl::Status status = ApplyAdvantageOptions(bad, &options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << lo << " " << hi;
    EXPECT_NE(std::string(status.message()).find("keep_band"), std::string::npos);
  }
}

TEST(MapComputeAdvantagesRequest, GdpoComponentsAndAccuraciesAreBorrowed) {
  v1::ComputeAdvantagesRequest request;
  request.mutable_options()->set_estimator(v1::ESTIMATOR_GDPO);
  for (double c : {1.0, 0.1, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0}) request.add_components(c);
  request.set_num_components(2);
  request.add_component_weights(1.0);
  request.add_component_weights(0.5);
  request.add_group_sizes(4);
  for (double a : {1.0, 0.0, 1.0, 0.0}) request.add_accuracy(a);
  AdvantageCall call;
  ASSERT_TRUE(MapComputeAdvantagesRequest(request, Limits{}, advantage::Options{}, &call).ok());
  EXPECT_EQ(call.options.estimator, advantage::Estimator::kGdpo);
  EXPECT_EQ(call.batch.components.data(), request.components().data());
  EXPECT_EQ(call.batch.num_components, 2u);
  EXPECT_EQ(call.batch.component_weights.size(), 2u);
  EXPECT_EQ(call.batch.accuracy.data(), request.accuracy().data());
  // Without rewards, each completion's reward is the weighted sum of its components.
  EXPECT_EQ(std::vector<double>(call.batch.rewards.begin(), call.batch.rewards.end()),
            (std::vector<double>{1.05, 0.05, 1.0, 0.0}));
  const absl::StatusOr<advantage::Result> result = advantage::Compute(call.batch, call.options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->advantages[0], 0.0);

  // With rewards, they are the request's own.
  request.add_rewards(5);
  request.add_rewards(6);
  request.add_rewards(7);
  request.add_rewards(8);
  ASSERT_TRUE(MapComputeAdvantagesRequest(request, Limits{}, advantage::Options{}, &call).ok());
  EXPECT_EQ(call.batch.rewards.data(), request.rewards().data());

  // A matrix that does not divide into rows is named.
  request.clear_rewards();
  request.add_components(0.3);
  const absl::Status status =
      MapComputeAdvantagesRequest(request, Limits{}, advantage::Options{}, &call);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("components has 9 values"), std::string::npos);
}

}  // namespace
}  // namespace rlscore::engine
