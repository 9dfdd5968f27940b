#include "engine/monitor_session.h"

#include <algorithm>
#include <span>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace rlscore::engine {
namespace {

absl::Status NoStart() {
  return absl::InvalidArgumentError(
      "the first message must be start (profile, max_tokens, think_prefilled)");
}

}  // namespace

absl::StatusOr<std::optional<scorers::StopVerdict>> MonitorSession::Handle(
    const v1::MonitorGenerationRequest& request) {
  switch (request.event_case()) {
    case v1::MonitorGenerationRequest::kStart: {
      if (monitor_.has_value()) {
        return absl::InvalidArgumentError("start: sent twice; one stream watches one generation");
      }
      const v1::GenerationStart& start = request.start();
      RLSCORE_ASSIGN_OR_RETURN(const ServiceProfile* profile,
                               options_.profiles.Find(start.profile()));
      const scorers::Profile& reward = profile->reward;
      scorers::MonitorOptions monitor;
      monitor.repetition = reward.repetition.enabled;
      monitor.ngram = reward.repetition.ngram;
      monitor.max_reasoning_tags = reward.repetition.max_reasoning_tags;
      monitor.max_run_bytes = reward.repetition.max_run_bytes;
      monitor.max_tokens =
          std::min(start.max_tokens() != 0 ? start.max_tokens() : reward.length.max,
                   options_.limits.max_completion_tokens);
      monitor_.emplace(monitor);
      return std::nullopt;
    }
    case v1::MonitorGenerationRequest::kTokens: {
      if (!monitor_.has_value()) return NoStart();
      const auto& ids = request.tokens().token_ids();
      // The stream's budget (at most max_completion_tokens) stops it once reached; one message
      // larger than the whole limit is refused before it is watched.
      if (static_cast<uint64_t>(ids.size()) > options_.limits.max_completion_tokens) {
        return absl::ResourceExhaustedError(
            absl::StrCat("tokens: ", ids.size(), " token ids in one message exceed the limit ",
                         "max_completion_tokens = ", options_.limits.max_completion_tokens));
      }
      return monitor_->PushTokens(std::span<const uint32_t>(ids.data(), ids.size()));
    }
    case v1::MonitorGenerationRequest::kText: {
      if (!monitor_.has_value()) return NoStart();
      const std::string& text = request.text().text();
      if (monitor_->bytes() + text.size() > options_.limits.max_completion_bytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat("text: the generation exceeds the limit max_completion_bytes = ",
                         options_.limits.max_completion_bytes));
      }
      return monitor_->PushText(text);
    }
    case v1::MonitorGenerationRequest::EVENT_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("an empty message: set start, tokens or text");
}

v1::StopReason ToProto(scorers::StopReason reason) {
  switch (reason) {
    case scorers::StopReason::kRepetitionNgram:
      return v1::STOP_REASON_REPETITION_NGRAM;
    case scorers::StopReason::kTokenBudget:
      return v1::STOP_REASON_TOKEN_BUDGET;
    case scorers::StopReason::kRepetitionTagLoop:
      return v1::STOP_REASON_REPETITION_TAG_LOOP;
    case scorers::StopReason::kRepetitionUnbrokenRun:
      return v1::STOP_REASON_REPETITION_UNBROKEN_RUN;
  }
  return v1::STOP_REASON_UNSPECIFIED;
}

}  // namespace rlscore::engine
