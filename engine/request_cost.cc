#include "engine/request_cost.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "common/json_input.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"

namespace rlscore::engine {
namespace {

using google::protobuf::internal::WireFormatLite;

// The wire bytes as one protobuf input stream, without copying them.
class Wire {
 public:
  explicit Wire(std::span<const std::string_view> pieces) {
    arrays_.reserve(pieces.size());
    for (std::string_view p : pieces) {
      arrays_.push_back(std::make_unique<google::protobuf::io::ArrayInputStream>(
          p.data(), static_cast<int>(p.size())));
      streams_.push_back(arrays_.back().get());
      bytes_ += p.size();
    }
    all_ = std::make_unique<google::protobuf::io::ConcatenatingInputStream>(
        streams_.data(), static_cast<int>(streams_.size()));
  }
  google::protobuf::io::ZeroCopyInputStream* stream() { return all_.get(); }
  uint64_t bytes() const { return bytes_; }

 private:
  std::vector<std::unique_ptr<google::protobuf::io::ArrayInputStream>> arrays_;
  std::vector<google::protobuf::io::ZeroCopyInputStream*> streams_;
  std::unique_ptr<google::protobuf::io::ConcatenatingInputStream> all_;
  uint64_t bytes_ = 0;
};

// The payload bytes of each field of one message, wherever it occurs: a fixed64 element counts 8,
// a varint 1 (so a varint field's count, packed or not, bounds its number of elements), a
// length-delimited field its length.
// `nested`, when not 0, is a length-delimited field whose messages are read with `visit` instead.
// False when the bytes are not a message.
template <typename Visit>
bool Outline(google::protobuf::io::CodedInputStream* in, uint64_t counts[16], int nested,
             Visit&& visit) {
  for (;;) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) return in->ConsumedEntireMessage();  // the end, or bytes that are not a tag
    const int field = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    uint64_t* count = field < 16 ? &counts[field] : nullptr;
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_VARINT: {
        uint64_t ignored;
        if (!in->ReadVarint64(&ignored)) return false;
        if (count != nullptr) ++*count;
        break;
      }
      case WireFormatLite::WIRETYPE_FIXED64:
        if (!in->Skip(8)) return false;
        if (count != nullptr) *count += 8;
        break;
      case WireFormatLite::WIRETYPE_FIXED32:
        if (!in->Skip(4)) return false;
        if (count != nullptr) *count += 4;
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint32_t length;
        if (!in->ReadVarint32(&length)) return false;
        if (field == nested) {
          const auto limit = in->PushLimit(static_cast<int>(length));
          if (!visit(in)) return false;
          in->PopLimit(limit);
        } else {
          if (!in->Skip(static_cast<int>(length))) return false;
          if (count != nullptr) *count += length;
        }
        break;
      }
      default:
        return false;
    }
  }
}

uint64_t ComputeAdvantagesBytes(google::protobuf::io::CodedInputStream* in, uint64_t wire) {
  uint64_t counts[16] = {};
  if (!Outline(in, counts, 0, [](auto*) { return true; })) return 2 * wire;
  const uint64_t n = counts[1] / 8;     // rewards: doubles
  const uint64_t groups = counts[2];    // group_sizes: varints, at most one per byte
  const uint64_t outcomes = counts[3];  // outcomes: varints
  // GDPO's components and weights, and the keep band's accuracies: doubles.
  const uint64_t components = counts[7] / 8;
  const uint64_t others = (counts[9] + counts[10]) / 8;
  // At its peak the call holds the parsed request (varint fields grow by doubling; outcomes are
  // also mapped to one byte each), the group statistics and the answer (AdvantagesAnswer's
  // capacity: scorable counts of up to 5 bytes). The request's own bytes are freed while it is
  // parsed, before any of the latter is allocated. GDPO adds its scratch and, without rewards,
  // the rewards it derives: one double per completion each, at most one per component; its
  // answer has one advantage per completion, at most one per component.
  const uint64_t parsed = 8 * n + 8 * groups + 9 * outcomes + 8 * components + 8 * others;
  const uint64_t gdpo = 16 * components;
  const uint64_t stats = 24 * groups;
  const uint64_t answer = 8 * std::max(n, components) + 23 * groups + 1024;
  return std::max(wire, parsed + gdpo + stats + answer);
}

uint64_t ScoringBytes(google::protobuf::io::CodedInputStream* in, uint64_t wire,
                      int completions_field, int group_field) {
  uint64_t completions = 0;
  uint64_t counts[16] = {};
  bool ok;
  if (group_field == 0) {  // Score: each item is one completion
    ok = Outline(in, counts, completions_field, [&](google::protobuf::io::CodedInputStream* item) {
      ++completions;
      return item->Skip(item->BytesUntilLimit());
    });
  } else {  // ScoreGroups: count the completions of each group
    ok = Outline(in, counts, group_field, [&](google::protobuf::io::CodedInputStream* group) {
      uint64_t group_counts[16] = {};
      return Outline(group, group_counts, completions_field,
                     [&](google::protobuf::io::CodedInputStream* completion) {
                       ++completions;
                       return completion->Skip(completion->BytesUntilLimit());
                     });
    });
  }
  if (!ok) return 2 * wire;
  return 2 * wire + kBytesPerCompletion * completions;
}

}  // namespace

uint64_t JsonPeakBytes(std::string_view body) {
  const JsonShape shape = CountJsonShape(body);
  return 3 * body.size() + JsonTreeBytes(body, shape) + kBytesPerCompletion * shape.strings;
}

uint64_t PeakBytes(Method method, std::span<const std::string_view> pieces) {
  Wire wire(pieces);
  google::protobuf::io::CodedInputStream in(wire.stream());
  in.SetTotalBytesLimit(INT32_MAX);
  switch (method) {
    case Method::kComputeAdvantages:
      return ComputeAdvantagesBytes(&in, wire.bytes());
    case Method::kScoreGroups:  // ScoreGroupsRequest.groups = 2, Group.completions = 4
      return ScoringBytes(&in, wire.bytes(), 4, 2);
    case Method::kScore:  // ScoreRequest.items = 2
      return ScoringBytes(&in, wire.bytes(), 2, 0);
    default:
      return wire.bytes();
  }
}

}  // namespace rlscore::engine
