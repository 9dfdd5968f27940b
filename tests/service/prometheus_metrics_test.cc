#include "service/prometheus_metrics.h"

#include <prometheus/registry.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rlscore::service {
namespace {

prometheus::MetricType ToPrometheus(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return prometheus::MetricType::Counter;
    case MetricType::kGauge:
      return prometheus::MetricType::Gauge;
    case MetricType::kHistogram:
      return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

std::set<std::string> LabelSet(std::string_view labels) {
  std::set<std::string> out;
  for (absl::string_view l :
       absl::StrSplit(absl::string_view(labels.data(), labels.size()), ',', absl::SkipEmpty())) {
    out.emplace(l);
  }
  return out;
}

// Calls every member once, so that every family has at least one series.
void RecordEverything(PrometheusMetrics& metrics) {
  metrics.CallStarted(engine::Method::kScore);
  metrics.CallFinished(engine::Method::kScore, absl::StatusCode::kOk, absl::Milliseconds(3));
  metrics.CallCancelled(engine::Method::kScore);
  advantage::BatchSummary summary;
  summary.rewards = 16;
  summary.groups = 2;
  metrics.RecordAdvantageBatch(summary);
  metrics.SetBackend("cpu");
  metrics.RecordAdvantageBackend("cpu");
  metrics.RecordGpuFallback("unavailable");
  scorers::CompletionScore score;
  score.ast_parsed = true;
  metrics.RecordCompletion(score);
  metrics.RecordGenerationStop(scorers::StopReason::kTokenBudget);
  metrics.SetMemoryBudget(1 << 20);
  metrics.SetMemoryInUse(1 << 10);
  metrics.RecordAdmissionRefusal(true);
  metrics.RecordPromptNotFound(1);
  engine::RunHealthReport report;
  report.run_id = "run-a";
  engine::HealthSignal signal;
  signal.name = "zero_variance_fraction";
  signal.value = 0.5;
  report.signals.push_back(signal);
  metrics.SetRunHealth(report);
}

TEST(PrometheusMetrics, TheRegistryHoldsExactlyTheTableWithItsTypesAndLabels) {
  PrometheusMetrics metrics;
  RecordEverything(metrics);
  std::map<std::string, prometheus::MetricFamily> registered;
  for (prometheus::MetricFamily& family : metrics.registry()->Collect()) {
    registered.emplace(family.name, std::move(family));
  }
  EXPECT_EQ(registered.size(), MetricFamilies().size());
  for (const MetricFamilySpec& spec : MetricFamilies()) {
    SCOPED_TRACE(spec.name);
    auto it = registered.find(std::string(spec.name));
    ASSERT_NE(it, registered.end());
    EXPECT_EQ(it->second.type, ToPrometheus(spec.type));
    EXPECT_EQ(it->second.help, spec.help);
    ASSERT_FALSE(it->second.metric.empty());
    for (const prometheus::ClientMetric& series : it->second.metric) {
      std::set<std::string> names;
      for (const prometheus::ClientMetric::Label& label : series.label) names.insert(label.name);
      EXPECT_EQ(names, LabelSet(spec.labels));
    }
  }
}

TEST(PrometheusMetrics, AnEvictedRunLeavesNoSeries) {
  PrometheusMetrics metrics;
  RecordEverything(metrics);
  metrics.RemoveRun("run-a");
  for (const prometheus::MetricFamily& family : metrics.registry()->Collect()) {
    if (family.name == "rlscore_run_health_level" || family.name == "rlscore_run_signal") {
      EXPECT_TRUE(family.metric.empty()) << family.name;
    }
  }
}

// The README's "Metrics" section is a table with one row per family: `name` | type | labels.
// It must list exactly the families the server registers, with their types and labels.
TEST(PrometheusMetrics, TheReadmeListsEveryFamilyWithItsTypeAndLabels) {
  std::ifstream in(RLSCORE_README);
  ASSERT_TRUE(in.good()) << RLSCORE_README;
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const size_t begin = readme.find("\n## Metrics\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = readme.find("\n## ", begin + 1);
  std::map<std::string, std::pair<std::string, std::set<std::string>>> documented;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(readme).substr(begin, end - begin), '\n')) {
    if (!absl::ConsumePrefix(&line, "| `rlscore_")) continue;
    const std::vector<std::string> cells = absl::StrSplit(line, '|');
    ASSERT_GE(cells.size(), 3u) << line;
    const std::string name =
        "rlscore_" + std::string(absl::StripSuffix(absl::StripAsciiWhitespace(cells[0]), "`"));
    std::set<std::string> labels;
    for (absl::string_view l : absl::StrSplit(cells[2], ',', absl::SkipWhitespace())) {
      l = absl::StripAsciiWhitespace(l);
      if (l != "" && l != "-") labels.emplace(absl::StripSuffix(absl::StripPrefix(l, "`"), "`"));
    }
    EXPECT_TRUE(documented
                    .emplace(name, std::make_pair(std::string(absl::StripAsciiWhitespace(cells[1])),
                                                  labels))
                    .second)
        << "listed twice: " << name;
  }
  std::set<std::string> registered;
  for (const MetricFamilySpec& spec : MetricFamilies()) {
    SCOPED_TRACE(spec.name);
    registered.emplace(spec.name);
    auto it = documented.find(std::string(spec.name));
    ASSERT_NE(it, documented.end()) << "missing from the README's Metrics table";
    EXPECT_EQ(it->second.first, MetricTypeName(spec.type));
    EXPECT_EQ(it->second.second, LabelSet(spec.labels));
  }
  for (const auto& [name, unused] : documented) {
    EXPECT_TRUE(registered.contains(name)) << name << " is in the README but not registered";
  }
}

}  // namespace
}  // namespace rlscore::service
