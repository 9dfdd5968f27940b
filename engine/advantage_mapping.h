// Between the wire (rlscore.v1 advantage messages) and the pure advantage library.
//
//   AdvantageCall call;
//   RLSCORE_RETURN_IF_ERROR(MapComputeAdvantagesRequest(request, limits, defaults, &call));
//   std::vector<advantage::GroupStats> groups(call.batch.group_sizes.size());
//   advantage::BatchSummary summary;
//   RLSCORE_RETURN_IF_ERROR(backend.Compute(call.batch, call.options,
//       PrepareAdvantages(call.batch.rewards.size(), response.mutable_advantages()), groups,
//       &summary));
//   FillGroupStatistics(groups, response.mutable_groups());
//
// Rewards, group sizes and advantages are not copied: the batch borrows the request's packed
// arrays and the library writes straight into the response's.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "advantage/advantage.h"
#include "engine/config.h"
#include "rlscore/v1/advantage.pb.h"

namespace rlscore::engine {

// Applies the fields `in` sets on top of `*out`. INVALID_ARGUMENT names the field and value.
absl::Status ApplyAdvantageOptions(const v1::AdvantageOptions& in, advantage::Options* out);

// Every field set, so a printed config shows the effective values.
void AdvantageOptionsToProto(const advantage::Options& in, v1::AdvantageOptions* out);

// A ComputeAdvantages request, mapped. `batch` borrows from the request, from `outcomes` and
// from `rewards`: none may move or change while it is used.
struct AdvantageCall {
  advantage::Batch batch;
  advantage::Options options;
  std::vector<advantage::Outcome> outcomes;
  // GDPO requests with components and no rewards: the rows' weighted sums (WeightedRowSums).
  std::vector<double> rewards;
};

// Checks `request` against `limits` (RESOURCE_EXHAUSTED naming the limit) and maps it
// (INVALID_ARGUMENT naming the field); the values themselves (NaN, shape) are checked by the
// advantage library.
absl::Status MapComputeAdvantagesRequest(const v1::ComputeAdvantagesRequest& request,
                                         const Limits& limits, const advantage::Options& defaults,
                                         AdvantageCall* call);

// Resizes `field` to `n` and returns it as the output span of advantage::Compute().
std::span<double> PrepareAdvantages(size_t n, google::protobuf::RepeatedField<double>* field);

void FillGroupStatistics(std::span<const advantage::GroupStats> groups, v1::GroupStatistics* out);
void FillBatchSummary(const advantage::BatchSummary& summary, v1::BatchSummary* out);

// A ComputeAdvantagesResponse written straight in its wire form into one buffer, the advantages
// computed in place: the answer is never held twice (as a message and as its bytes), which a
// batch of tens of millions of rewards would feel. It parses as the message that
// FillGroupStatistics and FillBatchSummary build (tests/service/advantage_mapping_test.cc).
//
//   AdvantagesAnswer answer(rewards.size(), groups.size());
//   char* storage = Allocate(answer.capacity());
//   std::span<double> advantages = answer.Start(storage);   // 8-byte aligned
//   ... advantage::Compute(batch, options, advantages, groups, &summary) ...
//   std::string_view wire = answer.Finish(groups, summary, "cpu");   // inside storage
//
// Not thread-safe; one per answer.
class AdvantagesAnswer {
 public:
  AdvantagesAnswer(size_t rewards, size_t groups);

  // Bytes to allocate: the largest encoding, plus room to align the advantages.
  size_t capacity() const { return capacity_; }

  // Lays the answer out at the start of `storage` (capacity() bytes, which must outlive the
  // answer) and returns where the advantages go.
  std::span<double> Start(char* storage);

  // Writes the group statistics, the summary and the backend after the advantages and returns
  // the whole encoding. REQUIRES: Start() was called; groups.size() is the count given above.
  std::string_view Finish(std::span<const advantage::GroupStats> groups,
                          const advantage::BatchSummary& summary, std::string_view backend);

 private:
  size_t rewards_;
  size_t capacity_;
  char* begin_ = nullptr;  // the encoding's first byte
  size_t header_ = 0;      // bytes before the first advantage
};

}  // namespace rlscore::engine
