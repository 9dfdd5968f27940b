// Between the wire (rlscore.v1 scoring messages) and the pure scorers.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "rlscore/v1/scoring.pb.h"
#include "scorers/reward.h"

namespace rlscore::engine {

// INVALID_ARGUMENT for an unknown value; TASK_UNSPECIFIED is the caller's to resolve.
absl::StatusOr<scorers::Task> TaskFromProto(int task);
v1::Task TaskToProto(scorers::Task task);
v1::Verdict VerdictToProto(scorers::Verdict verdict);

// A view of `completion` for the scorers; it borrows from the message.
scorers::CompletionInput CompletionInputFromProto(const v1::Completion& completion);

// Fills everything of `out` from `score`.
void FillCompletionResult(const scorers::CompletionScore& score, v1::CompletionResult* out);

// `text` with every invalid UTF-8 sequence replaced by U+FFFD, so it can go into a proto3
// string field (an extracted answer comes from caller bytes that may not be UTF-8).
std::string ValidUtf8(std::string_view text);

}  // namespace rlscore::engine
