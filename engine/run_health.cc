#include "engine/run_health.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/strings.h"

namespace rlscore::engine {
namespace {

// Sums over a stretch of batches.
struct Totals {
  uint64_t batches = 0;
  uint64_t groups = 0;
  uint64_t zero_variance_groups = 0;
  uint64_t completions = 0;
  double length_sum = 0.0;
  double max_length_sum = 0.0;  // of each batch's max, for a baseline of typical maxima
  uint32_t max_length = 0;
  uint64_t truncated = 0;
  uint64_t repetition_fired = 0;
  uint64_t format_without_accuracy = 0;

  explicit Totals(std::span<const BatchTelemetry> stretch) {
    for (const BatchTelemetry& b : stretch) {
      ++this->batches;
      groups += b.groups;
      zero_variance_groups += b.zero_variance_groups;
      completions += b.completions;
      length_sum += b.mean_length_tokens * static_cast<double>(b.completions);
      max_length_sum += b.max_length_tokens;
      max_length = std::max(max_length, b.max_length_tokens);
      truncated += b.truncated;
      repetition_fired += b.repetition_fired;
      format_without_accuracy += b.format_without_accuracy;
    }
  }

  static double Ratio(double a, double b) { return b == 0.0 ? 0.0 : a / b; }
  double ZeroVarianceFraction() const {
    return Ratio(static_cast<double>(zero_variance_groups), static_cast<double>(groups));
  }
  double MeanLength() const { return Ratio(length_sum, static_cast<double>(completions)); }
  double MeanOfMaxLength() const { return Ratio(max_length_sum, static_cast<double>(batches)); }
  double Rate(uint64_t count) const {
    return Ratio(static_cast<double>(count), static_cast<double>(completions));
  }
};

HealthLevel Judge(double value, double warn, double critical) {
  if (value >= critical) return HealthLevel::kCritical;
  if (value >= warn) return HealthLevel::kWarn;
  return HealthLevel::kOk;
}

std::string Number(double v) { return absl::StrFormat("%.4g", v); }

// A judged signal; `what` explains what a high value means.
HealthSignal Judged(std::string name, double value, double baseline, double warn, double critical,
                    std::string_view where, std::string_view what) {
  HealthSignal s{
      std::move(name), value, baseline, warn, critical, Judge(value, warn, critical), ""};
  if (s.level != HealthLevel::kOk) {
    const double limit = s.level == HealthLevel::kCritical ? critical : warn;
    s.reason = absl::StrCat(s.name, " ", Number(value), " ", Sv(where),
                            " >= ", s.level == HealthLevel::kCritical ? "critical " : "warn ",
                            Number(limit), ": ", Sv(what));
  }
  return s;
}

HealthSignal Reported(std::string name, double value, double baseline = 0.0) {
  return HealthSignal{std::move(name), value, baseline, 0.0, 0.0, HealthLevel::kOk, ""};
}

}  // namespace

std::string_view HealthLevelName(HealthLevel level) {
  switch (level) {
    case HealthLevel::kOk:
      return "ok";
    case HealthLevel::kWarn:
      return "warn";
    case HealthLevel::kCritical:
      return "critical";
  }
  return "unknown";
}

std::string ValidateHealthThresholds(const HealthThresholds& t) {
  if (t.recent_batches == 0) return "run_health.recent_batches must be at least 1";
  if (t.min_baseline_batches == 0) return "run_health.min_baseline_batches must be at least 1";
  if (t.baseline_batches < t.min_baseline_batches) {
    return "run_health.baseline_batches must be at least min_baseline_batches";
  }
  struct Pair {
    const char* name;
    double warn, critical;
  };
  const Pair pairs[] = {
      {"zero_variance_recent", t.zero_variance_recent_warn, t.zero_variance_recent_critical},
      {"mean_length_growth", t.mean_length_growth_warn, t.mean_length_growth_critical},
      {"max_length_growth", t.max_length_growth_warn, t.max_length_growth_critical},
      {"truncation", t.truncation_warn, t.truncation_critical},
      {"repetition", t.repetition_warn, t.repetition_critical},
      {"format_without_accuracy_rise", t.format_without_accuracy_rise_warn,
       t.format_without_accuracy_rise_critical},
  };
  for (const Pair& p : pairs) {
    if (!std::isfinite(p.warn) || !std::isfinite(p.critical) || p.warn > p.critical) {
      return absl::StrCat("run_health.", p.name, "_warn (", p.warn, ") and ", p.name, "_critical (",
                          p.critical, ") must be finite with warn <= critical");
    }
  }
  if (!std::isfinite(t.zero_variance_batch_warn)) {
    return "run_health.zero_variance_batch_warn must be finite";
  }
  return "";
}

RunHealthReport EvaluateRunHealth(std::string_view run_id, std::span<const BatchTelemetry> window,
                                  const HealthThresholds& t) {
  RunHealthReport report;
  report.run_id = std::string(run_id);
  report.batches = window.size();
  if (window.empty()) {
    report.reasons.push_back("no batches recorded for this run yet");
    return report;
  }
  report.last_step = window.back().step;

  const size_t recent_count = std::min<size_t>(t.recent_batches, window.size());
  const std::span<const BatchTelemetry> recent = window.last(recent_count);
  const std::span<const BatchTelemetry> before = window.first(window.size() - recent_count);
  const std::span<const BatchTelemetry> baseline_span =
      before.last(std::min<size_t>(t.baseline_batches, before.size()));
  const Totals last(window.last(1));
  const Totals now(recent);
  const Totals baseline(baseline_span);
  const bool has_baseline = baseline.batches >= t.min_baseline_batches;
  const std::string recent_where = absl::StrCat("over the last ", recent_count, " batches");

  std::vector<HealthSignal>& s = report.signals;
  s.push_back(Judged("zero_variance_fraction_last_batch", last.ZeroVarianceFraction(), 0.0,
                     t.zero_variance_batch_warn, HUGE_VAL,
                     absl::StrCat("at step ", report.last_step),
                     "most groups of the batch carry no learning signal"));
  s.push_back(Judged("zero_variance_fraction", now.ZeroVarianceFraction(), 0.0,
                     t.zero_variance_recent_warn, t.zero_variance_recent_critical, recent_where,
                     "the run is learning from few groups; the rest have identical rewards"));
  if (has_baseline) {
    s.push_back(Judged("mean_length_growth", Totals::Ratio(now.MeanLength(), baseline.MeanLength()),
                       baseline.MeanLength(), t.mean_length_growth_warn,
                       t.mean_length_growth_critical, recent_where,
                       "completions are getting much longer than this run's baseline"));
    s.push_back(
        Judged("max_length_growth",
               Totals::Ratio(static_cast<double>(now.max_length), baseline.MeanOfMaxLength()),
               baseline.MeanOfMaxLength(), t.max_length_growth_warn, t.max_length_growth_critical,
               recent_where, "the longest completions are running away"));
    const double fwa_baseline = baseline.Rate(baseline.format_without_accuracy);
    s.push_back(Judged(
        "format_without_accuracy_rise", now.Rate(now.format_without_accuracy) - fwa_baseline,
        fwa_baseline, t.format_without_accuracy_rise_warn, t.format_without_accuracy_rise_critical,
        recent_where, "more well-formed but wrong completions than this run's baseline"));
  } else {
    report.reasons.push_back(absl::StrCat("length and format baselines need ",
                                          t.min_baseline_batches, " earlier batches; ",
                                          baseline.batches, " so far"));
  }
  s.push_back(Judged("truncation_rate", now.Rate(now.truncated), 0.0, t.truncation_warn,
                     t.truncation_critical, recent_where,
                     "completions are hitting the token budget"));
  s.push_back(Judged("repetition_rate", now.Rate(now.repetition_fired), 0.0, t.repetition_warn,
                     t.repetition_critical, recent_where,
                     "completions are looping (a repetition rule fired)"));
  s.push_back(
      Reported("mean_length_tokens", now.MeanLength(), has_baseline ? baseline.MeanLength() : 0.0));
  s.push_back(Reported("max_length_tokens", static_cast<double>(now.max_length)));
  s.push_back(Reported("reward_mean", window.back().reward_mean));
  s.push_back(Reported("reward_std", window.back().reward_std));

  // Reasons, most severe first; the level is the worst signal's.
  std::vector<std::string> warn_reasons;
  std::vector<std::string> critical_reasons;
  for (const HealthSignal& signal : s) {
    report.level = std::max(report.level, signal.level);
    if (signal.level == HealthLevel::kCritical) critical_reasons.push_back(signal.reason);
    if (signal.level == HealthLevel::kWarn) warn_reasons.push_back(signal.reason);
  }
  std::vector<std::string> reasons = std::move(critical_reasons);
  reasons.insert(reasons.end(), warn_reasons.begin(), warn_reasons.end());
  reasons.insert(reasons.end(), report.reasons.begin(), report.reasons.end());
  report.reasons = std::move(reasons);
  return report;
}

}  // namespace rlscore::engine
