// Realistic reasoning text for the benchmarks: R1-style derivations whose sentences do not
// repeat. Header-only, with no dependency beyond the standard library.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace rlscore::bench {

// A derivation of about `tokens` tokens (4 bytes each) whose sentences do not repeat: words drawn
// from a vocabulary of math prose with numbers that change, ending in a boxed answer.
inline std::string RealisticCompletion(uint32_t tokens, uint64_t seed) {
  static const char* const kWords[] = {
      "we",    "compute", "the",      "sum",    "of",      "terms", "so",           "that",
      "each",  "factor",  "divides",  "modulo", "prime",   "hence", "therefore",    "let",
      "x",     "y",       "equation", "gives",  "solving", "for",   "substituting", "back",
      "check", "case",    "when",     "is",     "even",    "odd",   "then",         "square",
      "root",  "integer", "bound",    "at",     "most",    "least", "value",        "sequence"};
  std::mt19937_64 rng(seed);
  std::string text = "<think>";
  const size_t target = static_cast<size_t>(tokens) * 4;
  while (text.size() < target) {
    const int sentence = 6 + static_cast<int>(rng() % 10);
    for (int w = 0; w < sentence; ++w) {
      text += kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
      text += ' ';
      if (rng() % 5 == 0) text += std::to_string(rng() % 10000) + " ";
    }
    text += rng() % 3 == 0 ? "$x^2 + " + std::to_string(rng() % 100) + "$. " : ". ";
  }
  text += "</think> Therefore the answer is $\\boxed{" + std::to_string(seed % 100) + "}$.";
  return text;
}

}  // namespace rlscore::bench
