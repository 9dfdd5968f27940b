// Two macros for propagating absl::Status, because Debian's abseil (20220623) predates
// ABSL_RETURN_IF_ERROR / ASSIGN_OR_RETURN.
//
//   absl::Status Load(const std::string& path) {
//     RLSCORE_RETURN_IF_ERROR(CheckReadable(path));
//     RLSCORE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     return Parse(text);
//   }
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RLSCORE_STATUS_CONCAT_INNER_(a, b) a##b
#define RLSCORE_STATUS_CONCAT_(a, b) RLSCORE_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) once and returns it from the enclosing function if not ok.
#define RLSCORE_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::absl::Status rlscore_status_ = (expr);           \
    if (!rlscore_status_.ok()) return rlscore_status_; \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>) once; returns its status if not ok, else moves its
// value into `lhs`, which may be a declaration.
#define RLSCORE_ASSIGN_OR_RETURN(lhs, rexpr) \
  RLSCORE_ASSIGN_OR_RETURN_IMPL_(RLSCORE_STATUS_CONCAT_(rlscore_statusor_, __LINE__), lhs, rexpr)

#define RLSCORE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()
