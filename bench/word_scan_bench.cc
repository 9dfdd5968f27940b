// The n-gram rule over a completion's words, splitting included (FindRepeatedWordsInText), on
// the scripts and punctuation model outputs are written in: plain ASCII prose; the same with a
// dash, curly quote or arrow after every 25th word (three-byte characters that separate words or
// are word bytes); and the same words written in Chinese characters, each a word of its own.
// With --texts=FILE, also the "completion" of each line of a JSONL file (real model outputs).
// BM_RuleOverSplitWords times the rule alone, over words split beforehand.
// Results in docs/PERFORMANCE.md ("Evaluation CLI").
//
//   cmake --build build -j2 --target word_scan_bench && ./build/bench/word_scan_bench
//   ./build/bench/word_scan_bench --texts=outputs.jsonl --benchmark_filter=file
#include <benchmark/benchmark.h>

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/completions_file.h"
#include "bench/realistic_text.h"
#include "scorers/ngram_repetition.h"

namespace rlscore::scorers {
namespace {

enum class Script { kAscii, kPunctuated, kChinese };

// One, two or three CJK ideographs standing for an ASCII word, the same for the same word.
std::string Ideographs(const std::string& word) {
  uint64_t h = 1469598103934665603ULL;
  for (const char c : word) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  std::string out;
  for (uint64_t i = 0; i <= h % 3; ++i) {
    const auto code = static_cast<uint32_t>(0x4E00 + (h >> (16 * i)) % 20000);
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
  return out;
}

std::string Rewrite(const std::string& text, Script script) {
  if (script == Script::kAscii) return text;
  static const char* const kMarks[] = {"\u2014 ", "\u2019", "\u2192 ", "\u2026 "};
  std::string out;
  std::string word;
  size_t words = 0;
  const auto flush = [&] {
    if (word.empty()) return;
    out += script == Script::kChinese && !std::isdigit(static_cast<unsigned char>(word[0]))
               ? Ideographs(word)
               : word;
    word.clear();
    if (script == Script::kPunctuated && ++words % 25 == 0) out += kMarks[words / 25 % 4];
  };
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    flush();
    if (script == Script::kChinese && c == '.') {
      out += "\u3002";  // 。
    } else if (script != Script::kChinese || c != ' ') {
      out += c;
    }
  }
  flush();
  return out;
}

void ScanTexts(benchmark::State& state, const std::vector<std::string>& texts) {
  size_t bytes = 0;
  for (const std::string& text : texts) bytes += text.size();
  const NgramOptions options;
  for (auto _ : state) {
    for (const std::string& text : texts) {
      const TextNgramReport report = FindRepeatedWordsInText(text, options);
      benchmark::DoNotOptimize(report);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * texts.size()));
}

void BM_RepeatedWordsInText(benchmark::State& state, Script script) {
  std::vector<std::string> texts;
  for (uint64_t i = 0; i < 50; ++i) {
    texts.push_back(Rewrite(bench::RealisticCompletion(3000, i), script));
  }
  ScanTexts(state, texts);
}
BENCHMARK_CAPTURE(BM_RepeatedWordsInText, ascii, Script::kAscii);
BENCHMARK_CAPTURE(BM_RepeatedWordsInText, punctuated, Script::kPunctuated);
BENCHMARK_CAPTURE(BM_RepeatedWordsInText, chinese, Script::kChinese);

// The rule alone, over the ASCII texts' words split beforehand (FindRepeatedWords, the smooth
// penalty's way): a word a run of its own through NgramStream::PushWords.
void BM_RuleOverSplitWords(benchmark::State& state) {
  std::vector<std::vector<Word>> texts;
  size_t words = 0;
  for (uint64_t i = 0; i < 50; ++i) {
    texts.push_back(NormalizedWords(bench::RealisticCompletion(3000, i)));
    words += texts.back().size();
  }
  const NgramOptions options;
  for (auto _ : state) {
    for (const std::vector<Word>& text : texts) {
      const NgramReport report = FindRepeatedWords(text, options);
      benchmark::DoNotOptimize(report);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * words));
}
BENCHMARK(BM_RuleOverSplitWords);

}  // namespace
}  // namespace rlscore::scorers

int main(int argc, char** argv) {
  // --texts=FILE registers BM_RepeatedWordsInText/file over its completions.
  return rlscore::bench::RunWithTexts(argc, argv, "word_scan_bench", "BM_RepeatedWordsInText/file",
                                      rlscore::scorers::ScanTexts);
}
