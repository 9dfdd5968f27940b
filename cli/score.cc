#include "cli/score.h"

#include <unistd.h>

#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cli/batch_scorer.h"
#include "cli/flags.h"
#include "cli/report.h"
#include "cli/rollouts.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "engine/config.h"
#include "engine/score_aggregate.h"

namespace rlscore::cli {
namespace {

struct ScoreFlags {
  std::string output = "-";
  std::string server;
  std::string profile;
  std::vector<uint32_t> pass_at_k;
  uint32_t batch_size = 256;
  bool fail_on_error = false;
  std::string report;
  std::string progress = "auto";
  uint64_t timeout_secs = 300;
  FieldNames fields;
  engine::ServerOptions options = engine::DefaultServerOptions();
  bool help = false;
};

absl::Status ParseKs(std::string_view text, std::vector<uint32_t>* ks) {
  ks->clear();
  for (absl::string_view part : absl::StrSplit(Sv(text), ',', absl::SkipWhitespace())) {
    uint32_t k = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &k) || k == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", part, "\" is not a k of at least 1 (e.g. 1,4,16)"));
    }
    ks->push_back(k);
  }
  return absl::OkStatus();
}

FlagSet MakeScoreFlags(ScoreFlags* f) {
  FlagSet flags("rlscore score [INPUT.jsonl|-]");
  auto str = [](std::string* out) {
    return [out](std::string_view v) {
      *out = std::string(v);
      return absl::OkStatus();
    };
  };
  flags.Add(
      {"output", "FILE", "where the JSONL results go; - is stdout (default -)", str(&f->output)});
  flags.Add({"server", "ADDR",
             "score on the rlscore server at ADDR (host:port or unix:/path) instead of in this "
             "process",
             str(&f->server)});
  flags.Add({"config", "FILE",
             "server configuration (profiles, limits) for in-process scoring, as for rlscore serve",
             [](std::string_view) { return absl::OkStatus(); }});  // applied first, by the command
  flags.Add({"profile", "NAME", "the reward profile (default: default)", str(&f->profile)});
  flags.Add({"pass-at-k", "K,K,...", "the k of pass@k in the summary (default 1)",
             [f](std::string_view v) { return ParseKs(v, &f->pass_at_k); }});
  flags.Add({"field", "FIELD=KEY",
             "read FIELD from the input key KEY, e.g. completion=response (repeatable)",
             [f](std::string_view v) { return RenameField(v, &f->fields); }});
  flags.Add({"on-error", "MODE",
             "a line that cannot be read or is refused: skip (report it and go on) or fail "
             "(stop) (default skip)",
             [f](std::string_view v) {
               if (v != "skip" && v != "fail") {
                 return absl::InvalidArgumentError(
                     absl::StrCat("expected skip or fail, got \"", Sv(v), "\""));
               }
               f->fail_on_error = v == "fail";
               return absl::OkStatus();
             }});
  flags.Add({"report", "FILE.html", "also write a self-contained HTML report", str(&f->report)});
  flags.Add({"progress", "WHEN",
             "a progress line on stderr: auto (when stderr is a terminal), always or never",
             [f](std::string_view v) {
               if (v != "auto" && v != "always" && v != "never") {
                 return absl::InvalidArgumentError(
                     absl::StrCat("expected auto, always or never, got \"", Sv(v), "\""));
               }
               f->progress = std::string(v);
               return absl::OkStatus();
             }});
  flags.Add({"batch-size", "N", "rollouts per request (default 256)",
             [f](std::string_view v) { return ParseUint32(v, &f->batch_size); }});
  flags.Add({"timeout-secs", "N", "deadline of each request to a server (default 300)",
             [f](std::string_view v) { return ParseUint64(v, &f->timeout_secs); }});
  flags.Add({"scoring-threads", "N", "in-process scoring threads; 0 = one per core (default 0)",
             [f](std::string_view v) { return ParseUint32(v, &f->options.scoring_threads); }});
  flags.Add(
      {"help", "", "show this help", [f](std::string_view v) { return ParseBool(v, &f->help); }});
  return flags;
}

// A one-line progress display on stderr, redrawn at most ten times a second.
class Progress {
 public:
  Progress(bool enabled, uint64_t total_bytes) : enabled_(enabled), total_bytes_(total_bytes) {}

  void Update(uint64_t bytes, uint64_t lines, bool force = false) {
    if (!enabled_) return;
    const absl::Time now = absl::Now();
    if (!force && now - last_ < absl::Milliseconds(100)) return;
    last_ = now;
    const double secs = absl::ToDoubleSeconds(now - start_);
    const double rate = secs > 0 ? static_cast<double>(lines) / secs : 0.0;
    std::string line;
    if (total_bytes_ > 0) {
      const double done =
          std::min(1.0, static_cast<double>(bytes) / static_cast<double>(total_bytes_));
      const int filled = static_cast<int>(done * 30);
      line = absl::StrFormat("\r[%s%s] %3.0f%%  %d lines  %.0f/s ", std::string(filled, '#'),
                             std::string(30 - filled, '.'), done * 100, lines, rate);
    } else {
      line = absl::StrFormat("\r%d lines  %.0f/s ", lines, rate);
    }
    std::cerr << line << std::flush;
  }

  void Finish(uint64_t bytes, uint64_t lines) {
    if (!enabled_) return;
    Update(bytes, lines, /*force=*/true);
    std::cerr << "\n";
  }

 private:
  const bool enabled_;
  const uint64_t total_bytes_;
  const absl::Time start_ = absl::Now();
  absl::Time last_ = absl::InfinitePast();
};

// An input line read for a batch: a rollout (the next item of the batch's request) or a line that
// could not be read (`error`).
struct Pending {
  uint64_t line;
  std::string id_json;
  std::string error;
};

// Consecutive input lines, parsed.
struct Batch {
  std::vector<Pending> lines;
  v1::ScoreRequest request;
  uint64_t bytes_read = 0;  // of the input so far, for the progress display
  uint64_t lines_read = 0;
};

// Hands batches from the reader thread to the scoring thread; holds at most `capacity`, so the
// reader stays at most that far ahead. Thread-safe.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity) {}

  // False (and `batch` dropped) once Close() was called.
  bool Push(Batch batch) {
    MutexLock lock(&mu_);
    while (!closed_ && batches_.size() >= capacity_) changed_.Wait(&mu_);
    if (closed_) return false;
    batches_.push_back(std::move(batch));
    changed_.SignalAll();
    return true;
  }

  // The next batch; nullopt when the queue is closed and empty.
  std::optional<Batch> Pop() {
    MutexLock lock(&mu_);
    while (!closed_ && batches_.empty()) changed_.Wait(&mu_);
    if (batches_.empty()) return std::nullopt;
    Batch batch = std::move(batches_.front());
    batches_.pop_front();
    changed_.SignalAll();
    return batch;
  }

  void Close() {
    MutexLock lock(&mu_);
    closed_ = true;
    changed_.SignalAll();
  }

 private:
  const size_t capacity_;
  Mutex mu_;
  CondVar changed_;  // a batch was pushed or popped, or the queue closed
  std::deque<Batch> batches_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// Reads and parses rollouts on one thread while the previous batch is scored on another, and
// writes the results in input order.
class ScoreRun {
 public:
  ScoreRun(const ScoreFlags& flags, BatchScorer* scorer, std::ostream* out)
      : flags_(flags), scorer_(scorer), out_(out) {}

  // Scores every line of `in`. False when scoring had to stop; the reason went to stderr.
  bool Run(std::istream& in, Progress* progress) {
    // The reader shares the queue, and copies what it needs of the flags, so that a run that
    // stops early can leave it blocked on an input that never ends (a pipe) and return.
    auto queue = std::make_shared<BatchQueue>(2);
    std::thread reader([queue, &in, fields = flags_.fields, batch_size = flags_.batch_size,
                        fail_on_error = flags_.fail_on_error] {
      Read(in, fields, batch_size, fail_on_error, queue.get());
    });
    bool ok = true;
    uint64_t bytes = 0, lines = 0;
    while (std::optional<Batch> batch = queue->Pop()) {
      bytes = batch->bytes_read;
      lines = batch->lines_read;
      ok = Flush(*batch);
      progress->Update(bytes, lines);
      if (!ok) break;
    }
    progress->Finish(bytes, lines);
    queue->Close();  // the reader stops at its next batch (it already has when all went well)
    // A file ends, so the reader is joined; a pipe may never end, or not before its writer has
    // seen us exit, so a reader of stdin is left to end with the process.
    if (&in == &std::cin && !ok) {
      reader.detach();
    } else {
      reader.join();
    }
    return ok;
  }

  const engine::ScoreAggregator& aggregator() const { return aggregator_; }
  uint64_t skipped() const { return skipped_; }
  const std::string& profile_hash() const { return profile_hash_; }
  std::vector<double>& rewards() { return rewards_; }
  std::vector<uint32_t>& lengths() { return lengths_; }

 private:
  // The reader thread: every line of `in` into batches of up to `batch_size` rollouts. Closes
  // the queue at the end of the input.
  static void Read(std::istream& in, const FieldNames& fields, uint32_t batch_size,
                   bool fail_on_error, BatchQueue* queue) {
    Batch batch;
    std::string line;
    uint64_t number = 0, bytes = 0;
    while (std::getline(in, line)) {
      ++number;
      bytes += line.size() + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (absl::StripAsciiWhitespace(line).empty()) continue;  // blank lines are not rollouts
      absl::StatusOr<Rollout> rollout = ParseRollout(line, fields);
      if (rollout.ok()) {
        batch.lines.push_back({number, std::move(rollout->id_json), ""});
        *batch.request.add_items() = std::move(rollout->item);
      } else {
        batch.lines.push_back({number, "", std::string(rollout.status().message())});
      }
      // A bad line ends its batch under --on-error=fail, so the lines before it are written.
      if (batch.request.items_size() >= static_cast<int>(batch_size) ||
          (!rollout.ok() && fail_on_error)) {
        batch.bytes_read = bytes;
        batch.lines_read = number;
        if (!queue->Push(std::exchange(batch, Batch{}))) return;
      }
    }
    batch.bytes_read = bytes;
    batch.lines_read = number;
    if (!batch.lines.empty()) queue->Push(std::move(batch));
    queue->Close();
  }

  // Reports a line that will not be scored on stderr and writes its error record. False when the
  // flags say to stop.
  bool Skip(uint64_t line, std::string_view message) {
    std::cerr << "rlscore score: line " << line << ": " << message
              << (flags_.fail_on_error ? "" : " (skipped)") << "\n";
    if (flags_.fail_on_error) return false;
    ++skipped_;
    *out_ << FormatError(line, message) << "\n";
    return true;
  }

  void Emit(const Pending& pending, const v1::ScoreItem& item, const v1::CompletionResult& result,
            double reward) {
    *out_ << FormatResult(pending.line, pending.id_json, item, result, reward) << "\n";
    aggregator_.Add(item.prompt_id(), result);
    rewards_.push_back(reward);
    lengths_.push_back(result.num_tokens());
  }

  // An error that names one item of the request ("items[3]: ..."): skipping that item lets the
  // others be scored. Other refusals (an unknown profile, a request-level limit) stop the run.
  static bool IsItemError(const absl::Status& status) {
    return (status.code() == absl::StatusCode::kInvalidArgument ||
            status.code() == absl::StatusCode::kResourceExhausted) &&
           absl::StartsWith(status.message(), "items[");
  }

  // Scores a batch and writes it in input order. A batch refused for one item's sake
  // (INVALID_ARGUMENT, RESOURCE_EXHAUSTED) is scored item by item so only that item is skipped;
  // any other error stops the run. False when the run must stop.
  bool Flush(Batch& batch) {
    v1::ScoreResponse response;
    if (batch.request.items_size() > 0) {
      batch.request.set_profile(flags_.profile);
      const absl::Status status = scorer_->Score(batch.request, &response);
      if (IsItemError(status)) {
        std::cerr << "rlscore score: lines " << batch.lines.front().line << "-"
                  << batch.lines.back().line << ": the batch was refused (" << status.message()
                  << "); scoring its rollouts one at a time\n";
        return EmitOneByOne(batch);
      }
      if (!status.ok()) {
        std::cerr << "rlscore score: lines " << batch.lines.front().line << "-"
                  << batch.lines.back().line << ": " << status.message() << "\n";
        return false;
      }
      if (response.results_size() != batch.request.items_size() ||
          response.rewards_size() != batch.request.items_size()) {
        std::cerr << "rlscore score: lines " << batch.lines.front().line << "-"
                  << batch.lines.back().line << ": " << batch.request.items_size()
                  << " rollouts sent but " << response.results_size() << " results received\n";
        return false;
      }
      profile_hash_ = response.profile_hash();
    }
    int item = 0;
    for (const Pending& p : batch.lines) {
      if (!p.error.empty()) {
        if (!Skip(p.line, p.error)) return false;
        continue;
      }
      Emit(p, batch.request.items(item), response.results(item), response.rewards(item));
      ++item;
    }
    return true;
  }

  // Scores the batch's items one at a time and writes what each gets.
  bool EmitOneByOne(const Batch& batch) {
    int item = 0;
    for (const Pending& p : batch.lines) {
      if (!p.error.empty()) {
        if (!Skip(p.line, p.error)) return false;
        continue;
      }
      v1::ScoreRequest one;
      one.set_profile(flags_.profile);
      *one.add_items() = batch.request.items(item++);
      v1::ScoreResponse response;
      const absl::Status status = scorer_->Score(one, &response);
      if (IsItemError(status) || (status.ok() && response.results_size() != 1)) {
        // The request had one item: "items[0]: ..." or "items[0].completion.text: ..." says
        // nothing the line number does not.
        absl::string_view message = status.ok() ? "no result received" : status.message();
        if (!absl::ConsumePrefix(&message, "items[0]: "))
          absl::ConsumePrefix(&message, "items[0].");
        if (!Skip(p.line, std::string_view(message.data(), message.size()))) return false;
      } else if (!status.ok()) {
        std::cerr << "rlscore score: line " << p.line << ": " << status.message() << "\n";
        return false;
      } else {
        profile_hash_ = response.profile_hash();
        Emit(p, one.items(0), response.results(0), response.rewards(0));
      }
    }
    return true;
  }

  const ScoreFlags& flags_;
  BatchScorer* const scorer_;
  std::ostream* const out_;
  engine::ScoreAggregator aggregator_;
  uint64_t skipped_ = 0;
  std::string profile_hash_;
  std::vector<double> rewards_;
  std::vector<uint32_t> lengths_;
};

std::string VerdictCounts(const v1::ScoreAggregate& agg) {
  std::string out;
  for (int v = 1; v < agg.verdicts_size(); ++v) {
    absl::StrAppend(&out, out.empty() ? "" : "  ",
                    absl::StripPrefix(v1::Verdict_Name(static_cast<v1::Verdict>(v)), "VERDICT_"),
                    " ", agg.verdicts(v));
  }
  return out;
}

void PrintSummary(const v1::ScoreAggregate& agg, uint64_t skipped, double seconds,
                  const std::string& scorer, const std::string& profile_hash) {
  std::string s = absl::StrFormat(
      "rlscore score: %d rollouts scored, %d lines skipped, %.2f s (%.0f rollouts/s), %s, "
      "profile %s\n",
      agg.items(), skipped, seconds, seconds > 0 ? static_cast<double>(agg.items()) / seconds : 0.0,
      scorer, profile_hash.empty() ? "-" : profile_hash);
  absl::StrAppendFormat(&s, "  %-18s %.4f\n", "accuracy", agg.accuracy());
  for (const v1::PassAtK& p : agg.pass_at_k()) {
    absl::StrAppendFormat(&s, "  %-18s %.4f  (%d prompts)\n", absl::StrCat("pass@", p.k()),
                          p.value(), p.prompts());
  }
  absl::StrAppendFormat(&s, "  %-18s %.4f\n", "format rate", agg.format_rate());
  absl::StrAppendFormat(&s, "  %-18s %.4f\n", "repetition rate", agg.repetition_rate());
  absl::StrAppendFormat(&s, "  %-18s %.4f\n", "truncation rate", agg.truncation_rate());
  const v1::LengthPercentiles& len = agg.length_tokens();
  absl::StrAppendFormat(&s, "  %-18s p50 %.0f  p90 %.0f  p99 %.0f  max %.0f\n", "length tokens",
                        len.p50(), len.p90(), len.p99(), len.max());
  absl::StrAppendFormat(&s, "  %-18s %s\n", "verdicts", VerdictCounts(agg));
  std::cerr << s;
}

uint64_t FileSize(std::istream& in) {
  const std::streampos start = in.tellg();
  if (start < 0) return 0;
  in.seekg(0, std::ios::end);
  const std::streampos end = in.tellg();
  in.seekg(start);
  return end > start ? static_cast<uint64_t>(end - start) : 0;
}

}  // namespace

int RunScoreCommand(std::span<const std::string> args) {
  ScoreFlags f;
  FlagSet flags = MakeScoreFlags(&f);
  absl::StatusOr<ParsedFlags> parsed = flags.Parse(args);
  absl::Status status = parsed.status();
  if (status.ok() && parsed->Has("server") && parsed->Has("config")) {
    status = absl::InvalidArgumentError(
        "--config applies to in-process scoring; with --server the server's configuration does");
  }
  if (status.ok()) {
    if (std::optional<std::string> path = parsed->Get("config")) {
      status = engine::ApplyConfigFile(*path, &f.options);
    }
  }
  const std::string_view config_flag[] = {"config"};
  if (status.ok()) status = parsed->ApplyAll(config_flag);
  if (status.ok() && parsed->positional().size() > 1) {
    status = absl::InvalidArgumentError("give at most one input file");
  }
  if (status.ok() && (f.timeout_secs == 0 || f.timeout_secs > 7 * 24 * 3600)) {
    status = absl::InvalidArgumentError("--timeout-secs must be between 1 and 604800 (a week)");
  }
  if (status.ok() &&
      (f.batch_size == 0 || f.batch_size > f.options.limits.max_completions_per_request)) {
    status = absl::InvalidArgumentError(absl::StrCat("--batch-size must be between 1 and ",
                                                     f.options.limits.max_completions_per_request));
  }
  if (!status.ok()) {
    std::cerr << "rlscore score: " << status.message() << "\n";
    return 2;
  }
  if (f.help) {
    std::cout << flags.Usage();
    return 0;
  }

  const std::string input = parsed->positional().empty() ? "-" : parsed->positional().front();
  std::ifstream file;
  if (input != "-") {
    file.open(input, std::ios::binary);
    if (!file) {
      std::cerr << "rlscore score: cannot read " << input << "\n";
      return 1;
    }
  }
  std::istream& in = input == "-" ? std::cin : file;
  std::ofstream out_file;
  if (f.output != "-") {
    out_file.open(f.output, std::ios::binary | std::ios::trunc);
    if (!out_file) {
      std::cerr << "rlscore score: cannot write " << f.output << "\n";
      return 1;
    }
  }
  std::ostream& out = f.output == "-" ? std::cout : out_file;
  std::ios::sync_with_stdio(false);

  absl::StatusOr<std::unique_ptr<BatchScorer>> scorer =
      f.server.empty()
          ? NewLocalScorer(f.options)
          : NewRemoteScorer(f.server, absl::Seconds(static_cast<int64_t>(f.timeout_secs)));
  if (!scorer.ok()) {
    std::cerr << "rlscore score: " << scorer.status().message() << "\n";
    return 1;
  }

  const absl::Time start = absl::Now();
  const bool show_progress =
      f.progress == "always" || (f.progress == "auto" && isatty(STDERR_FILENO) != 0);
  Progress progress(show_progress, input == "-" ? 0 : FileSize(in));
  ScoreRun run(f, scorer->get(), &out);
  const bool ok = run.Run(in, &progress);
  out.flush();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (!out) {
    std::cerr << "rlscore score: writing the results failed\n";
    return 1;
  }
  const v1::ScoreAggregate aggregate =
      run.aggregator().Finish(std::span<const uint32_t>(f.pass_at_k));
  PrintSummary(aggregate, run.skipped(), seconds, (*scorer)->Describe(), run.profile_hash());
  if (!f.report.empty()) {
    ReportData data{.title = input == "-" ? std::string("stdin") : input,
                    .scorer = (*scorer)->Describe(),
                    .profile_hash = run.profile_hash(),
                    .aggregate = aggregate,
                    .rewards = std::move(run.rewards()),
                    .lengths = std::move(run.lengths()),
                    .skipped_lines = run.skipped(),
                    .seconds = seconds};
    std::ofstream report(f.report, std::ios::binary | std::ios::trunc);
    report << RenderHtmlReport(data);
    if (!report) {
      std::cerr << "rlscore score: cannot write the report to " << f.report << "\n";
      return 1;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace rlscore::cli
