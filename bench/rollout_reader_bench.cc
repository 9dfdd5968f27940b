// Reading and writing the JSONL of `rlscore score` (docs/PERFORMANCE.md, "Evaluation CLI"): MB/s
// of the simdjson reader against the nlohmann reference on lines like the benchmark corpus's
// (12 KB R1-style completions with LaTeX, quotes and newlines to unescape) in the three forms
// trainers write (text, with token ids, as chat messages), of cutting a file's bytes into lines,
// and results written per second.
//
//   ./build-release/bench/rollout_reader_bench
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "bench/score_batch.h"
#include "cli/input_pieces.h"
#include "cli/rollouts.h"
#include "common/json_output.h"

namespace rlscore {
namespace {

// The forms a trainer writes a completion in: text; text with its token ids (verl, OpenRLHF);
// a chat message list, the prompt's message and then the answer's (TRL's conversational data).
enum class Form { kText, kTokenIds, kChat };

// 200 rollout lines of ~12 KB in `form`, newline-separated, with the padding the reader needs at
// the end.
const std::string& Lines(Form form = Form::kText) {
  static std::string* lines[3] = {};
  std::string*& text = lines[static_cast<int>(form)];
  if (text != nullptr) return *text;
  text = new std::string;
  for (uint64_t i = 0; i < 200; ++i) {
    absl::StrAppend(text, "{\"id\": ", i, ", \"prompt_id\": \"aime/", i % 30, "\", ");
    // Sentences on lines of their own, as reasoning is written: newlines to unescape.
    const std::string completion =
        absl::StrReplaceAll(bench::RealisticCompletion(3000, i), {{". ", ".\n"}});
    if (form == Form::kChat) {
      text->append("\"completion\": [{\"role\": \"user\", \"content\": ");
      AppendJsonString(text, absl::StrCat("Problem ", i, ": find the value of x."));
      text->append("}, {\"role\": \"assistant\", \"content\": ");
      AppendJsonString(text, completion);
      text->append("}]");
    } else {
      text->append("\"completion\": ");
      AppendJsonString(text, completion);
    }
    if (form == Form::kTokenIds) {
      // About one id per 4 bytes of text, from a 150,000-word vocabulary.
      text->append(", \"token_ids\": [");
      for (uint64_t t = 0; t < completion.size() / 4; ++t) {
        absl::StrAppend(text, t == 0 ? "" : ", ", (t * 2654435761u + i) % 150000);
      }
      text->append("]");
    }
    absl::StrAppend(text, ", \"reference\": \"", i % 997,
                    "\", \"num_tokens\": 3000, \"finished\": true}\n");
  }
  text->append(cli::kRolloutLinePadding, ' ');
  return *text;
}

std::vector<cli::PieceLine> SplitLines(Form form = Form::kText) {
  std::vector<cli::PieceLine> lines;
  const std::string& text = Lines(form);
  cli::SplitLines(std::string_view(text).substr(0, text.size() - cli::kRolloutLinePadding), &lines);
  return lines;
}

void BM_ReadRolloutsSimdjson(benchmark::State& state, Form form) {
  const std::vector<cli::PieceLine> lines = SplitLines(form);
  cli::RolloutReader reader(cli::FieldNames{});
  for (auto _ : state) {
    for (const cli::PieceLine& line : lines) {
      absl::StatusOr<cli::Rollout> rollout = reader.ReadPadded(line.text);
      benchmark::DoNotOptimize(rollout);
    }
  }
  if (reader.deferred() != 0) state.SkipWithError("lines were left to the reference reader");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Lines(form).size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * lines.size()));
}
BENCHMARK_CAPTURE(BM_ReadRolloutsSimdjson, text, Form::kText);
BENCHMARK_CAPTURE(BM_ReadRolloutsSimdjson, token_ids, Form::kTokenIds);
BENCHMARK_CAPTURE(BM_ReadRolloutsSimdjson, chat, Form::kChat);

void BM_ReadRolloutsNlohmannReference(benchmark::State& state, Form form) {
  const std::vector<cli::PieceLine> lines = SplitLines(form);
  for (auto _ : state) {
    for (const cli::PieceLine& line : lines) {
      absl::StatusOr<cli::Rollout> rollout = cli::ParseRollout(line.text, cli::FieldNames{});
      benchmark::DoNotOptimize(rollout);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Lines(form).size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * lines.size()));
}
BENCHMARK_CAPTURE(BM_ReadRolloutsNlohmannReference, text, Form::kText);
BENCHMARK_CAPTURE(BM_ReadRolloutsNlohmannReference, token_ids, Form::kTokenIds);
BENCHMARK_CAPTURE(BM_ReadRolloutsNlohmannReference, chat, Form::kChat);

void BM_SplitLines(benchmark::State& state) {
  std::vector<cli::PieceLine> lines;
  for (auto _ : state) {
    lines.clear();
    benchmark::DoNotOptimize(cli::SplitLines(Lines(), &lines));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Lines().size()));
}
BENCHMARK(BM_SplitLines);

void BM_AppendResult(benchmark::State& state) {
  v1::ScoreItem item;
  item.set_prompt_id("aime/17");
  v1::CompletionResult result;
  result.set_verdict(v1::VERDICT_CORRECT);
  result.mutable_components()->set_accuracy(1.0);
  result.mutable_components()->set_format(0.1);
  result.set_extracted_answer("\\frac{1}{2}");
  result.set_num_tokens(3000);
  result.mutable_anatomy()->set_well_formed(true);
  std::string out;
  for (auto _ : state) {
    out.clear();
    cli::AppendResult(&out, 12345, "\"r-1\"", item, result, 1.1);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AppendResult);

}  // namespace
}  // namespace rlscore

BENCHMARK_MAIN();
