// The text pass of the AST repetition detector (ast::ScanStructure: lines, fences, blocks and
// their fingerprints), which runs on every completion: on realistic R1-style derivations, on the
// same with a fenced Python block every few paragraphs, and with --texts=FILE on the "completion"
// of each line of a JSONL file (real model outputs). Results in docs/PERFORMANCE.md.
//
//   cmake --build build -j2 --target structure_scan_bench
//   ./build/bench/structure_scan_bench --texts=outputs.jsonl
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/completions_file.h"
#include "bench/realistic_text.h"
#include "scorers/ast/markdown_lines.h"

namespace rlscore::scorers::ast {
namespace {

void ScanTexts(benchmark::State& state, const std::vector<std::string>& texts) {
  size_t bytes = 0;
  for (const std::string& text : texts) bytes += text.size();
  for (auto _ : state) {
    for (const std::string& text : texts) {
      LineScan scan = ScanStructure(text);
      benchmark::DoNotOptimize(scan);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * texts.size()));
}

// Paragraphs of a few sentences, one to a line, as R1-style outputs write them; with `code`, a
// fenced Python block after every third paragraph.
std::string Paragraphs(uint64_t seed, bool code) {
  const std::string prose = bench::RealisticCompletion(3000, seed);
  std::string out;
  size_t sentences = 0;
  for (const char c : prose) {
    out += c;
    if (c != '.' && c != '$') continue;
    if (c == '.' && ++sentences % 2 == 0) out += '\n';
    if (sentences % 8 == 0 && c == '.') {
      out += '\n';
      if (code && sentences % 24 == 0) {
        out += "```python\ndef f(n):\n    total = 0\n    for k in range(" +
               std::to_string(sentences) + "):\n        total += k * k\n    return total\n```\n\n";
      }
    }
  }
  return out;
}

void BM_ScanStructure(benchmark::State& state, bool code) {
  std::vector<std::string> texts;
  for (uint64_t i = 0; i < 50; ++i) texts.push_back(Paragraphs(i, code));
  ScanTexts(state, texts);
}
BENCHMARK_CAPTURE(BM_ScanStructure, prose, false);
BENCHMARK_CAPTURE(BM_ScanStructure, prose_and_code, true);

}  // namespace
}  // namespace rlscore::scorers::ast

int main(int argc, char** argv) {
  // --texts=FILE registers BM_ScanStructure/file over its completions.
  return rlscore::bench::RunWithTexts(argc, argv, "structure_scan_bench", "BM_ScanStructure/file",
                                      rlscore::scorers::ast::ScanTexts);
}
