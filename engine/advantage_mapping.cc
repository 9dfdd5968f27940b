#include "engine/advantage_mapping.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace rlscore::engine {

absl::Status ApplyAdvantageOptions(const v1::AdvantageOptions& in, advantage::Options* out) {
  switch (in.estimator()) {
    case v1::ESTIMATOR_UNSPECIFIED:
      break;
    case v1::ESTIMATOR_GRPO:
      out->estimator = advantage::Estimator::kGrpo;
      break;
    case v1::ESTIMATOR_DR_GRPO:
      out->estimator = advantage::Estimator::kDrGrpo;
      break;
    case v1::ESTIMATOR_RLOO:
      out->estimator = advantage::Estimator::kRloo;
      break;
    case v1::ESTIMATOR_BATCH_NORMALIZED:
      out->estimator = advantage::Estimator::kBatchNormalized;
      break;
    case v1::ESTIMATOR_REINFORCE_PP_BASELINE:
      out->estimator = advantage::Estimator::kReinforcePlusPlusBaseline;
      break;
    case v1::ESTIMATOR_GRPO_PASSK:
      out->estimator = advantage::Estimator::kGrpoPassK;
      break;
    case v1::ESTIMATOR_GDPO:
      out->estimator = advantage::Estimator::kGdpo;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("estimator: unknown value ", in.estimator()));
  }
  switch (in.deviation()) {
    case v1::DEVIATION_UNSPECIFIED:
      break;
    case v1::DEVIATION_SAMPLE:
      out->deviation = advantage::Deviation::kSample;
      break;
    case v1::DEVIATION_POPULATION:
      out->deviation = advantage::Deviation::kPopulation;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("deviation: unknown value ", in.deviation()));
  }
  if (in.has_zero_variance_threshold()) {
    const double tau = in.zero_variance_threshold();
    if (!std::isfinite(tau) || tau < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("zero_variance_threshold must be finite and >= 0, got ", tau));
    }
    out->zero_variance_threshold = tau;
  }
  if (in.has_keep_band()) {
    const double lo = in.keep_band().lo();
    const double hi = in.keep_band().hi();
    if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= hi)) {
      return absl::InvalidArgumentError(
          absl::StrCat("keep_band must have finite lo <= hi, got [", lo, ", ", hi, "]"));
    }
    out->keep_band = {.enabled = true, .lo = lo, .hi = hi};
  }
  return absl::OkStatus();
}

void AdvantageOptionsToProto(const advantage::Options& in, v1::AdvantageOptions* out) {
  switch (in.estimator) {
    case advantage::Estimator::kGrpo:
      out->set_estimator(v1::ESTIMATOR_GRPO);
      break;
    case advantage::Estimator::kDrGrpo:
      out->set_estimator(v1::ESTIMATOR_DR_GRPO);
      break;
    case advantage::Estimator::kRloo:
      out->set_estimator(v1::ESTIMATOR_RLOO);
      break;
    case advantage::Estimator::kBatchNormalized:
      out->set_estimator(v1::ESTIMATOR_BATCH_NORMALIZED);
      break;
    case advantage::Estimator::kReinforcePlusPlusBaseline:
      out->set_estimator(v1::ESTIMATOR_REINFORCE_PP_BASELINE);
      break;
    case advantage::Estimator::kGrpoPassK:
      out->set_estimator(v1::ESTIMATOR_GRPO_PASSK);
      break;
    case advantage::Estimator::kGdpo:
      out->set_estimator(v1::ESTIMATOR_GDPO);
      break;
  }
  out->set_deviation(in.deviation == advantage::Deviation::kSample ? v1::DEVIATION_SAMPLE
                                                                   : v1::DEVIATION_POPULATION);
  out->set_zero_variance_threshold(in.zero_variance_threshold);
  // Only when on: a profile without a band keeps the hash it had before bands existed.
  if (in.keep_band.enabled) {
    out->mutable_keep_band()->set_lo(in.keep_band.lo);
    out->mutable_keep_band()->set_hi(in.keep_band.hi);
  }
}

absl::Status MapComputeAdvantagesRequest(const v1::ComputeAdvantagesRequest& request,
                                         const Limits& limits, const advantage::Options& defaults,
                                         AdvantageCall* call) {
  if (static_cast<uint64_t>(request.group_sizes_size()) > limits.max_groups_per_request) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "group_sizes: ", request.group_sizes_size(),
        " groups exceed the limit max_groups_per_request = ", limits.max_groups_per_request));
  }
  for (int g = 0; g < request.group_sizes_size(); ++g) {
    if (request.group_sizes(g) > limits.max_group_size) {
      return absl::ResourceExhaustedError(
          absl::StrCat("group_sizes[", g, "] = ", request.group_sizes(g),
                       " exceeds the limit max_group_size = ", limits.max_group_size));
    }
  }

  call->options = defaults;
  absl::Status status = ApplyAdvantageOptions(request.options(), &call->options);
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat("options.", status.message()));

  call->outcomes.clear();
  call->outcomes.reserve(request.outcomes_size());
  for (int i = 0; i < request.outcomes_size(); ++i) {
    const int value = request.outcomes(i);
    if (value < v1::OUTCOME_UNKNOWN || value > v1::OUTCOME_UNSCORABLE) {
      return absl::InvalidArgumentError(absl::StrCat("outcomes[", i, "]: unknown value ", value));
    }
    // The wire values are those of advantage::Outcome by construction.
    call->outcomes.push_back(static_cast<advantage::Outcome>(value));
  }

  call->batch.rewards = std::span<const double>(request.rewards().data(), request.rewards_size());
  call->batch.group_sizes =
      std::span<const uint32_t>(request.group_sizes().data(), request.group_sizes_size());
  call->batch.outcomes = call->outcomes;
  call->batch.components =
      std::span<const double>(request.components().data(), request.components_size());
  call->batch.num_components = request.num_components();
  call->batch.component_weights =
      std::span<const double>(request.component_weights().data(), request.component_weights_size());
  call->batch.accuracy =
      std::span<const double>(request.accuracy().data(), request.accuracy_size());
  call->rewards.clear();
  if (call->options.estimator == advantage::Estimator::kGdpo && request.rewards_size() == 0 &&
      request.components_size() > 0) {
    // GDPO from components alone: the rewards its statistics describe are the weighted sums.
    absl::StatusOr<std::vector<double>> sums = advantage::WeightedRowSums(
        call->batch.components, call->batch.num_components, call->batch.component_weights);
    if (!sums.ok()) return sums.status();
    call->rewards = *std::move(sums);
    call->batch.rewards = call->rewards;
  }
  return absl::OkStatus();
}

std::span<double> PrepareAdvantages(size_t n, google::protobuf::RepeatedField<double>* field) {
  field->Resize(static_cast<int>(n), 0.0);
  return std::span<double>(field->mutable_data(), n);
}

namespace {

v1::ZeroVarianceCause CauseToProto(advantage::ZeroVarianceCause cause) {
  // The wire values are those of advantage::ZeroVarianceCause by construction.
  return static_cast<v1::ZeroVarianceCause>(static_cast<int>(cause));
}

static_assert(static_cast<int>(advantage::ZeroVarianceCause::kSingleton) ==
              v1::ZERO_VARIANCE_CAUSE_SINGLETON);
static_assert(static_cast<int>(advantage::Outcome::kUnscorable) == v1::OUTCOME_UNSCORABLE);
static_assert(advantage::kNumZeroVarianceCauses == v1::ZeroVarianceCause_ARRAYSIZE);

}  // namespace

void FillGroupStatistics(std::span<const advantage::GroupStats> groups, v1::GroupStatistics* out) {
  const int n = static_cast<int>(groups.size());
  out->mutable_mean()->Reserve(n);
  out->mutable_std()->Reserve(n);
  out->mutable_scorable()->Reserve(n);
  out->mutable_cause()->Reserve(n);
  out->mutable_keep()->Reserve(n);
  for (const advantage::GroupStats& g : groups) {
    out->add_mean(g.mean);
    out->add_std(g.std);
    out->add_scorable(g.scorable);
    out->add_cause(CauseToProto(g.cause));
    out->add_keep(g.keep());
  }
}

void FillBatchSummary(const advantage::BatchSummary& summary, v1::BatchSummary* out) {
  out->set_groups(summary.groups);
  out->set_completions(summary.rewards);
  out->set_unscorable(summary.unscorable);
  out->set_zero_variance_groups(summary.zero_variance_groups);
  out->set_zero_variance_fraction(summary.zero_variance_fraction);
  for (uint64_t count : summary.groups_by_cause) out->add_groups_by_cause(count);
  out->set_reward_mean(summary.reward_mean);
  out->set_reward_std(summary.reward_std);
}

namespace {

// Protocol-buffer wire format (protobuf.dev/programming-guides/encoding): a field's key is
// (number << 3) | type; type 2 (length-delimited) carries packed repeated fields, strings and
// messages; integers are base-128 varints; doubles 8 bytes little-endian.
static_assert(std::endian::native == std::endian::little, "doubles are copied as they lie");

constexpr uint8_t Key(int field) { return static_cast<uint8_t>((field << 3) | 2); }

size_t VarintBytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

char* PutVarint(uint64_t v, char* out) {
  while (v >= 0x80) {
    *out++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<char>(v);
  return out;
}

// A length-delimited field's key and length.
char* PutHeader(int field, size_t length, char* out) {
  *out++ = static_cast<char>(Key(field));
  return PutVarint(length, out);
}

size_t FieldBytes(size_t length) { return 1 + VarintBytes(length) + length; }

// GroupStatistics: mean (1) and std (2) packed doubles, scorable (3) and cause (4) packed varints,
// keep (5) packed bools. proto3 leaves empty repeated fields out.
char* PutGroups(std::span<const advantage::GroupStats> groups, size_t scorable_bytes, char* out) {
  const size_t n = groups.size();
  if (n == 0) return out;
  out = PutHeader(1, 8 * n, out);
  for (const advantage::GroupStats& g : groups) {
    std::memcpy(out, &g.mean, 8);
    out += 8;
  }
  out = PutHeader(2, 8 * n, out);
  for (const advantage::GroupStats& g : groups) {
    std::memcpy(out, &g.std, 8);
    out += 8;
  }
  out = PutHeader(3, scorable_bytes, out);
  for (const advantage::GroupStats& g : groups) out = PutVarint(g.scorable, out);
  out = PutHeader(4, n, out);  // every cause is below 128: one byte each
  for (const advantage::GroupStats& g : groups) *out++ = static_cast<char>(CauseToProto(g.cause));
  out = PutHeader(5, n, out);
  for (const advantage::GroupStats& g : groups) *out++ = static_cast<char>(g.keep() ? 1 : 0);
  return out;
}

static_assert(v1::ZeroVarianceCause_MAX < 128);

// Room for the summary (8 scalars and a count per cause, 10 bytes each at most) and the backend.
constexpr size_t kSummaryBound = 32 + 11 * (8 + advantage::kNumZeroVarianceCauses);
constexpr size_t kBackendBound = 64;

}  // namespace

AdvantagesAnswer::AdvantagesAnswer(size_t rewards, size_t groups) : rewards_(rewards) {
  // The largest encoding: scorable counts of up to 5 varint bytes each.
  const size_t group_body =
      groups == 0 ? 0
                  : FieldBytes(8 * groups) * 2 + FieldBytes(5 * groups) + FieldBytes(groups) * 2;
  capacity_ = (rewards == 0 ? 0 : FieldBytes(8 * rewards)) + FieldBytes(group_body) +
              FieldBytes(kSummaryBound) + FieldBytes(kBackendBound) + 8;
}

std::span<double> AdvantagesAnswer::Start(char* storage) {
  header_ = rewards_ == 0 ? 0 : 1 + VarintBytes(8 * rewards_);
  // Start the encoding where the advantages after its header fall on an 8-byte boundary.
  const uintptr_t first = reinterpret_cast<uintptr_t>(storage) + header_;
  begin_ = storage + (8 - first % 8) % 8;
  if (rewards_ != 0) PutHeader(1, 8 * rewards_, begin_);
  return std::span<double>(reinterpret_cast<double*>(begin_ + header_), rewards_);
}

std::string_view AdvantagesAnswer::Finish(std::span<const advantage::GroupStats> groups,
                                          const advantage::BatchSummary& summary,
                                          std::string_view backend) {
  char* out = begin_ + header_ + 8 * rewards_;
  size_t scorable_bytes = 0;
  for (const advantage::GroupStats& g : groups) scorable_bytes += VarintBytes(g.scorable);
  const size_t n = groups.size();
  const size_t group_body =
      n == 0 ? 0 : FieldBytes(8 * n) * 2 + FieldBytes(scorable_bytes) + FieldBytes(n) * 2;
  out = PutHeader(2, group_body, out);
  out = PutGroups(groups, scorable_bytes, out);

  v1::BatchSummary proto;
  FillBatchSummary(summary, &proto);
  const size_t summary_bytes = proto.ByteSizeLong();
  out = PutHeader(3, summary_bytes, out);
  proto.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out));
  out += summary_bytes;

  if (!backend.empty()) {
    out = PutHeader(4, backend.size(), out);
    std::memcpy(out, backend.data(), backend.size());
    out += backend.size();
  }
  return std::string_view(begin_, static_cast<size_t>(out - begin_));
}

}  // namespace rlscore::engine
