// The format reward with the accuracy gate of docs/DESIGN.md §1 — the fix for the incident's
// Mechanism 2, where an ungated 0.1 for well-formed tags paid a model for looping without ever
// answering.
//
//   FormatResult f = ScoreFormat(anatomy, /*truncated=*/false, /*accuracy=*/0.0, FormatOptions{});
//   f.reward;   // 0: well-formed but wrong, so the gate withholds it
//   f.gated;    // true
#pragma once

#include "scorers/anatomy.h"

namespace rlscore::scorers {

struct FormatOptions {
  double reward = 0.1;
  // Pay the format reward even when accuracy is 0. Off unless a profile opts in explicitly; the
  // service counts every ungated payment in a metric.
  bool ungated = false;
};

struct FormatResult {
  double reward = 0.0;
  bool well_formed = false;  // anatomy well-formed and not truncated
  // Well-formed, but the reward was withheld because accuracy was 0: the pattern the incident
  // exploited, counted by the service.
  bool gated = false;
  // Paid although accuracy was 0, because the profile opted out of the gate.
  bool paid_ungated = false;
};

// REQUIRES: accuracy in [0, 1]. Pure and thread-safe.
FormatResult ScoreFormat(const Anatomy& anatomy, bool truncated, double accuracy,
                         const FormatOptions& options);

}  // namespace rlscore::scorers
