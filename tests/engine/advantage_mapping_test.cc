#include "engine/advantage_mapping.h"

#include <cstring>
#include <random>
#include <string>
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

}  // namespace
}  // namespace rlscore::engine
