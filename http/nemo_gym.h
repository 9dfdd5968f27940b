// NeMo Gym's resources-server protocol (NVIDIA-NeMo/Gym), so that a NeMo Gym agent can use
// rlscore as the resources server that verifies its rollouts. No I/O here: http/listener.h
// serves it.
//
//   POST /verify   the run request (the dataset row: "responses_create_params" and, for math,
//                  "question" and "expected_answer"; for instruction following,
//                  "instruction_id_list" and "kwargs") with the policy model's "response" (an
//                  OpenAI Responses API object) -> the request echoed, with "reward" added
//   POST /seed_session -> {}        GET / -> {"status": "ok"}
//
//   absl::StatusOr<NemoGymVerify> verify = NemoGymToRequest(body);
//   ... RunScoreGroups(context, verify->request, &response) ...
//   std::string reply = NemoGymReply(*verify, response);
//
// The completion scored: the text of the response's assistant message items ("output_text"
// parts, joined without a separator, as NeMo Gym's math server joins them), after the text of
// its reasoning items inside <think>...</think>; a message text that carries its own </think> is
// scored as it is. The reward is the profile's total reward (accuracy, the gated format reward,
// repetition and length): a profile with only accuracy gives NeMo Gym's 0/1.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "rlscore/v1/scoring.pb.h"

namespace rlscore::http {

struct NemoGymVerify {
  v1::ScoreGroupsRequest request;  // one group of one completion
  nlohmann::json body;             // the request, echoed in the reply
};

// INVALID_ARGUMENT naming the field ("response.output[2].content[0].text: expected a string")
// for a body that is not a verify request: no "response" object or no "output" list, an item
// without its "type", a message part without text, no expected_answer and no instruction list.
absl::StatusOr<NemoGymVerify> NemoGymToRequest(std::string_view body);

// The request echoed with "reward" (the total reward), "library_reward" (the accuracy),
// "extracted_answer" (null when none), "expected_answer", "judge_evaluations": null, and
// "rlscore": the verdict, the components and, for instruction following, each instruction's
// strict and loose verdict.
std::string NemoGymReply(const NemoGymVerify& verify, const v1::ScoreGroupsResponse& response);

// FastAPI's shape for a request it cannot take, which NeMo Gym's client logs: {"detail": ...}.
std::string NemoGymErrorReply(std::string_view message);

}  // namespace rlscore::http
