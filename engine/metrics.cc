#include "engine/metrics.h"

namespace rlscore::engine {

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kScoreGroups:
      return "ScoreGroups";
    case Method::kComputeAdvantages:
      return "ComputeAdvantages";
    case Method::kScore:
      return "Score";
    case Method::kMonitorGeneration:
      return "MonitorGeneration";
    case Method::kGetRunHealth:
      return "GetRunHealth";
    case Method::kHttpGetReward:
      return "POST /get_reward";
    case Method::kHttpReward:
      return "POST /reward";
    case Method::kHttpVerify:
      return "POST /verify";
  }
  return "unknown";
}

}  // namespace rlscore::engine
