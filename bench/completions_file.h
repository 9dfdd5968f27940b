// The "completion" strings of a JSONL file (real model outputs), for the benchmarks' --texts=FILE:
// reading them, and a main() that registers one more benchmark over them.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace rlscore::bench {

// Appends the string "completion" of each line of `path` that has one; false when the file cannot
// be read or has none.
inline bool ReadCompletions(const std::string& path, std::vector<std::string>* texts) {
  std::ifstream in(path);
  if (!in) return false;
  const size_t before = texts->size();
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_object() && row.contains("completion") && row["completion"].is_string()) {
      texts->push_back(row["completion"].get<std::string>());
    }
  }
  return texts->size() > before;
}

// The body of a benchmark program's main(): with --texts=FILE, also registers `name`, which
// times `scan` over FILE's completions; then runs the benchmarks. Returns main's exit status.
inline int RunWithTexts(int argc, char** argv, const char* program, const char* name,
                        void (*scan)(benchmark::State&, const std::vector<std::string>&)) {
  static std::vector<std::string> texts;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--texts=")) {
      const std::string path(arg.substr(8));
      if (!ReadCompletions(path, &texts)) {
        std::fprintf(stderr, "%s: no completions read from %s\n", program, path.c_str());
        return 1;
      }
      benchmark::RegisterBenchmark(name, [scan](benchmark::State& state) { scan(state, texts); });
      continue;
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace rlscore::bench
