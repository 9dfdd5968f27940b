// Tiny debug tool: for each argv, prints the extraction and parse. Use "-p" prefix to parse only.
#include <cstdio>
#include <string>
#include "scorers/math/extract.h"
#include "scorers/math/parser.h"
using namespace rlscore::scorers::math;
void P(const std::string& s) {
  Budget b; auto e = ParseAnswer(s, ParseLimits{}, b);
  if (e.ok()) std::printf("  parse[%s] = %s\n", s.c_str(), e->DebugString().c_str());
  else std::printf("  parse[%s] : %s\n", s.c_str(), std::string(e.status().ToString()).c_str());
}
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("-p", 0) == 0) { P(s.substr(2)); continue; }
    ExtractedAnswer a = ExtractAnswer(s);
    std::printf("extract (%s):", a.detail.c_str());
    for (auto& p : a.parts) std::printf(" [%s]", p.c_str());
    std::printf("\n");
    for (auto& p : a.parts) P(p);
  }
}
