// The HTML report of `rlscore score --report FILE.html`: one self-contained page (inline CSS and
// SVG, no scripts, nothing fetched) with the summary, the verdict counts and histograms of the
// rewards and the lengths.
//
//   ReportData data{.title = "rollouts.jsonl", ...};
//   std::string html = RenderHtmlReport(data);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rlscore/v1/scoring.pb.h"

namespace rlscore::cli {

struct ReportData {
  std::string title;   // what was scored, e.g. the input file's name
  std::string scorer;  // "in-process, 2 scoring threads" or "server ADDR"
  std::string profile_hash;
  v1::ScoreAggregate aggregate;
  std::vector<double> rewards;    // one per scored rollout
  std::vector<uint32_t> lengths;  // tokens, one per scored rollout
  uint64_t skipped_lines = 0;
  double seconds = 0.0;
};

// Equal-width bins over [min, max] of the values; one bin when they are all equal.
struct Histogram {
  double lo = 0.0;
  double hi = 0.0;
  std::vector<uint64_t> counts;
};
Histogram MakeHistogram(const std::vector<double>& values, int bins);

std::string RenderHtmlReport(const ReportData& data);

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view text);

}  // namespace rlscore::cli
