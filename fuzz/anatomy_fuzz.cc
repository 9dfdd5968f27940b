// Completion anatomy (scorers/anatomy.h) on any bytes, under both tag policies: never fails, and
// every span and tag it reports lies inside the text, in order; and the format reward is never
// paid without accuracy (docs/DESIGN.md §1's gate).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "scorers/anatomy.h"
#include "scorers/format.h"

namespace rlscore::fuzz {
namespace {

void Check(std::string_view text, const scorers::TagPolicy& policy) {
  const scorers::Anatomy a = scorers::ParseAnatomy(text, policy);
  RLSCORE_FUZZ_CHECK(a.reasoning_begin <= a.reasoning_end && a.reasoning_end <= text.size());
  RLSCORE_FUZZ_CHECK(a.answer_begin <= a.answer_end && a.answer_end <= text.size());
  RLSCORE_FUZZ_CHECK(a.has_think_close || a.answer_begin == text.size());
  if (a.has_answer_tag) {
    RLSCORE_FUZZ_CHECK(a.answer_tag_begin <= a.answer_tag_end);
    RLSCORE_FUZZ_CHECK(a.answer_begin <= a.answer_tag_begin && a.answer_tag_end <= a.answer_end);
  }
  size_t last = 0;
  for (const scorers::Tag& tag : a.tags) {
    RLSCORE_FUZZ_CHECK(tag.offset >= last && tag.offset + tag.length <= text.size());
    RLSCORE_FUZZ_CHECK(text[tag.offset] == '<' && text[tag.offset + tag.length - 1] == '>');
    last = tag.offset + tag.length;
  }
  uint32_t look_alikes = 0;
  size_t previous = 0;
  for (const scorers::Diagnostic& d : a.diagnostics) {
    RLSCORE_FUZZ_CHECK(d.offset <= text.size() && d.offset >= previous);
    previous = d.offset;
    if (d.kind == scorers::Malformation::kLookAlikeTag) ++look_alikes;
  }
  RLSCORE_FUZZ_CHECK(look_alikes == a.malformed_tags);
  (void)a.reasoning(text);
  (void)a.answer(text);
  for (const bool truncated : {false, true}) {
    for (const double accuracy : {0.0, 1.0}) {
      const scorers::FormatOptions options;
      const scorers::FormatResult format = scorers::ScoreFormat(a, truncated, accuracy, options);
      RLSCORE_FUZZ_CHECK(format.reward >= 0.0 && format.reward <= options.reward);
      // The incident's rule: no format reward without accuracy, nor for a malformed or cut one.
      if (accuracy == 0.0 || truncated || !a.WellFormed()) RLSCORE_FUZZ_CHECK(format.reward == 0.0);
    }
  }
}

}  // namespace
}  // namespace rlscore::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rlscore::fuzz::FuzzInput in(data, size);
  const std::string_view text = in.Rest();
  for (const bool prefilled : {false, true}) {
    for (const bool answer_tags : {false, true}) {
      rlscore::fuzz::Check(text,
                           {.think_prefilled = prefilled, .require_answer_tags = answer_tags});
    }
  }
  return 0;
}
