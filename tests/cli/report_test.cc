#include "cli/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace rlscore::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(Report, HistogramBinsEveryValue) {
  Histogram h = MakeHistogram({0.0, 0.1, 0.5, 0.99, 1.0, 1.0}, 4);
  EXPECT_EQ(h.lo, 0.0);
  EXPECT_EQ(h.hi, 1.0);
  EXPECT_THAT(h.counts, ElementsAre(2, 0, 1, 3));  // the maximum falls in the last bin

  Histogram same = MakeHistogram({1.1, 1.1, 1.1}, 24);
  EXPECT_THAT(same.counts, ElementsAre(3));
  EXPECT_TRUE(MakeHistogram({}, 8).counts.empty());
}

TEST(Report, EscapesHtml) {
  EXPECT_EQ(HtmlEscape(R"(<a href="x">'&'</a>)"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

TEST(Report, IsOneSelfContainedPage) {
  ReportData data;
  data.title = "<rollouts>.jsonl";
  data.scorer = "in-process";
  data.profile_hash = "abc123";
  data.aggregate.set_items(3);
  data.aggregate.set_accuracy(2.0 / 3);
  for (uint64_t v : {0, 2, 1, 0, 0, 0}) data.aggregate.add_verdicts(v);
  v1::PassAtK* p = data.aggregate.add_pass_at_k();
  p->set_k(1);
  p->set_value(0.5);
  p->set_prompts(2);
  data.rewards = {1.1, 0.0, 1.1};
  data.lengths = {10, 20, 30};
  data.skipped_lines = 1;
  const std::string html = RenderHtmlReport(data);
  EXPECT_THAT(html, ::testing::StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("&lt;rollouts&gt;.jsonl"));
  EXPECT_THAT(html, Not(HasSubstr("<rollouts>")));
  EXPECT_THAT(html, HasSubstr("<svg id=\"reward-histogram\""));
  EXPECT_THAT(html, HasSubstr("<svg id=\"length-histogram\""));
  EXPECT_THAT(html, HasSubstr("<th>CORRECT</th><td class=\"count\">2</td>"));
  EXPECT_THAT(html, HasSubstr("<th>pass@1</th><td>0.5000 over 2 prompts</td>"));
  // Self-contained: nothing to fetch, no scripts.
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
}

}  // namespace
}  // namespace rlscore::cli
