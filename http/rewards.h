// The JSON of the remote-reward protocols that trainers speak over HTTP, mapped to and from
// ScoreGroups, so OpenRLHF and slime need no Python shim in front of rlscore. No I/O here:
// http/listener.h serves them.
//
// OpenRLHF (--remote_rm_url http://HOST:PORT/get_reward):
//   {"query": [prompt + response, ...], "prompts": [prompt, ...], "labels": [label, ...]}
//   -> {"rewards": [...], "scores": [...], "extra_logs": {"accuracy": [...], ...}}
// slime (--rm-type remote_rm --rm-url http://HOST:PORT/reward), one sample per request:
//   {"prompt": ..., "response": "...", "label": ...}  ->  1.1     (the reward, a JSON number)
//
//   absl::StatusOr<v1::ScoreGroupsRequest> request = OpenRlhfToRequest(body);
//   ... RunScoreGroups(context, *request, &response) ...
//   std::string reply = OpenRlhfReply(response);
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "rlscore/v1/scoring.pb.h"

namespace rlscore::http {

// OpenRLHF sends each query as the prompt followed by the response, detokenised together. The
// completion scored is the query after its prompt (after the prompt's first occurrence when the
// query does not start with it; the whole query when there is no prompt, or when the prompt is
// not in the query, which is counted in `*prompts_not_found` when given), with trailing
// end-of-sequence markers (<|im_end|>, <|endoftext|>, </s>, <|eot_id|>, ...) removed; a
// completion that ended with one is `finished`. Consecutive samples with the same prompt and
// label form a group. INVALID_ARGUMENT naming the field and index for anything malformed.
absl::StatusOr<v1::ScoreGroupsRequest> OpenRlhfToRequest(std::string_view body,
                                                         uint64_t* prompts_not_found = nullptr);

// The same readings with nlohmann's DOM: every form and every error. The two above read a body
// with simdjson and leave to these only what they cannot read with certainty (any error, a key
// twice, float labels, control bytes), so they answer what these answer, faster.
absl::StatusOr<v1::ScoreGroupsRequest> OpenRlhfReference(std::string_view body,
                                                         uint64_t* prompts_not_found = nullptr);
absl::StatusOr<v1::ScoreGroupsRequest> SlimeReference(std::string_view body);

// How many bodies this thread's OpenRlhfToRequest and SlimeToRequest left to the reference.
uint64_t ReferenceReadsOnThisThread();

// "rewards": each completion's total reward; "scores": its accuracy (OpenRLHF filters dynamic
// sampling on it); "extra_logs": per-completion lists of the components and flags, which OpenRLHF
// logs. In the request's sample order.
std::string OpenRlhfReply(const v1::ScoreGroupsResponse& response);

// One slime sample as a group of one. "label" may be a string, a number, a boolean, a list of
// those (any matches), or missing; "prompt" is not scored (a chat template already separated the
// response).
absl::StatusOr<v1::ScoreGroupsRequest> SlimeToRequest(std::string_view body);

// The total reward as a JSON number: slime uses the reply's JSON value as the reward.
std::string SlimeReply(const v1::ScoreGroupsResponse& response);

// {"error": message}, for any failed request.
std::string ErrorReply(std::string_view message);

// Removes end-of-sequence markers (and whitespace between them) from the end of `text`. True when
// one was removed.
bool StripEndOfSequence(std::string* text);

}  // namespace rlscore::http
