// What handling a request will hold in memory at its peak, estimated from its wire bytes before
// it is parsed, for memory admission (admission.h).
//
//   std::vector<std::string_view> wire = ...;        // the request's bytes, in pieces
//   uint64_t bytes = PeakBytes(Method::kComputeAdvantages, wire);
//
// The estimate reads only the request's outline (field tags and lengths, no values), in time
// proportional to the number of fields and completions. It is an upper bound for the handler's own
// allocations, with the wire bytes released as the request is parsed (scoring_service.cc) and the
// ComputeAdvantages answer written straight into its wire form (advantage_mapping.h):
//
//   ComputeAdvantages  n rewards, G groups, O outcomes, C GDPO components, A weights and
//                      accuracies: parsed 8n + 8G + 8O (+ O mapped) + 8C + 8A, GDPO's scratch
//                      and derived rewards 16C, GroupStats 24G, answer 8·max(n, C) + 23G
//   ScoreGroups/Score  the wire bytes twice (the parsed strings, then the answer's copies of what
//                      echoes them) + kBytesPerCompletion per completion
//
// The scoring threads' own working memory is not a request's: each thread holds about 16 times
// the completion it is scoring (word lists, n-gram tables, the AST screens; 14 MB measured for a
// 900 KB completion), so it is bounded by scoring_threads x 16 x max_completion_bytes.
// Bytes that do not parse are charged twice their size: the parse fails before more is held.
//
// Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/metrics.h"

namespace rlscore::engine {

// A completion's parsed message, its scores, its result message and that result's wire bytes,
// without the text (counted as wire bytes): 0.6-0.75 KiB measured beyond twice the request's bytes
// on 200,000 short looping completions with repetition reports (ScoreGroups and Score); room is
// left for longer details and extracted answers (up to 1 KiB each).
inline constexpr uint64_t kBytesPerCompletion = 2048;

// `wire` is the request's serialised bytes in order, in any number of pieces. Methods other than
// ScoreGroups, Score and ComputeAdvantages are charged their wire size.
uint64_t PeakBytes(Method method, std::span<const std::string_view> wire);

// An HTTP JSON body (OpenRLHF, slime: http/listener.h): the body, its JSON tree, the ScoreGroups
// request and response made from it and the JSON answer come to 3.3 times the body for long
// completions, and to about 1 KiB a completion beyond that for short ones; a completion is at
// least one JSON string. Charged 3 bytes a body byte, the tree as JsonTreeBytes bounds it (a
// body of nested empty objects holds 20 to 60 times its size: a 90 MB one peaked at 5.1 GB), and
// kBytesPerCompletion a string, counted outside strings (CountJsonShape).
uint64_t JsonPeakBytes(std::string_view body);

}  // namespace rlscore::engine
