#include "engine/profiles.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "engine/advantage_mapping.h"
#include "engine/scoring_mapping.h"
#include "rlscore/config/v1/server_config.pb.h"

namespace rlscore::engine {
namespace {

using config::v1::LengthPenalty;
using config::v1::RepetitionPenalty;

std::string Fnv1a64Hex(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(h));
  return buffer;
}

absl::Status Apply(const config::v1::Profile& in, scorers::Profile* p) {
  if (in.task() != v1::TASK_UNSPECIFIED) {
    absl::StatusOr<scorers::Task> task = TaskFromProto(in.task());
    if (!task.ok()) return task.status();
    p->task = *task;
  }
  const config::v1::TagPolicy& tags = in.tags();
  if (tags.has_think_prefilled()) p->tags.think_prefilled = tags.think_prefilled();
  if (tags.has_require_answer_tags()) p->tags.require_answer_tags = tags.require_answer_tags();
  if (tags.has_expects_reasoning()) p->expects_reasoning = tags.expects_reasoning();

  const config::v1::Weights& w = in.weights();
  if (w.has_accuracy()) p->weights.accuracy = w.accuracy();
  if (w.has_format()) p->weights.format = w.format();
  if (w.has_repetition()) p->weights.repetition = w.repetition();
  if (w.has_length()) p->weights.length = w.length();

  const config::v1::InstructionFollowing& instructions = in.instruction_following();
  if (instructions.has_loose()) p->instructions.loose = instructions.loose();
  if (instructions.has_fraction()) p->instructions.fraction = instructions.fraction();

  if (in.format().has_reward()) p->format.reward = in.format().reward();
  if (in.format().has_ungated()) p->format.ungated = in.format().ungated();

  const RepetitionPenalty& r = in.repetition();
  if (r.has_enabled()) p->repetition.enabled = r.enabled();
  switch (r.mode()) {
    case RepetitionPenalty::MODE_UNSPECIFIED:
      break;
    case RepetitionPenalty::MODE_THRESHOLD:
      p->repetition.mode = scorers::RepetitionMode::kThreshold;
      break;
    case RepetitionPenalty::MODE_SMOOTH:
      p->repetition.mode = scorers::RepetitionMode::kSmooth;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("repetition.mode: unknown value ", r.mode()));
  }
  switch (r.ngram_rule()) {
    case RepetitionPenalty::NGRAM_RULE_UNSPECIFIED:
      break;
    case RepetitionPenalty::NGRAM_RULE_LOOP:
      p->repetition.ngram.rule = scorers::NgramRule::kLoop;
      break;
    case RepetitionPenalty::NGRAM_RULE_LITERAL:
      p->repetition.ngram.rule = scorers::NgramRule::kLiteral;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("repetition.ngram_rule: unknown value ", r.ngram_rule()));
  }
  scorers::NgramOptions& ngram = p->repetition.ngram;
  if (r.has_ngram_size()) ngram.n = r.ngram_size();
  if (r.has_max_occurrences()) ngram.max_occurrences = r.max_occurrences();
  if (r.has_loop_window()) ngram.window = r.loop_window();
  if (r.has_loop_min_recurring_percent()) {
    ngram.min_recurring_percent = r.loop_min_recurring_percent();
  }
  if (r.has_loop_recurrence_distance()) ngram.recurrence_distance = r.loop_recurrence_distance();
  if (r.has_max_number_run()) ngram.max_number_run = r.max_number_run();
  if (r.has_max_reasoning_tags()) p->repetition.max_reasoning_tags = r.max_reasoning_tags();
  if (r.has_max_run_bytes()) p->repetition.max_run_bytes = r.max_run_bytes();
  if (r.has_penalty()) p->repetition.penalty = r.penalty();
  if (r.has_smooth_max_penalty()) p->repetition.smooth_max_penalty = r.smooth_max_penalty();
  const config::v1::AstRepetition& a = r.ast();
  scorers::ast::AstOptions& ast = p->repetition.ast;
  if (a.has_enabled()) ast.enabled = a.enabled();
  if (a.has_block_max_occurrences()) ast.block_max_occurrences = a.block_max_occurrences();
  if (a.has_min_block_chars()) ast.min_block_chars = a.min_block_chars();
  if (a.has_code_max_occurrences()) ast.code_max_occurrences = a.code_max_occurrences();
  if (a.has_min_code_nodes()) ast.min_code_nodes = a.min_code_nodes();
  if (a.languages_size() > 0) {
    ast.languages.fill(false);
    for (int i = 0; i < a.languages_size(); ++i) {
      const std::optional<scorers::ast::CodeLanguage> language =
          scorers::ast::CodeLanguageFromName(a.languages(i));
      if (!language.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("repetition.ast.languages[", i,
                                                       "]: unknown language \"", a.languages(i),
                                                       "\" (known: python, cpp, c, javascript)"));
      }
      ast.languages[static_cast<size_t>(*language)] = true;
    }
  }
  if (a.has_max_parse_bytes()) ast.max_parse_bytes = a.max_parse_bytes();
  if (a.has_max_parse_work()) ast.max_parse_work = a.max_parse_work();
  if (a.has_parse_timeout_micros()) ast.parse_timeout_micros = a.parse_timeout_micros();
  if (a.has_max_nodes()) ast.max_nodes = a.max_nodes();

  const LengthPenalty& l = in.length();
  switch (l.shape()) {
    case LengthPenalty::SHAPE_UNSPECIFIED:
      break;
    case LengthPenalty::SHAPE_NONE:
      p->length.shape = scorers::LengthShape::kNone;
      break;
    case LengthPenalty::SHAPE_QUADRATIC:
      p->length.shape = scorers::LengthShape::kQuadratic;
      break;
    case LengthPenalty::SHAPE_DAPO_OVERLONG:
      p->length.shape = scorers::LengthShape::kDapoOverlong;
      break;
    case LengthPenalty::SHAPE_COSINE:
      p->length.shape = scorers::LengthShape::kCosine;
      break;
    case LengthPenalty::SHAPE_KIMI:
      p->length.shape = scorers::LengthShape::kKimi;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("length.shape: unknown value ", l.shape()));
  }
  if (l.has_weight()) p->length.weight = l.weight();
  if (l.has_target_tokens()) p->length.target = l.target_tokens();
  if (l.has_max_tokens()) p->length.max = l.max_tokens();
  if (l.has_dapo_buffer_tokens()) p->length.dapo_buffer = l.dapo_buffer_tokens();
  if (l.has_cosine_correct_short()) p->length.cosine_correct_short = l.cosine_correct_short();
  if (l.has_cosine_correct_long()) p->length.cosine_correct_long = l.cosine_correct_long();
  if (l.has_cosine_wrong_short()) p->length.cosine_wrong_short = l.cosine_wrong_short();
  if (l.has_cosine_wrong_long()) p->length.cosine_wrong_long = l.cosine_wrong_long();
  return absl::OkStatus();
}

// Fills the canonical form and the hash from the complete proto form. The binary encoding, not
// the text format: the generated code writes it without protobuf's descriptors, which the text
// format builds on first use (about 0.6 ms of every `rlscore score` start, docs/PERFORMANCE.md).
void Seal(ServiceProfile* profile) {
  config::v1::Profile proto;
  ProfileToProto(*profile, &proto);
  profile->canonical.clear();
  {
    google::protobuf::io::StringOutputStream stream(&profile->canonical);
    google::protobuf::io::CodedOutputStream out(&stream);
    // Fields in number order, map entries sorted: the same bytes for the same profile.
    out.SetSerializationDeterministic(true);
    proto.SerializeToCodedStream(&out);
  }
  // The scorers' version goes into the hash too: a release that changes a verdict changes it.
  profile->hash = Fnv1a64Hex(absl::StrCat(profile->canonical, "|rlscore ", RLSCORE_VERSION));
}

}  // namespace

absl::StatusOr<const ServiceProfile*> ProfileSet::Find(std::string_view name) const {
  if (name.empty()) name = "default";
  auto it = profiles_.find(name);
  if (it != profiles_.end()) return &it->second;
  std::string known;
  for (const auto& [n, p] : profiles_) absl::StrAppend(&known, known.empty() ? "" : ", ", n);
  return absl::NotFoundError(
      absl::StrCat("profile \"", Clip(name), "\" is not configured (known: ", known, ")"));
}

absl::Status ProfileSet::Add(const config::v1::Profile& proto,
                             const advantage::Options& advantage_defaults) {
  const std::string name = proto.name().empty() ? "default" : proto.name();
  ServiceProfile profile;
  profile.reward.name = name;
  profile.advantage = advantage_defaults;
  absl::Status status = Apply(proto, &profile.reward);
  if (status.ok()) status = scorers::ValidateProfile(profile.reward);
  if (status.ok() && proto.has_advantage()) {
    status = ApplyAdvantageOptions(proto.advantage(), &profile.advantage);
    if (!status.ok())
      status = absl::InvalidArgumentError(absl::StrCat("advantage.", status.message()));
  }
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("profile \"", name, "\": ", status.message()));
  }
  Seal(&profile);
  profiles_[name] = std::move(profile);
  return absl::OkStatus();
}

ProfileSet DefaultProfiles(const advantage::Options& advantage) {
  ProfileSet set;
  config::v1::Profile proto;
  proto.set_name("default");
  absl::Status status = set.Add(proto, advantage);
  (void)status;  // the built-in default always validates (tested)
  return set;
}

void ProfileToProto(const ServiceProfile& profile, config::v1::Profile* out) {
  const scorers::Profile& p = profile.reward;
  out->set_name(p.name);
  out->set_task(TaskToProto(p.task));
  out->mutable_tags()->set_think_prefilled(p.tags.think_prefilled);
  out->mutable_tags()->set_require_answer_tags(p.tags.require_answer_tags);
  out->mutable_tags()->set_expects_reasoning(p.expects_reasoning);
  out->mutable_weights()->set_accuracy(p.weights.accuracy);
  out->mutable_weights()->set_format(p.weights.format);
  out->mutable_weights()->set_repetition(p.weights.repetition);
  out->mutable_weights()->set_length(p.weights.length);
  out->mutable_format()->set_reward(p.format.reward);
  out->mutable_format()->set_ungated(p.format.ungated);
  // Written only when a profile changes it, so that the hash of every profile that predates the
  // IF task stays what it was.
  if (p.instructions.loose || p.instructions.fraction) {
    out->mutable_instruction_following()->set_loose(p.instructions.loose);
    out->mutable_instruction_following()->set_fraction(p.instructions.fraction);
  }
  RepetitionPenalty* r = out->mutable_repetition();
  r->set_enabled(p.repetition.enabled);
  r->set_mode(p.repetition.mode == scorers::RepetitionMode::kThreshold
                  ? RepetitionPenalty::MODE_THRESHOLD
                  : RepetitionPenalty::MODE_SMOOTH);
  const scorers::NgramOptions& ngram = p.repetition.ngram;
  r->set_ngram_rule(ngram.rule == scorers::NgramRule::kLoop
                        ? RepetitionPenalty::NGRAM_RULE_LOOP
                        : RepetitionPenalty::NGRAM_RULE_LITERAL);
  r->set_ngram_size(ngram.n);
  r->set_max_occurrences(ngram.max_occurrences);
  r->set_loop_window(ngram.window);
  r->set_loop_min_recurring_percent(ngram.min_recurring_percent);
  r->set_loop_recurrence_distance(ngram.recurrence_distance);
  r->set_max_number_run(ngram.max_number_run);
  r->set_max_reasoning_tags(p.repetition.max_reasoning_tags);
  r->set_max_run_bytes(p.repetition.max_run_bytes);
  r->set_penalty(p.repetition.penalty);
  r->set_smooth_max_penalty(p.repetition.smooth_max_penalty);
  const scorers::ast::AstOptions& ast = p.repetition.ast;
  config::v1::AstRepetition* a = r->mutable_ast();
  a->set_enabled(ast.enabled);
  a->set_block_max_occurrences(ast.block_max_occurrences);
  a->set_min_block_chars(ast.min_block_chars);
  a->set_code_max_occurrences(ast.code_max_occurrences);
  a->set_min_code_nodes(ast.min_code_nodes);
  for (int i = 0; i < scorers::ast::kNumCodeLanguages; ++i) {
    const auto language = static_cast<scorers::ast::CodeLanguage>(i);
    if (ast.languages[static_cast<size_t>(i)]) {
      a->add_languages(std::string(scorers::ast::CodeLanguageName(language)));
    }
  }
  a->set_max_parse_bytes(ast.max_parse_bytes);
  a->set_max_parse_work(ast.max_parse_work);
  a->set_parse_timeout_micros(ast.parse_timeout_micros);
  a->set_max_nodes(ast.max_nodes);
  LengthPenalty* l = out->mutable_length();
  switch (p.length.shape) {
    case scorers::LengthShape::kNone:
      l->set_shape(LengthPenalty::SHAPE_NONE);
      break;
    case scorers::LengthShape::kQuadratic:
      l->set_shape(LengthPenalty::SHAPE_QUADRATIC);
      break;
    case scorers::LengthShape::kDapoOverlong:
      l->set_shape(LengthPenalty::SHAPE_DAPO_OVERLONG);
      break;
    case scorers::LengthShape::kCosine:
      l->set_shape(LengthPenalty::SHAPE_COSINE);
      break;
    case scorers::LengthShape::kKimi:
      l->set_shape(LengthPenalty::SHAPE_KIMI);
      break;
  }
  l->set_weight(p.length.weight);
  l->set_target_tokens(p.length.target);
  l->set_max_tokens(p.length.max);
  l->set_dapo_buffer_tokens(p.length.dapo_buffer);
  l->set_cosine_correct_short(p.length.cosine_correct_short);
  l->set_cosine_correct_long(p.length.cosine_correct_long);
  l->set_cosine_wrong_short(p.length.cosine_wrong_short);
  l->set_cosine_wrong_long(p.length.cosine_wrong_long);
  AdvantageOptionsToProto(profile.advantage, out->mutable_advantage());
}

}  // namespace rlscore::engine
