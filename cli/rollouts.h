// The JSONL format of `rlscore score`: one rollout per input line, one result per output line.
//
// Input (keys renamable with FieldNames, e.g. completion -> "response"):
//   {"id": ..., "prompt_id": "gsm8k/17", "completion": "<think>...</think> 42",
//    "reference": "42" | "references": ["42", "42.0"], "num_tokens": 812, "token_ids": [...],
//    "finished": true, "task": "math", "external_accuracy": 0.5}
// Task IF ("task": "if") takes its instruction list as the reference, a JSON object or its text,
// or from an IFEval row's own "instruction_id_list" and "kwargs" keys (the task is then IF
// unless the line names another).
// Only "completion" is required; a completion may also be a chat message list, of which the last
// assistant message's "content" is scored. A reference may also be a number, kept as the line
// writes it (1.50 stays "1.50"), or a boolean. "id" is any JSON value and is echoed back (a
// number nlohmann holds as a double, a list or an object as the line writes it, less its spaces);
// "prompt_id" may be an integer, read (and echoed) as its decimal text. Integers (prompt ids,
// counts) may be written as floats where they are whole (812.0, as pandas writes them).
//
// Output, one object per input line and in input order:
//   {"line": 1, "id": ..., "prompt_id": "gsm8k/17", "reward": 1.1, "verdict": "CORRECT",
//    "components": {"accuracy": 1.0, "format": 0.1, "repetition": 0.0, "length": 0.0},
//    "extracted_answer": "42", "num_tokens": 812, "tokens_estimated": false, "well_formed": true,
//    "truncated": false, "format_gated": false, "repetition": {...}, "detail": "...",
//    "instructions": [{"id": "punctuation:no_comma", "strict": true, "loose": true}, ...]}
// ("instructions" for task IF only)
// or, for a line that could not be read, {"line": 7, "error": "..."}.
//
//   RolloutReader reader(FieldNames{});          // one per thread
//   absl::StatusOr<Rollout> rollout = reader.Read(line);
//   if (!rollout.ok()) ... rollout.status().message()   // "field \"finished\": expected true..."
//   AppendResult(&out, line_number, rollout->id_json, rollout->item, result, reward);
#pragma once

#include <cstdint>
#include <memory>
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
  std::string reference = "reference";    // a reference or a list of them
  std::string references = "references";  // a list of references (or one)
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
// are ignored, so a dataset's other columns may stay in the file (but must be valid JSON).
//
// The reference reader (nlohmann's DOM): every form and every error. RolloutReader gives the same
// answer for every line, faster.
absl::StatusOr<Rollout> ParseRollout(std::string_view line, const FieldNames& names);

// How many readable bytes RolloutReader::ReadPadded needs after a line (of any content).
inline constexpr size_t kRolloutLinePadding = 64;

// Reads rollout lines with simdjson's on-demand parser, straight into the item: no document is
// built and the completion is copied once (into the buffer of a text given back, see Recycle).
// A line it does not read with certainty (any error, a key given twice, an id that is not a
// string, an integer, a boolean or null, a control byte) goes to ParseRollout, so results and
// error messages are ParseRollout's for every line. It reads chat message lists itself.
// Thread-compatible: one reader per thread; its buffers grow with the longest line (to twice its
// length while that is under 4 MiB, so that they are seldom reallocated).
//
// With a tree limit, a line whose JSON tree may hold more than `bytes` (JsonTreeBytes: a line of
// empty objects holds 20 to 60 times its size) is refused, INVALID_ARGUMENT naming the limit as
// `name`, whichever reader it would go to, so that no line can exhaust memory. Only lines longer
// than bytes / 129 can be over it (JsonTreeBytes charges at most 129 bytes a byte), so only they
// are counted: the others cost nothing.
struct TreeLimit {
  uint64_t bytes = 0;  // 0: no limit
  std::string_view name;
};
class RolloutReader {
 public:
  explicit RolloutReader(FieldNames names, TreeLimit tree_limit = {});
  ~RolloutReader();
  RolloutReader(const RolloutReader&) = delete;
  RolloutReader& operator=(const RolloutReader&) = delete;

  // `line` must be followed by kRolloutLinePadding readable bytes (the rest of a buffer of lines).
  absl::StatusOr<Rollout> ReadPadded(std::string_view line);
  // Any `line`: copied into padded storage first.
  absl::StatusOr<Rollout> Read(std::string_view line);

  // Lines read by ParseRollout instead, for tests and benchmarks.
  uint64_t deferred() const { return deferred_; }

  // Takes back a completion's text once it is scored, leaving `text` empty: a later line's
  // completion is read into its buffer, which saves an allocation and the zeroing of the bytes a
  // string grows by. Keeps at most kSpareTexts of them and kSpareTextBytes of capacity in all;
  // past either, `text` is left as it is.
  void Recycle(std::string* text);
  static constexpr size_t kSpareTexts = 32;
  static constexpr size_t kSpareTextBytes = size_t{2} << 20;

 private:
  struct Parser;  // keeps simdjson's header out of this one
  bool ReadFast(std::string_view line, Rollout* rollout);

  const FieldNames names_;
  const TreeLimit tree_limit_;
  const bool names_distinct_;  // no two fields read from one key
  std::unique_ptr<Parser> parser_;
  std::string padded_;
  uint64_t deferred_ = 0;
  std::vector<std::string> spare_texts_;
  size_t spare_bytes_ = 0;
};

// "math", "multiple_choice", "exact", "numeric", "external" (any case, or the proto name).
absl::StatusOr<v1::Task> ParseTask(std::string_view name);

// Appends the output line for a scored rollout, with its newline. `id_json` is Rollout::id_json;
// `item` the rollout's item (for its prompt id).
void AppendResult(std::string* out, uint64_t line, std::string_view id_json,
                  const v1::ScoreItem& item, const v1::CompletionResult& result, double reward);

// Appends the output line for an input line that was skipped, with its newline.
void AppendError(std::string* out, uint64_t line, std::string_view message);

}  // namespace rlscore::cli
