// Bridges std::string_view to Debian's abseil, whose absl::string_view is its own class
// (ABSL_USES_STD_STRING_VIEW is off in 20220623), so absl::StrCat cannot take a std::string_view.
//
//   absl::StrCat("cause ", Sv(advantage::CauseName(cause)))
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace rlscore {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace rlscore
