// The gated format reward (docs/DESIGN.md §1, incident Mechanism 2). See format.h.
#include "scorers/format.h"

namespace rlscore::scorers {

FormatResult ScoreFormat(const Anatomy& anatomy, bool truncated, double accuracy,
                         const FormatOptions& options) {
  FormatResult r;
  r.well_formed = anatomy.WellFormed() && !truncated;
  if (!r.well_formed) return r;
  // `accuracy > 0` is false for NaN too, so a broken accuracy never opens the gate.
  if (accuracy > 0.0) {
    r.reward = options.reward;
  } else if (options.ungated) {
    r.reward = options.reward;
    r.paid_ungated = true;
  } else {
    r.gated = true;
  }
  return r;
}

}  // namespace rlscore::scorers
