#include "engine/scoring_mapping.h"

#include "absl/strings/str_cat.h"

namespace rlscore::engine {

absl::StatusOr<scorers::Task> TaskFromProto(int task) {
  switch (task) {
    case v1::TASK_MATH:
      return scorers::Task::kMath;
    case v1::TASK_MULTIPLE_CHOICE:
      return scorers::Task::kMultipleChoice;
    case v1::TASK_EXACT:
      return scorers::Task::kExact;
    case v1::TASK_NUMERIC:
      return scorers::Task::kNumeric;
    case v1::TASK_EXTERNAL:
      return scorers::Task::kExternal;
    case v1::TASK_INSTRUCTION_FOLLOWING:
      return scorers::Task::kInstructionFollowing;
    default:
      return absl::InvalidArgumentError(absl::StrCat("task: unknown value ", task));
  }
}

v1::Task TaskToProto(scorers::Task task) {
  switch (task) {
    case scorers::Task::kMath:
      return v1::TASK_MATH;
    case scorers::Task::kMultipleChoice:
      return v1::TASK_MULTIPLE_CHOICE;
    case scorers::Task::kExact:
      return v1::TASK_EXACT;
    case scorers::Task::kNumeric:
      return v1::TASK_NUMERIC;
    case scorers::Task::kExternal:
      return v1::TASK_EXTERNAL;
    case scorers::Task::kInstructionFollowing:
      return v1::TASK_INSTRUCTION_FOLLOWING;
  }
  return v1::TASK_UNSPECIFIED;
}

v1::Verdict VerdictToProto(scorers::Verdict verdict) {
  switch (verdict) {
    case scorers::Verdict::kCorrect:
      return v1::VERDICT_CORRECT;
    case scorers::Verdict::kWrong:
      return v1::VERDICT_WRONG;
    case scorers::Verdict::kNoAnswer:
      return v1::VERDICT_NO_ANSWER;
    case scorers::Verdict::kUnparseableReference:
      return v1::VERDICT_UNPARSEABLE_REFERENCE;
    case scorers::Verdict::kBudgetExceeded:
      return v1::VERDICT_BUDGET_EXCEEDED;
  }
  return v1::VERDICT_UNSPECIFIED;
}

scorers::CompletionInput CompletionInputFromProto(const v1::Completion& c) {
  scorers::CompletionInput in;
  in.text = c.text();
  in.token_ids = std::span<const uint32_t>(c.token_ids().data(), c.token_ids_size());
  if (c.has_num_tokens()) in.num_tokens = c.num_tokens();
  if (c.has_finished()) in.finished = c.finished();
  if (c.has_external_accuracy()) in.external_accuracy = c.external_accuracy();
  return in;
}

void FillCompletionResult(const scorers::CompletionScore& s, v1::CompletionResult* out) {
  v1::RewardComponents* c = out->mutable_components();
  c->set_accuracy(s.accuracy);
  c->set_format(s.format);
  c->set_repetition(s.repetition);
  c->set_length(s.length);
  c->set_total(s.total);
  out->set_verdict(VerdictToProto(s.verdict));
  out->set_extracted_answer(ValidUtf8(s.extracted_answer));
  v1::Anatomy* a = out->mutable_anatomy();
  a->set_well_formed(s.well_formed);
  a->set_truncated(s.truncated);
  a->set_has_answer_section(s.has_answer_section);
  a->set_malformed_tags(s.malformed_tags);
  a->set_think_open_tags(s.think_open_tags);
  a->set_think_close_tags(s.think_close_tags);
  if (s.repetition_finding.detector != scorers::RepetitionDetector::kNone) {
    v1::RepetitionReport* r = out->mutable_repetition();
    switch (s.repetition_finding.detector) {
      case scorers::RepetitionDetector::kNgram:
        r->set_detector(v1::REPETITION_DETECTOR_NGRAM);
        break;
      case scorers::RepetitionDetector::kAstBlock:
        r->set_detector(v1::REPETITION_DETECTOR_AST_BLOCK);
        break;
      case scorers::RepetitionDetector::kAstCodeClone:
        r->set_detector(v1::REPETITION_DETECTOR_AST_CODE_CLONE);
        break;
      case scorers::RepetitionDetector::kTagLoop:
        r->set_detector(v1::REPETITION_DETECTOR_TAG_LOOP);
        break;
      case scorers::RepetitionDetector::kUnbrokenRun:
        r->set_detector(v1::REPETITION_DETECTOR_UNBROKEN_RUN);
        break;
      case scorers::RepetitionDetector::kNone:
        break;
    }
    r->set_char_offset(s.repetition_finding.char_offset);
    r->set_token_offset(s.repetition_finding.token_offset);
    r->set_first_char_offset(s.repetition_finding.first_char_offset);
    r->set_occurrences(s.repetition_finding.occurrences);
    r->set_detail(s.repetition_finding.detail);
  } else if (s.ast_skipped != scorers::ast::AstBudget::kNone) {
    // Nothing fired, but the AST detector ran out of budget: said, so that "no repetition" is
    // not read as "checked and clean".
    v1::RepetitionReport* r = out->mutable_repetition();
    r->set_detector(v1::REPETITION_DETECTOR_NONE);
    r->set_detail(s.repetition_finding.detail);
  }
  out->set_num_tokens(s.num_tokens);
  out->set_tokens_estimated(s.tokens_estimated);
  out->set_format_gated(s.format_gated);
  out->set_detail(ValidUtf8(s.detail));
  for (const scorers::InstructionResult& i : s.instructions) {
    v1::InstructionResult* r = out->add_instructions();
    r->set_id(i.id);
    r->set_strict(i.strict);
    r->set_loose(i.loose);
  }
}

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len > 1) {
      // Reject overlong forms, surrogates and values above U+10FFFF.
      uint32_t cp = c & (0x7F >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (text[i + k] & 0x3F);
      const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

}  // namespace rlscore::engine
