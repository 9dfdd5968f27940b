// The JSON front doors: OpenRLHF and slime request bodies (http/rewards.h) and a rollout
// line of `rlscore score` (cli/rollouts.h). Any bytes are either refused with an error that names
// what was wrong or mapped to a request the scorer accepts the shape of; and the simdjson readers
// give their nlohmann references' answer for every input, error or request.
#include <cstddef>
#include <cstdint>

#include "cli/rollouts.h"
#include "fuzz/fuzz_input.h"
#include "http/rewards.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlscore;
  fuzz::FuzzInput in(data, size);
  const std::string_view body = in.Rest();

  uint64_t not_found = 0, reference_not_found = 0;
  const absl::StatusOr<v1::ScoreGroupsRequest> openrlhf = http::OpenRlhfToRequest(body, &not_found);
  const absl::StatusOr<v1::ScoreGroupsRequest> openrlhf_reference =
      http::OpenRlhfReference(body, &reference_not_found);
  RLSCORE_FUZZ_CHECK(openrlhf.ok() == openrlhf_reference.ok());
  if (openrlhf.ok()) {
    RLSCORE_FUZZ_CHECK(openrlhf->SerializeAsString() == openrlhf_reference->SerializeAsString());
    RLSCORE_FUZZ_CHECK(not_found == reference_not_found);
  } else {
    RLSCORE_FUZZ_CHECK(openrlhf.status() == openrlhf_reference.status());
  }
  if (openrlhf.ok()) {
    int completions = 0;
    for (const v1::Group& group : openrlhf->groups()) {
      RLSCORE_FUZZ_CHECK(group.completions_size() > 0);
      completions += group.completions_size();
    }
    RLSCORE_FUZZ_CHECK(not_found <= static_cast<uint64_t>(completions));
  } else {
    RLSCORE_FUZZ_CHECK(!openrlhf.status().message().empty());
  }

  const absl::StatusOr<v1::ScoreGroupsRequest> slime = http::SlimeToRequest(body);
  const absl::StatusOr<v1::ScoreGroupsRequest> slime_reference = http::SlimeReference(body);
  RLSCORE_FUZZ_CHECK(slime.ok() == slime_reference.ok());
  if (slime.ok()) {
    RLSCORE_FUZZ_CHECK(slime->SerializeAsString() == slime_reference->SerializeAsString());
  } else {
    RLSCORE_FUZZ_CHECK(slime.status() == slime_reference.status());
  }
  if (slime.ok()) {
    RLSCORE_FUZZ_CHECK(slime->groups_size() == 1 && slime->groups(0).completions_size() == 1);
  } else {
    RLSCORE_FUZZ_CHECK(!slime.status().message().empty());
  }

  const absl::StatusOr<cli::Rollout> rollout = cli::ParseRollout(body, cli::FieldNames{});
  if (!rollout.ok()) RLSCORE_FUZZ_CHECK(!rollout.status().message().empty());
  // One reader for every input, each completion given back as `rlscore score` gives it back:
  // the next input is read into the text of one before it, whose bytes must not show.
  static cli::RolloutReader* const reader = new cli::RolloutReader(cli::FieldNames{});
  absl::StatusOr<cli::Rollout> fast = reader->Read(body);
  RLSCORE_FUZZ_CHECK(fast.ok() == rollout.ok());
  if (fast.ok()) {
    RLSCORE_FUZZ_CHECK(fast->id_json == rollout->id_json);
    RLSCORE_FUZZ_CHECK(fast->item.SerializeAsString() == rollout->item.SerializeAsString());
    reader->Recycle(fast->item.mutable_completion()->mutable_text());
  } else {
    RLSCORE_FUZZ_CHECK(fast.status() == rollout.status());
  }
  return 0;
}
