// MonitorGeneration messages for tests of the session (tests/engine) and of the stream
// (tests/service), and the incident-style loop both stream.
#pragma once

#include <cstdint>
#include <string>

#include "rlscore/v1/monitor.pb.h"

namespace rlscore::testing {

inline v1::MonitorGenerationRequest Start(uint32_t max_tokens = 0,
                                          const std::string& profile = "") {
  v1::MonitorGenerationRequest r;
  r.mutable_start()->set_max_tokens(max_tokens);
  r.mutable_start()->set_profile(profile);
  return r;
}

inline v1::MonitorGenerationRequest Text(const std::string& text) {
  v1::MonitorGenerationRequest r;
  r.mutable_text()->set_text(text);
  return r;
}

// Token ids first, first + 1, ..., first + count - 1.
inline v1::MonitorGenerationRequest Tokens(uint32_t first, uint32_t count) {
  v1::MonitorGenerationRequest r;
  for (uint32_t i = 0; i < count; ++i) r.mutable_tokens()->add_token_ids(first + i);
  return r;
}

// A reflection loop like the incident's, after an ordinary start.
inline std::string LoopingCompletion() {
  std::string text = "<think>We need the smallest prime factor of 2^20 - 1, so factor it first. ";
  for (int k = 0; k < 8; ++k) {
    text += "Wait, let me double check the previous step, but wait, consider another case. ";
  }
  return text + "</think> \\boxed{3}";
}

}  // namespace rlscore::testing
