// The "completion" strings of a JSONL file (real model outputs), for the benchmarks' --texts=FILE.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
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

}  // namespace rlscore::bench
