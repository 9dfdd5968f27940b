// The JSONL format of `rlscore score`: one rollout per input line, one result per output line.
//
// Input (keys renamable with FieldNames, e.g. completion -> "response"):
//   {"id": ..., "prompt_id": "gsm8k/17", "completion": "<think>...</think> 42",
//    "reference": "42" | "references": ["42", "42.0"], "num_tokens": 812, "token_ids": [...],
//    "finished": true, "task": "math", "external_accuracy": 0.5}
// Only "completion" is required; a completion may also be a chat message list, of which the last
// assistant message's "content" is scored. "id" is any JSON value and is echoed back.
//
// Output, one object per input line and in input order:
//   {"line": 1, "id": ..., "prompt_id": "gsm8k/17", "reward": 1.1, "verdict": "CORRECT",
//    "components": {"accuracy": 1.0, "format": 0.1, "repetition": 0.0, "length": 0.0},
//    "extracted_answer": "42", "num_tokens": 812, "tokens_estimated": false, "well_formed": true,
//    "truncated": false, "format_gated": false, "repetition": {...}, "detail": "..."}
// or, for a line that could not be read, {"line": 7, "error": "..."}.
//
//   absl::StatusOr<Rollout> rollout = ParseRollout(line, FieldNames{});
//   if (!rollout.ok()) ... rollout.status().message()   // "field \"finished\": expected true..."
//   std::string out = FormatResult(line_number, rollout->id_json, rollout->item, result, reward);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rlscore/v1/scoring.pb.h"

namespace rlscore::cli {

// The input keys of each field.
struct FieldNames {
  std::string id = "id";
  std::string prompt_id = "prompt_id";
  std::string completion = "completion";
  std::string reference = "reference";    // a string or a list of strings
  std::string references = "references";  // a list of strings (or a string)
  std::string num_tokens = "num_tokens";
  std::string token_ids = "token_ids";
  std::string finished = "finished";
  std::string task = "task";
  std::string external_accuracy = "external_accuracy";
};

// Applies "FIELD=KEY" (e.g. "completion=response"): FIELD is read from the key KEY.
// INVALID_ARGUMENT naming the known fields when FIELD is not one of them.
absl::Status RenameField(std::string_view assignment, FieldNames* names);

// One parsed input line.
struct Rollout {
  v1::ScoreItem item;
  std::string id_json;  // the "id" value as JSON text; empty when the line has none
};

// INVALID_ARGUMENT naming the JSON column or the field and what was wrong with it. Unknown keys
// are ignored, so a dataset's other columns may stay in the file.
absl::StatusOr<Rollout> ParseRollout(std::string_view line, const FieldNames& names);

// "math", "multiple_choice", "exact", "numeric", "external" (any case, or the proto name).
absl::StatusOr<v1::Task> ParseTask(std::string_view name);

// The output line for a scored rollout, without the trailing newline. `id_json` is
// Rollout::id_json; `item` the rollout's item (for its prompt id).
std::string FormatResult(uint64_t line, std::string_view id_json, const v1::ScoreItem& item,
                         const v1::CompletionResult& result, double reward);

// The output line for an input line that was skipped, without the trailing newline.
std::string FormatError(uint64_t line, std::string_view message);

}  // namespace rlscore::cli
