#include "scorers/reward.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "scorers/tag_loop.h"
#include "scorers/tokens.h"
#include "scorers/unbroken_run.h"

namespace rlscore::scorers {
namespace {

absl::Status FieldError(std::string_view field, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(Sv(field), " ", Sv(problem)));
}

bool Finite(double x) { return std::isfinite(x); }

// The anatomy of a completion from a model that does not think: all of it is the answer section,
// and also where repetition is looked for. Think tags have no place in it; answer tags are
// checked as the policy asks.
Anatomy NonThinkingAnatomy(std::string_view text, const TagPolicy& policy) {
  const Anatomy parsed = ParseAnatomy(text, TagPolicy{});
  Anatomy a;
  a.tags = parsed.tags;
  a.malformed_tags = parsed.malformed_tags;
  a.reasoning_end = a.answer_end = text.size();
  a.has_think_close = true;
  for (const Diagnostic& d : parsed.diagnostics) {
    if (d.kind == Malformation::kLookAlikeTag) a.diagnostics.push_back(d);
  }
  size_t answer_pairs = 0;
  bool open = false;
  for (const Tag& t : parsed.tags) {
    switch (t.kind) {
      case TagKind::kThinkOpen:
        a.diagnostics.push_back({Malformation::kRepeatedThinkOpen, t.offset});
        break;
      case TagKind::kThinkClose:
        a.diagnostics.push_back({Malformation::kRepeatedThinkClose, t.offset});
        break;
      case TagKind::kAnswerOpen:
        if (open) a.diagnostics.push_back({Malformation::kAnswerTagMisplaced, t.offset});
        open = true;
        a.answer_tag_begin = t.offset + t.length;
        break;
      case TagKind::kAnswerClose:
        if (!open) {
          a.diagnostics.push_back({Malformation::kAnswerTagMisplaced, t.offset});
          break;
        }
        open = false;
        a.answer_tag_end = t.offset;
        a.has_answer_tag = true;
        if (++answer_pairs > 1) {
          a.diagnostics.push_back({Malformation::kAnswerTagMisplaced, t.offset});
        }
        break;
    }
  }
  if (open) a.diagnostics.push_back({Malformation::kAnswerTagMisplaced, text.size()});
  if (policy.require_answer_tags && answer_pairs == 0) {
    a.diagnostics.push_back({Malformation::kMissingAnswerTags, text.size()});
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    a.diagnostics.push_back({Malformation::kEmptyAnswer, text.size()});
  }
  std::stable_sort(a.diagnostics.begin(), a.diagnostics.end(),
                   [](const Diagnostic& x, const Diagnostic& y) { return x.offset < y.offset; });
  return a;
}

uint32_t CountTags(const Anatomy& a, TagKind kind) {
  uint32_t n = 0;
  for (const Tag& t : a.tags) n += t.kind == kind;
  return n;
}

// The completion with its tags turned into line breaks (same length, so offsets hold): tags are
// markup that separates blocks, and a "<think>" glued to the first paragraph must not make it a
// different block for the AST rules (spaces would indent the line after it into a code block).
// Look-alike tags ("</ think>") stay text: a model that loops on them is looping.
std::string BlankTags(std::string_view text, const Anatomy& anatomy) {
  std::string blanked(text);
  for (const Tag& t : anatomy.tags) blanked.replace(t.offset, t.length, t.length, '\n');
  return blanked;
}

// The byte at which a stream fed `text` one byte at a time would have seen the `words`th word
// from `begin` (the start of a word) end: the byte after it, or the end of the text.
size_t NgramCompletesAt(std::string_view text, size_t begin, uint32_t words) {
  WordSplitter splitter(begin);
  uint32_t seen = 0;
  for (size_t i = begin; i < text.size(); ++i) {
    splitter.Feed(text.substr(i, 1), [&seen](const Word&) { ++seen; });
    if (seen >= words) return i;
  }
  return text.size();
}

// Runs the n-gram rule over the whole completion — reasoning, answer section and tags, so that a
// loop after </think> or without tags is penalised like one inside (and the stream, which cannot
// know where the reasoning will end, watches the same units) — on token ids when given, else on
// the normalised words; then the tag-loop and unbroken-run rules on the text, and the AST rules
// when none of those fired. Fills the finding and the penalty.
void ScoreRepetition(const CompletionInput& in, const Anatomy& anatomy, uint32_t num_tokens,
                     const RepetitionOptions& options, const Clock* clock, CompletionScore* score) {
  if (!options.enabled) return;
  std::vector<uint64_t> tokens;
  std::vector<Word> words;
  const bool by_token_ids = !in.token_ids.empty();
  NgramReport report;
  TextNgramReport text_report;
  if (by_token_ids) {
    tokens.assign(in.token_ids.begin(), in.token_ids.end());
    report = FindRepeatedNgram(tokens, options.ngram);
  } else if (options.mode == RepetitionMode::kSmooth) {
    words = NormalizedWords(in.text);  // the smooth penalty reads every word
    report = FindRepeatedWords(words, options.ngram);
  } else {
    text_report = FindRepeatedWordsInText(in.text, options.ngram);
    report = text_report.report;
  }
  if (report.fired) {
    RepetitionFinding& f = score->repetition_finding;
    f.detector = RepetitionDetector::kNgram;
    f.occurrences = report.occurrences;
    if (by_token_ids) {
      f.token_offset = report.token_offset;
      // Token ids cannot be mapped to characters here; the character offsets are proportional.
      const auto to_char = [&](size_t token) -> uint64_t {
        if (num_tokens == 0) return 0;
        return static_cast<uint64_t>(static_cast<long double>(token) *
                                     static_cast<long double>(in.text.size()) / num_tokens);
      };
      f.char_offset = to_char(report.token_offset);
      f.first_char_offset = to_char(report.first_token_offset);
      f.detail = absl::StrCat(
          DescribeNgramFiring(report, options.ngram, "token ids", report.first_token_offset),
          "; character offsets estimated");
    } else {
      f.char_offset = words.empty() ? text_report.char_offset : words[report.token_offset].offset;
      f.first_char_offset =
          words.empty() ? text_report.first_char_offset : words[report.first_token_offset].offset;
      f.token_offset = EstimateTokenOffset(f.char_offset, in.text.size(), num_tokens);
      f.detail =
          absl::StrCat(DescribeNgramFiring(report, options.ngram, "words", f.first_char_offset),
                       "; token offset estimated");
    }
  }
  // The rules on the raw text. All three are causal: the one whose evidence is complete first in
  // the text fires, as the stream (GenerationMonitor) stops at the first; on token ids, whose
  // stream cannot see the text, the n-gram rule comes first. Ties go n-gram, tag loop, unbroken
  // run, the stream's order within a byte.
  const TagLoopReport tags = FindTagLoop(in.text, options.max_reasoning_tags);
  const UnbrokenRunReport run = FindUnbrokenRun(in.text, options.max_run_bytes);
  size_t first_at = SIZE_MAX;  // the byte that completed the evidence of the rule chosen so far
  if (report.fired) {
    first_at = by_token_ids ? 0
                            : NgramCompletesAt(in.text, score->repetition_finding.char_offset,
                                               report.number_run ? 1 : options.ngram.n);
  }
  RepetitionFinding& text_finding = score->repetition_finding;
  const bool tags_first = tags.fired && tags.detected_at < first_at;
  if (tags_first) {
    first_at = tags.detected_at;
    text_finding.detector = RepetitionDetector::kTagLoop;
    text_finding.char_offset = tags.char_offset;
    text_finding.first_char_offset = tags.first_char_offset;
    text_finding.occurrences = tags.tags;
    text_finding.detail = DescribeTagLoop(tags, options.max_reasoning_tags);
  }
  const bool run_first = run.fired && run.char_offset < first_at;
  if (run_first) {
    text_finding.detector = RepetitionDetector::kUnbrokenRun;
    text_finding.char_offset = run.char_offset;
    text_finding.first_char_offset = run.first_char_offset;
    text_finding.occurrences = 0;
    text_finding.detail = DescribeUnbrokenRun(run, options.max_run_bytes);
  }
  const bool text_fired = tags_first || run_first;
  if (text_fired) {
    text_finding.token_offset =
        EstimateTokenOffset(text_finding.char_offset, in.text.size(), num_tokens);
    absl::StrAppend(&text_finding.detail, "; token offset estimated");
  }
  const bool fired = report.fired || text_fired;

  bool ast_fired = false;
  if (!fired && options.ast.enabled) {
    const std::string blanked = BlankTags(in.text, anatomy);
    const ast::AstReport ast = ast::FindAstRepetition(blanked, 0, options.ast, clock);
    score->ast_parsed = ast.parsed_markdown || ast.code_blocks_parsed > 0;
    score->ast_skipped = ast.skipped;
    score->ast_parse_seconds = ast.parse_seconds;
    RepetitionFinding& f = score->repetition_finding;
    if (ast.kind != ast::AstKind::kNone) {
      ast_fired = true;
      f.detector = ast.kind == ast::AstKind::kBlock ? RepetitionDetector::kAstBlock
                                                    : RepetitionDetector::kAstCodeClone;
      f.char_offset = ast.char_offset;
      f.first_char_offset = ast.first_char_offset;
      f.token_offset = EstimateTokenOffset(f.char_offset, in.text.size(), num_tokens);
      f.occurrences = ast.occurrences;
      f.detail = absl::StrCat(ast.detail, "; token offset estimated");
    } else if (ast.skipped == ast::AstBudget::kTime) {
      // The wall-clock safety net fired: whether it does depends on the machine, so the
      // completion gets no reward rather than one that depends on the load.
      f.detail = ast.detail;
      score->verdict = Verdict::kBudgetExceeded;
      score->detail = absl::StrCat("the repetition check did not finish: ", ast.detail);
      score->format_gated = false;
    } else if (ast.skipped != ast::AstBudget::kNone) {
      f.detail = ast.detail;  // "skipped: budget (...)": the n-gram rule still applied
    }
  }
  switch (options.mode) {
    case RepetitionMode::kThreshold:
      score->repetition = fired || ast_fired ? options.penalty : 0.0;
      break;
    case RepetitionMode::kSmooth:
      if (!by_token_ids) tokens = WordHashes(words);
      score->repetition =
          SmoothRepetitionPenalty(tokens, options.ngram.n, options.smooth_max_penalty);
      if (text_fired || ast_fired) {
        score->repetition = std::min(score->repetition, options.penalty);
      }
      break;
  }
}

// Task IF: the judge grades strictly and all-or-nothing (IFEval's prompt-level accuracy); the
// profile may ask for its loose rules or for the fraction of instructions followed. With a
// fraction, the verdict is CORRECT when any instruction is followed, as for EXTERNAL accuracy:
// that is what opens the format gate.
void ApplyInstructionOptions(const InstructionOptions& options, AccuracyResult* result) {
  if (result->instructions.empty() || result->verdict == Verdict::kNoAnswer ||
      IsUnscorable(result->verdict)) {
    return;
  }
  size_t followed = 0;
  for (const InstructionResult& r : result->instructions)
    followed += options.loose ? r.loose : r.strict;
  const size_t total = result->instructions.size();
  result->accuracy = options.fraction ? static_cast<double>(followed) / static_cast<double>(total)
                                      : (followed == total ? 1.0 : 0.0);
  result->verdict = result->accuracy > 0.0 ? Verdict::kCorrect : Verdict::kWrong;
  result->detail = absl::StrCat(followed, " of ", total, " instructions followed (",
                                options.loose ? "loose" : "strict", ")");
}

absl::Status ScoreOne(const CompletionInput& in, Task task, const Judge* judge,
                      const Profile& profile, const Clock* clock, CompletionScore* score) {
  const Anatomy anatomy = profile.expects_reasoning ? ParseAnatomy(in.text, profile.tags)
                                                    : NonThinkingAnatomy(in.text, profile.tags);
  score->has_answer_section = anatomy.answer_end > anatomy.answer_begin;
  score->malformed_tags = anatomy.malformed_tags;
  score->think_open_tags = CountTags(anatomy, TagKind::kThinkOpen);
  score->think_close_tags = CountTags(anatomy, TagKind::kThinkClose);

  if (!in.token_ids.empty()) {
    score->num_tokens = static_cast<uint32_t>(in.token_ids.size());
  } else if (in.num_tokens.has_value()) {
    score->num_tokens = *in.num_tokens;
  } else {
    score->num_tokens = EstimateTokens(in.text);
    score->tokens_estimated = true;
  }
  score->truncated =
      (in.finished.has_value() && !*in.finished) || score->num_tokens >= profile.length.max;

  if (task == Task::kExternal) {
    if (!in.external_accuracy.has_value()) {
      return absl::InvalidArgumentError("external_accuracy is required for TASK_EXTERNAL");
    }
    const double a = *in.external_accuracy;
    if (!Finite(a) || a < 0.0 || a > 1.0) {
      return absl::InvalidArgumentError(
          absl::StrCat("external_accuracy is ", a, ": it must be in [0, 1]"));
    }
    score->accuracy = a;
    score->verdict = a > 0.0 ? Verdict::kCorrect : Verdict::kWrong;
  } else {
    AccuracyResult result = judge->Grade(anatomy.answer(in.text));
    if (task == Task::kInstructionFollowing) ApplyInstructionOptions(profile.instructions, &result);
    score->accuracy = result.accuracy;
    score->verdict = result.verdict;
    score->instructions = std::move(result.instructions);
    score->extracted_answer = std::move(result.extracted);
    score->detail = std::move(result.detail);
    if (score->verdict == Verdict::kNoAnswer && !anatomy.has_think_close) {
      score->detail = "no </think>: an answer that appears only in the reasoning earns nothing";
    }
  }

  const FormatResult format =
      ScoreFormat(anatomy, score->truncated, score->accuracy, profile.format);
  score->format = format.reward;
  score->well_formed = format.well_formed;
  // An unscorable completion was not judged wrong: its format reward is not "withheld".
  score->format_gated = format.gated && !IsUnscorable(score->verdict);
  score->format_paid_ungated = format.paid_ungated;

  ScoreRepetition(in, anatomy, score->num_tokens, profile.repetition, clock, score);
  score->length = LengthComponent(score->num_tokens, score->accuracy > 0.0, profile.length);
  return absl::OkStatus();
}

void Total(const Weights& w, CompletionScore* s) {
  // An unscorable completion carries its verdict, not a reward: it is left out of its group.
  s->total = s->unscorable() ? 0.0
                             : w.accuracy * s->accuracy + w.format * s->format +
                                   w.repetition * s->repetition + w.length * s->length;
}

}  // namespace

absl::Status ValidateProfile(const Profile& p) {
  const LengthOptions& len = p.length;
  if (len.max == 0) return FieldError("length.max_tokens", "must be positive");
  if (len.shape == LengthShape::kQuadratic && len.target >= len.max) {
    return FieldError(
        "length.target_tokens",
        absl::StrCat("(", len.target, ") must be below length.max_tokens (", len.max, ")"));
  }
  if (len.shape == LengthShape::kDapoOverlong &&
      (len.dapo_buffer == 0 || len.dapo_buffer > len.max)) {
    return FieldError("length.dapo_buffer_tokens",
                      absl::StrCat("(", len.dapo_buffer, ") must be in [1, max_tokens]"));
  }
  if (!Finite(len.weight) || len.weight < 0) {
    return FieldError("length.weight", "must be finite and >= 0");
  }
  for (const auto& [name, value] : {std::pair<const char*, double>{"length.weight", len.weight},
                                    {"length.cosine_correct_short", len.cosine_correct_short},
                                    {"length.cosine_correct_long", len.cosine_correct_long},
                                    {"length.cosine_wrong_short", len.cosine_wrong_short},
                                    {"length.cosine_wrong_long", len.cosine_wrong_long},
                                    {"weights.accuracy", p.weights.accuracy},
                                    {"weights.format", p.weights.format},
                                    {"weights.repetition", p.weights.repetition},
                                    {"weights.length", p.weights.length}}) {
    if (!Finite(value)) return FieldError(name, "must be finite");
  }
  if (!Finite(p.format.reward) || p.format.reward < 0) {
    return FieldError("format.reward", "must be finite and >= 0");
  }
  if (!Finite(p.repetition.penalty) || p.repetition.penalty > 0) {
    return FieldError("repetition.penalty", "must be finite and <= 0");
  }
  if (!Finite(p.repetition.smooth_max_penalty) || p.repetition.smooth_max_penalty > 0) {
    return FieldError("repetition.smooth_max_penalty", "must be finite and <= 0");
  }
  if (p.repetition.ngram.n == 0 || p.repetition.ngram.n > 1024) {
    return FieldError("repetition.ngram_size", "must be in [1, 1024]");
  }
  if (p.repetition.ngram.max_occurrences == 0) {
    return FieldError("repetition.max_occurrences", "must be at least 1");
  }
  if (p.repetition.ngram.window == 0 || p.repetition.ngram.window > (1u << 20)) {
    return FieldError("repetition.loop_window", "must be in [1, 1048576]");
  }
  if (p.repetition.ngram.min_recurring_percent == 0 ||
      p.repetition.ngram.min_recurring_percent > 100) {
    return FieldError("repetition.loop_min_recurring_percent", "must be in [1, 100]");
  }
  if (p.repetition.ngram.recurrence_distance == 0) {
    return FieldError("repetition.loop_recurrence_distance", "must be at least 1");
  }
  const ast::AstOptions& ast = p.repetition.ast;
  if (ast.block_max_occurrences == 0) {
    return FieldError("repetition.ast.block_max_occurrences", "must be at least 1");
  }
  if (ast.code_max_occurrences == 0) {
    return FieldError("repetition.ast.code_max_occurrences", "must be at least 1");
  }
  if (ast.min_block_chars == 0) {
    return FieldError("repetition.ast.min_block_chars", "must be at least 1");
  }
  if (ast.min_code_nodes < 2) {
    return FieldError("repetition.ast.min_code_nodes", "must be at least 2");
  }
  if (ast.max_parse_bytes > (uint64_t{1} << 30)) {
    return FieldError("repetition.ast.max_parse_bytes", "must be at most 1 GiB");
  }
  if (ast.max_parse_work == 0) {
    return FieldError("repetition.ast.max_parse_work",
                      "must be at least 1 (the work all parses of a completion may do)");
  }
  if (ast.parse_timeout_micros == 0) {
    return FieldError("repetition.ast.parse_timeout_micros",
                      "must be at least 1 (the time all parses of a completion may take)");
  }
  if (p.task == Task::kExternal) {
    return FieldError("task", "cannot default to TASK_EXTERNAL: name it per group");
  }
  return absl::OkStatus();
}

absl::Status ScoreGroup(std::span<const CompletionInput> completions, Task task, const Judge* judge,
                        const Profile& profile, std::vector<CompletionScore>* scores,
                        const Clock* clock) {
  scores->assign(completions.size(), CompletionScore{});
  for (size_t i = 0; i < completions.size(); ++i) {
    absl::Status status = ScoreOne(completions[i], task, judge, profile, clock, &(*scores)[i]);
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("completion ", i, ": ", status.message()));
    }
  }
  if (profile.length.shape == LengthShape::kKimi) {
    // Kimi k1.5's length reward compares each completion with the others of its group only.
    std::vector<uint32_t> lengths;
    std::vector<size_t> index;
    for (size_t i = 0; i < scores->size(); ++i) {
      if ((*scores)[i].unscorable()) continue;
      lengths.push_back((*scores)[i].num_tokens);
      index.push_back(i);
    }
    // std::vector<bool> has no contiguous storage to make a span of.
    std::unique_ptr<bool[]> correct(new bool[index.size()]);
    for (size_t k = 0; k < index.size(); ++k) correct[k] = (*scores)[index[k]].accuracy > 0.0;
    const std::vector<double> rewards =
        KimiLengthRewards(lengths, std::span<const bool>(correct.get(), index.size()));
    for (size_t k = 0; k < index.size(); ++k) (*scores)[index[k]].length = rewards[k];
  }
  for (CompletionScore& s : *scores) Total(profile.weights, &s);
  return absl::OkStatus();
}

}  // namespace rlscore::scorers
