// Task IF speed (docs/PERFORMANCE.md): responses graded per second on one core, on 300-word
// responses. Goal: >= 50,000/s for the IF judge.
//
//   ./build/bench/instructions_bench --benchmark_min_time=1
//
// BM_Judge grades a response against an instruction list as ScoreGroups does (the lists are
// parsed beforehand, once per group); the lists mix every instruction of the registry, two or
// three per prompt as in IFEval. BM_Instruction/<i> grades against one instruction at a time, to
// show which checker costs what. BM_ScoreGroup is the whole reward of task IF with the default
// profile of a model that does not think: the judge plus anatomy, format, the repetition
// detectors and length.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "scorers/instructions/instructions.h"
#include "scorers/instructions/judge.h"
#include "scorers/reward.h"

namespace {

using rlscore::scorers::CompletionInput;
using rlscore::scorers::CompletionScore;
using rlscore::scorers::Judge;

constexpr const char* kWords[] = {
    "the",     "model",   "answer",    "should",  "follow", "every",   "instruction", "and",
    "keep",    "its",     "reasoning", "short",   "while",  "writing", "clear",       "text",
    "about",   "history", "science",   "travel",  "food",   "music",   "people",      "often",
    "think",   "that",    "a",         "good",    "essay",  "has",     "structure",   "with",
    "several", "points",  "which",     "support", "one",    "main",    "idea",        "CAPITAL",
};

// A response of about `words` words: sentences, paragraphs separated by blank lines and a
// divider, a title, a bullet list, a highlighted phrase, a placeholder and a postscript, so that
// every checker has something to find.
std::string Response(std::mt19937& rng, int words) {
  std::uniform_int_distribution<size_t> word(0, std::size(kWords) - 1);
  std::uniform_int_distribution<int> sentence_length(6, 18);
  std::string text = "<<A Title About Things>>\n\n";
  int written = 0;
  int sentence = 0;
  while (written < words) {
    const int n = sentence_length(rng);
    for (int i = 0; i < n; ++i) {
      std::string w = kWords[word(rng)];
      if (i == 0) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
      text += w;
      text += i + 1 == n ? ". " : (i == n / 2 && sentence % 3 == 0 ? ", " : " ");
    }
    written += n;
    ++sentence;
    if (sentence % 5 == 0) text += "\n\n";
    if (sentence == 7) text += "* first point\n* second point with *emphasis* here\n- third\n";
    if (sentence == 9) text += "\n***\n";
    if (sentence == 11) text += "Send it to [address] by [date]. ";
  }
  text += "\n\nP.S. Any other questions?";
  return text;
}

// Instruction lists as IFEval writes them, covering every supported instruction.
const char* const kReferences[] = {
    R"({"instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
        "kwargs": [{}, {"relation": "at least", "num_words": 300}]})",
    R"({"instruction_id_list": ["keywords:existence", "keywords:forbidden_words"],
        "kwargs": [{"keywords": ["essay", "structure"]}, {"forbidden_words": ["banana", "kiwi"]}]})",
    R"({"instruction_id_list": ["keywords:frequency", "keywords:letter_frequency"],
        "kwargs": [{"keyword": "model", "frequency": 3, "relation": "at least"},
                   {"letter": "q", "let_frequency": 2, "let_relation": "less than"}]})",
    R"({"instruction_id_list": ["length_constraints:number_sentences",
                                "length_constraints:number_paragraphs"],
        "kwargs": [{"num_sentences": 20, "relation": "at least"}, {"num_paragraphs": 2}]})",
    R"({"instruction_id_list": ["length_constraints:nth_paragraph_first_word",
                                "detectable_content:number_placeholders"],
        "kwargs": [{"num_paragraphs": 6, "nth_paragraph": 2, "first_word": "the"},
                   {"num_placeholders": 2}]})",
    R"({"instruction_id_list": ["detectable_content:postscript",
                                "detectable_format:number_bullet_lists", "detectable_format:title"],
        "kwargs": [{"postscript_marker": "P.S."}, {"num_bullets": 3}, {}]})",
    R"({"instruction_id_list": ["detectable_format:constrained_response",
                                "detectable_format:number_highlighted_sections"],
        "kwargs": [{}, {"num_highlights": 2}]})",
    R"({"instruction_id_list": ["detectable_format:multiple_sections",
                                "detectable_format:json_format"],
        "kwargs": [{"section_spliter": "Section", "num_sections": 3}, {}]})",
    R"({"instruction_id_list": ["combination:two_responses", "combination:repeat_prompt"],
        "kwargs": [{}, {"prompt_to_repeat": "Write an essay about history."}]})",
    R"({"instruction_id_list": ["startend:end_checker", "change_case:capital_word_frequency"],
        "kwargs": [{"end_phrase": "Any other questions?"},
                   {"capital_frequency": 5, "capital_relation": "less than"}]})",
    R"({"instruction_id_list": ["change_case:english_capital", "change_case:english_lowercase",
                                "punctuation:no_comma", "startend:quotation"],
        "kwargs": [{}, {}, {}, {}]})",
};

std::vector<std::string> Responses(size_t count, int words) {
  std::mt19937 rng(20261204);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) out.push_back(Response(rng, words));
  return out;
}

void BM_Judge(benchmark::State& state) {
  const std::vector<std::string> responses = Responses(256, static_cast<int>(state.range(0)));
  std::vector<std::unique_ptr<Judge>> judges;
  for (const char* r : kReferences) {
    const std::string reference = r;
    judges.push_back(rlscore::scorers::instructions::NewJudge(std::span(&reference, 1)));
  }
  size_t i = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string& response = responses[i % responses.size()];
    benchmark::DoNotOptimize(judges[i % judges.size()]->Grade(response));
    bytes += response.size();
    ++i;
  }
  state.SetItemsProcessed(static_cast<int64_t>(i));
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Judge)->Arg(300)->Arg(1000);

void BM_Instruction(benchmark::State& state) {
  const std::vector<std::string> responses = Responses(64, 300);
  // Instruction i of the flattened lists above.
  std::vector<rlscore::scorers::instructions::Instruction> all;
  for (const char* r : kReferences) {
    auto parsed = rlscore::scorers::instructions::ParseInstructions(r);
    if (!parsed.ok()) state.SkipWithError("a reference does not parse");
    if (parsed.ok()) all.insert(all.end(), parsed->begin(), parsed->end());
  }
  const auto& instruction = all[static_cast<size_t>(state.range(0)) % all.size()];
  state.SetLabel(instruction.id);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        rlscore::scorers::instructions::CheckAll(std::span(&instruction, 1), responses[i % 64]));
    ++i;
  }
  state.SetItemsProcessed(static_cast<int64_t>(i));
}
BENCHMARK(BM_Instruction)->DenseRange(0, 25);

void BM_ScoreGroup(benchmark::State& state) {
  const std::vector<std::string> responses = Responses(256, 300);
  rlscore::scorers::Profile profile;
  profile.expects_reasoning = false;
  std::vector<std::unique_ptr<Judge>> judges;
  for (const char* r : kReferences) {
    const std::string reference = r;
    judges.push_back(rlscore::scorers::instructions::NewJudge(std::span(&reference, 1)));
  }
  std::vector<CompletionScore> scores;
  size_t i = 0;
  for (auto _ : state) {
    CompletionInput in;
    in.text = responses[i % responses.size()];
    const absl::Status status = rlscore::scorers::ScoreGroup(
        std::span(&in, 1), rlscore::scorers::Task::kInstructionFollowing,
        judges[i % judges.size()].get(), profile, &scores);
    if (!status.ok()) state.SkipWithError("ScoreGroup failed");
    ++i;
  }
  state.SetItemsProcessed(static_cast<int64_t>(i));
}
BENCHMARK(BM_ScoreGroup);

}  // namespace

BENCHMARK_MAIN();
