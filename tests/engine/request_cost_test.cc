#include "engine/request_cost.h"

#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "rlscore/v1/advantage.pb.h"
#include "rlscore/v1/scoring.pb.h"

namespace rlscore::engine {
namespace {

// `wire` cut into pieces of `size` bytes (the last shorter), as gRPC's slices cut a request.
std::vector<std::string_view> Pieces(const std::string& wire, size_t size) {
  std::vector<std::string_view> pieces;
  for (size_t at = 0; at < wire.size(); at += size) {
    pieces.push_back(std::string_view(wire).substr(at, size));
  }
  return pieces;
}

uint64_t Peak(Method method, const std::string& wire, size_t piece) {
  return PeakBytes(method, Pieces(wire, piece));
}

// The charge request_cost.h states for n rewards, G groups, O outcomes.
uint64_t AdvantagesPeak(uint64_t n, uint64_t g, uint64_t o) {
  return (8 * n + 8 * g + 9 * o) + 24 * g + (8 * n + 23 * g + 1024);
}

TEST(RequestCost, ComputeAdvantagesIsChargedByItsShapeHoweverItIsCut) {
  for (const auto& [n, group] : std::vector<std::pair<int, int>>{
           {1, 1}, {8, 8}, {1000, 1}, {1000, 8}, {4096, 64}, {65536, 16}}) {
    SCOPED_TRACE(testing::Message() << n << " rewards in groups of " << group);
    v1::ComputeAdvantagesRequest request;
    for (int i = 0; i < n; ++i) request.add_rewards(i % 3);
    for (int g = 0; g < n / group; ++g) request.add_group_sizes(static_cast<uint32_t>(group));
    request.set_run_id("run");
    const std::string wire = request.SerializeAsString();
    const uint64_t expected = AdvantagesPeak(n, n / group, 0);
    EXPECT_EQ(Peak(Method::kComputeAdvantages, wire, wire.size()), expected);
    for (size_t piece : {1, 7, 4096}) {
      EXPECT_EQ(Peak(Method::kComputeAdvantages, wire, piece), expected) << piece;
    }
  }
}

TEST(RequestCost, GdpoComponentsAndAccuraciesAreCharged) {
  // 1000 completions in groups of 8 with 4 components each and no rewards, plus accuracies.
  v1::ComputeAdvantagesRequest request;
  for (int i = 0; i < 4000; ++i) request.add_components(i % 3);
  for (int g = 0; g < 125; ++g) request.add_group_sizes(8);
  request.set_num_components(4);
  for (int k = 0; k < 4; ++k) request.add_component_weights(1.0);
  for (int i = 0; i < 1000; ++i) request.add_accuracy(i % 2);
  request.mutable_options()->set_estimator(v1::ESTIMATOR_GDPO);
  const std::string wire = request.SerializeAsString();
  // Parsed: sizes, components, weights and accuracies; GDPO's scratch and derived rewards (one
  // double each per component, at most); the answer as if one advantage per component.
  const uint64_t parsed = 8 * 125 + 8 * 4000 + 8 * 4 + 8 * 1000;
  const uint64_t expected = parsed + 16 * 4000 + 24 * 125 + (8 * 4000 + 23 * 125 + 1024);
  EXPECT_EQ(Peak(Method::kComputeAdvantages, wire, wire.size()), expected);
  EXPECT_EQ(Peak(Method::kComputeAdvantages, wire, 7), expected);
}

TEST(RequestCost, UnpackedAndOutcomesCountToo) {
  // rewards as unpacked fixed64 fields (key 0x09) and group sizes as unpacked varints (0x10),
  // which any protobuf parser accepts; two outcomes, packed.
  std::string wire;
  for (int i = 0; i < 3; ++i) wire += std::string("\x09", 1) + std::string(8, '\0');
  wire += std::string("\x10\x03", 2);
  wire += std::string("\x1a\x02\x01\x02", 4);
  v1::ComputeAdvantagesRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  ASSERT_EQ(parsed.rewards_size(), 3);
  EXPECT_EQ(Peak(Method::kComputeAdvantages, wire, 5), AdvantagesPeak(3, 1, 2));
}

TEST(RequestCost, ScoringIsChargedItsBytesTwiceAndEachCompletion) {
  v1::ScoreGroupsRequest groups;
  v1::ScoreRequest items;
  for (int g = 0; g < 50; ++g) {
    v1::Group* group = groups.add_groups();
    group->add_references("42");
    group->set_prompt_id("p");
    for (int c = 0; c < 8; ++c) {
      const std::string text =
          "<think>" + std::string(static_cast<size_t>(100 * c), 'x') + "</think> \\boxed{42}";
      group->add_completions()->set_text(text);
      v1::ScoreItem* item = items.add_items();
      item->mutable_completion()->set_text(text);
      item->add_references("42");
    }
  }
  const std::string g = groups.SerializeAsString();
  const std::string i = items.SerializeAsString();
  for (size_t piece : {g.size(), size_t{3}, size_t{1000}}) {
    EXPECT_EQ(Peak(Method::kScoreGroups, g, piece), 2 * g.size() + 400 * kBytesPerCompletion);
  }
  for (size_t piece : {i.size(), size_t{3}}) {
    EXPECT_EQ(Peak(Method::kScore, i, piece), 2 * i.size() + 400 * kBytesPerCompletion);
  }
}

TEST(RequestCost, JsonBodiesAreChargedPerByteAndPerString) {
  const std::string body = R"({"prompt": "q", "response": "<think>a</think> 42", "label": "42"})";
  // Six strings, one object, two separators.
  EXPECT_EQ(JsonPeakBytes(body), 4 * body.size() + 6 * (64 + kBytesPerCompletion) + 128 + 2 * 48);
  EXPECT_EQ(JsonPeakBytes(""), 0u);
  // Brackets, commas and escaped quotes inside strings are text.
  const std::string prose = R"({"response": "{[,\"]}, [{,\"}]"})";
  EXPECT_EQ(JsonPeakBytes(prose), 4 * prose.size() + 2 * (64 + kBytesPerCompletion) + 128);
}

// A body of empty objects holds 20 to 60 times its size as a tree (a 90 MB one peaked at 5.1 GB
// where it was charged 360 MB): charged by its structure, it is refused before it is parsed.
TEST(RequestCost, JsonBodiesAreChargedForTheTreeTheirStructureBuilds) {
  std::string body = R"({"response": "x", "junk": [)";
  for (int i = 0; i < 100000; ++i) body += i == 0 ? "{}" : ",{}";
  body += "]}";
  EXPECT_GT(JsonPeakBytes(body), 50 * body.size());
}

TEST(RequestCost, BytesThatAreNotARequestAreChargedTwiceTheirSize) {
  const std::string garbage = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";
  EXPECT_EQ(Peak(Method::kComputeAdvantages, garbage, 4), 2 * garbage.size());
  EXPECT_EQ(Peak(Method::kScoreGroups, garbage, 4), 2 * garbage.size());
  // A length that runs past the end.
  const std::string cut = std::string("\x12\x40", 2) + "abc";
  EXPECT_EQ(Peak(Method::kScoreGroups, cut, 2), 2 * cut.size());
  EXPECT_EQ(Peak(Method::kGetRunHealth, cut, 2), cut.size());
}

}  // namespace
}  // namespace rlscore::engine
