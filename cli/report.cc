#include "cli/report.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/enum_names.h"
#include "common/strings.h"

namespace rlscore::cli {
namespace {

constexpr int kWidth = 640;
constexpr int kHeight = 200;
constexpr int kMargin = 30;

std::string Number(double v) { return absl::StrFormat("%.4g", v); }

// An SVG bar chart of `h`, bars labelled with their range and count on hover.
std::string HistogramSvg(const Histogram& h, std::string_view id, std::string_view unit) {
  uint64_t peak = 1;
  for (uint64_t c : h.counts) peak = std::max(peak, c);
  const int bins = static_cast<int>(h.counts.size());
  const double plot_w = kWidth - 2 * kMargin;
  const double plot_h = kHeight - 2 * kMargin;
  const double bar_w = bins == 0 ? 0.0 : plot_w / bins;
  std::string svg = absl::StrFormat(
      "<svg id=\"%s\" class=\"histogram\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
      "role=\"img\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      id, kWidth, kHeight, kWidth, kHeight);
  const double width = bins == 0 ? 0.0 : (h.hi - h.lo) / bins;
  for (int i = 0; i < bins; ++i) {
    const double bar_h = plot_h * static_cast<double>(h.counts[i]) / static_cast<double>(peak);
    const double lo = h.lo + width * i;
    const double hi = i + 1 == bins ? h.hi : h.lo + width * (i + 1);
    absl::StrAppendFormat(
        &svg,
        "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
        "<title>%s to %s %s: %d</title></rect>\n",
        kMargin + bar_w * i + 1, kMargin + plot_h - bar_h, std::max(bar_w - 2, 1.0), bar_h,
        Number(lo), Number(hi), HtmlEscape(unit), h.counts[i]);
  }
  absl::StrAppendFormat(&svg,
                        "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
                        "<text x=\"%d\" y=\"%d\">%s</text>\n"
                        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n"
                        "<text x=\"%d\" y=\"%d\">%d</text>\n</svg>\n",
                        kMargin, kHeight - kMargin, kWidth - kMargin, kHeight - kMargin, kMargin,
                        kHeight - kMargin + 16, Number(h.lo), kWidth - kMargin,
                        kHeight - kMargin + 16, Number(h.hi), 2, kMargin - 8, peak);
  return svg;
}

void Row(std::string* html, std::string_view name, const std::string& value) {
  absl::StrAppend(html, "<tr><th>", HtmlEscape(name), "</th><td>", HtmlEscape(value),
                  "</td></tr>\n");
}

constexpr char kStyle[] = R"(<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222; max-width: 760px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; } th, td { padding: 2px 12px 2px 0; text-align: left; }
td.count { text-align: right; font-variant-numeric: tabular-nums; }
.histogram .bar { fill: #4a78b5; } .histogram .bar:hover { fill: #e0832f; }
.histogram .axis { stroke: #888; } .histogram text { font-size: 11px; fill: #555; }
.meter { display: inline-block; height: 10px; background: #4a78b5; }
</style>
)";

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Histogram MakeHistogram(const std::vector<double>& values, int bins) {
  Histogram h;
  if (values.empty() || bins < 1) return h;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  h.lo = *lo;
  h.hi = *hi;
  if (h.hi == h.lo) bins = 1;
  h.counts.assign(bins, 0);
  const double scale = h.hi == h.lo ? 0.0 : bins / (h.hi - h.lo);
  for (double v : values) {
    const int bin = std::clamp(static_cast<int>((v - h.lo) * scale), 0, bins - 1);
    ++h.counts[bin];
  }
  return h;
}

std::string RenderHtmlReport(const ReportData& data) {
  const v1::ScoreAggregate& agg = data.aggregate;
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>rlscore "
      "report: ",
      HtmlEscape(data.title), "</title>\n", kStyle,
      "</head>\n<body>\n<h1>rlscore report: ", HtmlEscape(data.title), "</h1>\n");

  absl::StrAppend(&html, "<h2>Summary</h2>\n<table id=\"summary\">\n");
  Row(&html, "rollouts scored", absl::StrCat(agg.items()));
  Row(&html, "lines skipped", absl::StrCat(data.skipped_lines));
  Row(&html, "accuracy", absl::StrFormat("%.4f", agg.accuracy()));
  for (const v1::PassAtK& p : agg.pass_at_k()) {
    Row(&html, absl::StrCat("pass@", p.k()),
        absl::StrFormat("%.4f over %d prompts", p.value(), p.prompts()));
  }
  Row(&html, "format rate", absl::StrFormat("%.4f", agg.format_rate()));
  Row(&html, "repetition rate", absl::StrFormat("%.4f", agg.repetition_rate()));
  Row(&html, "truncation rate", absl::StrFormat("%.4f", agg.truncation_rate()));
  const v1::LengthPercentiles& len = agg.length_tokens();
  Row(&html, "length (tokens)",
      absl::StrFormat("p50 %.0f, p90 %.0f, p99 %.0f, max %.0f", len.p50(), len.p90(), len.p99(),
                      len.max()));
  Row(&html, "scored by", data.scorer);
  Row(&html, "profile hash", data.profile_hash);
  Row(&html, "time", absl::StrFormat("%.2f s", data.seconds));
  absl::StrAppend(&html, "</table>\n");

  absl::StrAppend(&html, "<h2>Verdicts</h2>\n<table id=\"verdicts\">\n");
  uint64_t most = 1;
  for (uint64_t c : agg.verdicts()) most = std::max(most, c);
  for (int v = 1; v < agg.verdicts_size(); ++v) {
    const uint64_t count = agg.verdicts(v);
    absl::StrAppendFormat(&html,
                          "<tr><th>%s</th><td class=\"count\">%d</td><td><span class=\"meter\" "
                          "style=\"width:%dpx\"></span></td></tr>\n",
                          HtmlEscape(std::string(VerdictName(static_cast<v1::Verdict>(v)))), count,
                          static_cast<int>(300 * count / most));
  }
  absl::StrAppend(&html, "</table>\n");

  std::vector<double> lengths(data.lengths.begin(), data.lengths.end());
  absl::StrAppend(&html, "<h2>Reward</h2>\n",
                  HistogramSvg(MakeHistogram(data.rewards, 24), "reward-histogram", "reward"),
                  "<h2>Length (tokens)</h2>\n",
                  HistogramSvg(MakeHistogram(lengths, 32), "length-histogram", "tokens"),
                  "</body>\n</html>\n");
  return html;
}

}  // namespace rlscore::cli
