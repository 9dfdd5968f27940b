// Minimal leveled logging to stderr, one line per call, safe from any thread.
//
//   LogWarning(absl::StrCat("GPU backend unavailable: ", status.ToString(), "; using the CPU"));
//
// Debian's abseil (20220623) predates absl/log; this is the whole logging surface we need: a
// service that runs as a sidecar writes to stderr and lets the container runtime collect it.
#pragma once

#include <string_view>

namespace rlscore {

enum class LogLevel { kInfo, kWarning, kError };

// Writes "2026-11-30T21:00:00.123Z W rlscore: <message>\n" with one write(2), so lines from
// concurrent threads never interleave. Thread-safe.
void Log(LogLevel level, std::string_view message);

inline void LogInfo(std::string_view message) { Log(LogLevel::kInfo, message); }
inline void LogWarning(std::string_view message) { Log(LogLevel::kWarning, message); }
inline void LogError(std::string_view message) { Log(LogLevel::kError, message); }

}  // namespace rlscore
