#include "cli/score.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
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
#include "cli/cpu_placement.h"
#include "cli/enum_names.h"
#include "cli/flags.h"
#include "cli/input_pieces.h"
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
             "process; several replicas as ADDR,ADDR,... or dns:///NAME:PORT, calls balanced "
             "over them and retried on another when one fails",
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
  flags.Add({"batch-size", "N",
             "input lines per request to a server (default 256; a line that cannot be read is "
             "reported, not sent)",
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

// A piece of the input parsed, scored and written out, ready to be passed on in input order.
struct DoneBatch {
  uint64_t sequence = 0;
  std::string output;    // the result and error lines
  std::string messages;  // for stderr: skipped lines, a batch scored one rollout at a time
  bool stop = false;     // the run stops after this batch (the reason is in `messages`)
  uint64_t skipped = 0;
  // What the summary needs: each scored item's prompt id and what the aggregate counts of its
  // result, in output order. (Not the items nor the results: they are freed on the thread that
  // allocated them, without crossing arenas, and the calling thread, which shares a core with a
  // scoring thread, only counts.)
  std::vector<std::string> prompt_ids;
  std::vector<engine::CountedResult> counted;
  std::vector<double> rewards;
  std::string profile_hash;
  uint64_t bytes_read = 0;
  uint64_t lines_read = 0;
};

// The three hand-overs below wake only the threads that can go on, and only once the lock is
// let go: a thread woken while the waker still holds it would wake only to sleep again on the
// lock, and every waking of a thread that has slept is a chance for the kernel to put it on the
// CPU of another scoring thread.

// Hands pieces of the input to the scoring threads; holds at most `capacity`, so the reader
// stays at most that far ahead. Thread-safe.
class PieceQueue {
 public:
  explicit PieceQueue(size_t capacity) : capacity_(capacity) {}

  // False (and `batch` dropped) once Close() was called.
  bool Push(InputPiece batch) {
    {
      MutexLock lock(&mu_);
      while (!closed_ && batches_.size() >= capacity_) room_.Wait(&mu_);
      if (closed_) return false;
      batches_.push_back(std::move(batch));
    }
    ready_.Signal();  // one piece, for one scoring thread
    return true;
  }

  // The next batch; nullopt when the queue is closed and empty.
  std::optional<InputPiece> Pop() {
    std::optional<InputPiece> batch;
    {
      MutexLock lock(&mu_);
      while (!closed_ && batches_.empty()) ready_.Wait(&mu_);
      if (batches_.empty()) return std::nullopt;
      batch = std::move(batches_.front());
      batches_.pop_front();
    }
    room_.Signal();  // the reader
    return batch;
  }

  // Ends the input: Pop() drains what is queued, then answers nullopt.
  void Close() {
    {
      MutexLock lock(&mu_);
      closed_ = true;
    }
    ready_.SignalAll();
    room_.SignalAll();
  }

  // Stops the run: what is queued is dropped.
  void Abandon() {
    {
      MutexLock lock(&mu_);
      closed_ = true;
      batches_.clear();
    }
    ready_.SignalAll();
    room_.SignalAll();
  }

 private:
  const size_t capacity_;
  Mutex mu_;
  CondVar ready_;  // a batch was pushed, or the queue closed
  CondVar room_;   // a batch was popped, or the queue closed
  std::deque<InputPiece> batches_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// Puts the scoring threads' batches back in input order. A thread whose batch is more than
// `window` ahead of the next one to write waits, which bounds what is held. Thread-safe.
class InOrder {
 public:
  explicit InOrder(uint64_t window) : window_(window) {}

  // False (and `batch` dropped) once Close() was called.
  bool Put(DoneBatch batch) {
    bool awaited = false;
    {
      MutexLock lock(&mu_);
      while (!closed_ && batch.sequence >= next_ + window_) taken_.Wait(&mu_);
      if (closed_) return false;
      awaited = batch.sequence == next_;
      done_.emplace(batch.sequence, std::move(batch));
    }
    if (awaited) ready_.Signal();  // the writer waits for no other batch
    return true;
  }

  // The batch that comes next; nullopt once every one of `total` batches was taken (total is
  // known when the reader ends: see Finish) or the queue is closed.
  std::optional<DoneBatch> Next() {
    std::optional<DoneBatch> batch;
    {
      MutexLock lock(&mu_);
      while (!closed_ && next_ != total_ && !done_.contains(next_)) ready_.Wait(&mu_);
      const auto it = done_.find(next_);
      if (closed_ || it == done_.end()) return std::nullopt;
      batch = std::move(it->second);
      done_.erase(it);
      ++next_;
    }
    taken_.SignalAll();  // each scoring thread whose batch it brought within the window
    return batch;
  }

  // The reader made `total` batches in all.
  void Finish(uint64_t total) {
    {
      MutexLock lock(&mu_);
      total_ = total;
    }
    ready_.Signal();
  }

  void Close() {
    {
      MutexLock lock(&mu_);
      closed_ = true;
    }
    ready_.SignalAll();
    taken_.SignalAll();
  }

 private:
  const uint64_t window_;
  Mutex mu_;
  CondVar ready_;  // the next batch was put, the total became known, or the queue closed
  CondVar taken_;  // a batch was taken, or the queue closed
  std::map<uint64_t, DoneBatch> done_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t total_ ABSL_GUARDED_BY(mu_) = std::numeric_limits<uint64_t>::max();
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// Gives each piece the number of its first line once the pieces before it were counted. The
// scoring threads take pieces in order and count them at once, so a wait is short. Thread-safe.
class LineNumbering {
 public:
  // The number of piece `sequence`'s first line, given that it has `lines` lines; nullopt once
  // Close() was called.
  std::optional<uint64_t> First(uint64_t sequence, uint64_t lines) {
    uint64_t first = 0;
    {
      MutexLock lock(&mu_);
      while (!closed_ && next_ != sequence) counted_.Wait(&mu_);
      if (closed_) return std::nullopt;
      first = lines_ + 1;
      lines_ += lines;
      ++next_;
    }
    counted_.SignalAll();  // the thread with the next piece, whichever it is
    return first;
  }

  void Close() {
    {
      MutexLock lock(&mu_);
      closed_ = true;
    }
    counted_.SignalAll();
  }

 private:
  Mutex mu_;
  CondVar counted_;  // a piece was counted, or the numbering closed
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t lines_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// What the reader and the scoring threads share; owned jointly, so that a run that stops early
// can leave the reader blocked on an input that never ends (a pipe) and return.
struct Pipeline {
  explicit Pipeline(size_t threads) : pieces(2 * threads), in_order(2 * threads) {}
  PieceQueue pieces;
  LineNumbering numbering;
  InOrder in_order;
  absl::Status read_error;  // set by the reader before in_order.Finish()
};

// One reader thread cuts the input into pieces of lines (cli/input_pieces.h); each scoring thread
// takes a piece, splits it into lines, parses, scores and writes them in batches; the calling
// thread passes the pieces' output on in input order. No thread waits for another's batch, and
// the work that touches every byte runs on the scoring threads, so they scale. In process, the
// scoring threads run one to a CPU (cli/cpu_placement.h).
class ScoreRun {
 public:
  ScoreRun(const ScoreFlags& flags, BatchScorer* scorer, std::ostream* out)
      : flags_(flags), scorer_(scorer), out_(out) {}

  // In process, guided pieces (PieceSize) of kPieceBytes to kMaxPieceBytes, a fourth of each
  // thread's share of what is left, scored in calls of at most kLocalBatch: the last pieces
  // leave the other threads idle for a millisecond at most, and a large input is handed over in
  // a quarter of the pieces that fixed 256 KiB ones took, each of which woke threads (2 scoring
  // threads on 2 cores, 255 MB: 5,100 context switches with those, 1,350 with these). Pieces of
  // at most 1 MiB rather than 4 cost a large input nothing measurable and take 4 % off the wall
  // time of a 13 MB one (docs/PERFORMANCE.md, "Evaluation CLI").
  static constexpr size_t kPieceBytes = 256 << 10;
  static constexpr size_t kMaxPieceBytes = 1 << 20;
  static constexpr uint32_t kLocalBatch = 32;
  // ... and, past a call's first line, of at most kLocalBatchBytes. A call's rollouts are all
  // parsed before any is scored: kept to a few lines, their text is still in the core's cache
  // when it is scored, and the thread's heap does not grow to hold 32 long completions, whose
  // every new page is a page fault. In process, a call costs nothing measurable beside its
  // scoring (the 13 MB corpus: 9 % off the wall time; 100 copies of it: the same time).
  static constexpr size_t kLocalBatchBytes = 64 << 10;
  // What a scoring thread maps into its heap before its first piece (PopulateHeap), at most the
  // piece's size: on the corpus of R1-style completions a thread's heap grew by about 380 KiB in
  // its first piece of 1 MiB (95 page faults; the piece took 4.2-8.4 ms, and 2.3-2.7 when scored
  // a second time) and to about 500 KiB over the run.
  static constexpr size_t kPopulatedHeapBytes = 512 << 10;

  // The end of the batch of lines that starts at lines[begin]: at most `max_lines` lines, and
  // past the first, at most `max_bytes` bytes of them.
  static size_t BatchEnd(const std::vector<PieceLine>& lines, size_t begin, size_t max_lines,
                         size_t max_bytes) {
    const size_t last = std::min(lines.size(), begin + max_lines);
    size_t end = begin + 1;
    for (size_t bytes = lines[begin].text.size(); end < last; ++end) {
      bytes += lines[end].text.size();
      if (bytes > max_bytes) break;
    }
    return end;
  }

  // Scores every line of the file `fd`. False when scoring had to stop; the reason went to
  // stderr.
  bool Run(int fd, Progress* progress) {
    const unsigned threads = std::max(1u, scorer_->Concurrency());
    auto pipeline = std::make_shared<Pipeline>(threads);
    // For a server, a piece is one call of --batch-size lines.
    PieceSize piece_size = scorer_->InProcess() ? PieceSize{.bytes = kPieceBytes,
                                                            .lines = 0,
                                                            .max_bytes = kMaxPieceBytes,
                                                            .parts = 4 * size_t{threads}}
                                                : PieceSize{.bytes = 0, .lines = flags_.batch_size};
    piece_size.max_line_bytes = flags_.options.limits.max_message_bytes;
    const uint32_t batch_size =
        scorer_->InProcess() ? std::min(flags_.batch_size, kLocalBatch) : flags_.batch_size;
    const size_t batch_bytes = scorer_->InProcess() ? kLocalBatchBytes : SIZE_MAX;
    std::thread reader([pipeline, fd, piece_size] {
      uint64_t pieces = 0;
      pipeline->read_error = ReadPieces(fd, piece_size, [&](InputPiece piece) {
        if (!pipeline->pieces.Push(std::move(piece))) return false;
        ++pieces;
        return true;
      });
      pipeline->pieces.Close();
      pipeline->in_order.Finish(pieces);
    });
    std::vector<std::thread> scoring;
    CpuPlacement placement(scorer_->InProcess() ? threads : 0);
    for (unsigned t = 0; t < threads; ++t) {
      scoring.emplace_back([this, pipeline, batch_size, batch_bytes, &placement] {
        placement.Start();
        RolloutReader rollouts(flags_.fields, {.bytes = flags_.options.limits.memory_budget_bytes,
                                               .name = "memory_budget_bytes"});
        PieceBuffer buffer;
        std::vector<PieceLine> lines;
        bool heap_populated = false;
        while (std::optional<InputPiece> piece = pipeline->pieces.Pop()) {
          if (!heap_populated && !piece->text.empty()) {
            PopulateHeap(std::min(kPopulatedHeapBytes, piece->text.size()));
            heap_populated = true;
          }
          lines.clear();
          const uint64_t count = piece->overlong_line != 0
                                     ? 1
                                     : SplitLines(LoadPiece(*piece, &buffer), &lines,
                                                  flags_.options.limits.max_message_bytes);
          const std::optional<uint64_t> first = pipeline->numbering.First(piece->sequence, count);
          if (!first.has_value()) return;
          DoneBatch done;
          done.sequence = piece->sequence;
          done.bytes_read = piece->bytes_end;
          done.lines_read = *first - 1 + count;
          if (piece->overlong_line != 0) Skip(*first, LineTooLong(piece->overlong_line), &done);
          for (size_t b = 0, end; b < lines.size() && !done.stop; b = end) {
            end = BatchEnd(lines, b, batch_size, batch_bytes);
            ScoreBatch(std::span<const PieceLine>(lines.data() + b, end - b), *first - 1, &rollouts,
                       &done);
          }
          if (!pipeline->in_order.Put(std::move(done))) return;
        }
      });
      placement.Place(scoring.back(), t);
    }
    placement.Done();
    bool ok = true;
    uint64_t bytes = 0, lines = 0;
    while (std::optional<DoneBatch> batch = pipeline->in_order.Next()) {
      bytes = batch->bytes_read;
      lines = batch->lines_read;
      ok = Pass(*std::move(batch));
      progress->Update(bytes, lines);
      if (!ok) break;
    }
    progress->Finish(bytes, lines);
    pipeline->pieces.Abandon();  // the reader stops at its next piece (it has when all went well)
    pipeline->numbering.Close();
    pipeline->in_order.Close();
    for (std::thread& t : scoring) t.join();
    // A file ends, so the reader is joined; a pipe may never end, or not before its writer has
    // seen us exit, so a reader of stdin is left to end with the process.
    if (fd == STDIN_FILENO && !ok) {
      reader.detach();
      return false;
    }
    reader.join();
    if (!pipeline->read_error.ok()) {
      std::cerr << "rlscore score: " << pipeline->read_error.message() << "\n";
      return false;
    }
    return ok;
  }

  const engine::ScoreAggregator& aggregator() const { return aggregator_; }
  uint64_t skipped() const { return skipped_; }
  const std::string& profile_hash() const { return profile_hash_; }
  std::vector<double>& rewards() { return rewards_; }
  std::vector<uint32_t>& lengths() { return lengths_; }

 private:
  // On a scoring thread: parses, scores and writes one batch of a piece's lines, whose numbers
  // start after `before`. Sets done->stop when the run stops.
  void ScoreBatch(std::span<const PieceLine> batch, uint64_t before, RolloutReader* rollouts,
                  DoneBatch* out) const {
    DoneBatch& done = *out;
    // Each line: its number, and its error, or its id and item (the next of the request).
    struct Line {
      uint64_t number;
      std::string id_json;
      std::string error;
    };
    std::vector<Line> lines;
    lines.reserve(batch.size());
    v1::ScoreRequest request;
    request.set_profile(flags_.profile);
    request.mutable_items()->Reserve(static_cast<int>(batch.size()));
    for (const PieceLine& l : batch) {
      absl::StatusOr<Rollout> rollout = l.text.size() > flags_.options.limits.max_message_bytes
                                            ? absl::InvalidArgumentError(LineTooLong(l.text.size()))
                                            : rollouts->ReadPadded(l.text);
      if (rollout.ok()) {
        lines.push_back({before + l.number, std::move(rollout->id_json), ""});
        *request.add_items() = std::move(rollout->item);
      } else {
        lines.push_back({before + l.number, "", std::string(rollout.status().message())});
        if (flags_.fail_on_error) break;  // the lines before it are still scored and written
      }
    }
    if (lines.empty()) return;
    const std::string range =
        absl::StrCat("lines ", lines.front().number, "-", lines.back().number);

    // Each item's result: from the batch's response, or, when the batch was refused for one
    // item's sake (INVALID_ARGUMENT, RESOURCE_EXHAUSTED naming it), from a request of its own,
    // so that only that item is skipped. Any other refusal stops the run.
    v1::ScoreResponse response;
    bool one_by_one = false;
    if (request.items_size() > 0) {
      const absl::Status status = scorer_->Score(request, &response);
      if (IsItemError(status)) {
        absl::StrAppend(&done.messages, "rlscore score: ", range, ": the batch was refused (",
                        Printable(Std(status.message())),
                        "); scoring its rollouts one at a time\n");
        one_by_one = true;
      } else if (!status.ok()) {
        absl::StrAppend(&done.messages, "rlscore score: ", range, ": ",
                        Printable(Std(status.message())), "\n");
        done.stop = true;
        return;
      } else if (response.results_size() != request.items_size() ||
                 response.rewards_size() != request.items_size()) {
        absl::StrAppend(&done.messages, "rlscore score: ", range, ": ", request.items_size(),
                        " rollouts sent but ", response.results_size(), " results received\n");
        done.stop = true;
        return;
      } else {
        done.profile_hash = response.profile_hash();
      }
    }
    int item = 0;
    for (const Line& line : lines) {
      if (!line.error.empty()) {
        if (!Skip(line.number, line.error, &done)) return;
        continue;
      }
      v1::ScoreItem& scored = *request.mutable_items(item);
      if (!one_by_one) {
        Emit(line.number, line.id_json, &scored, std::move(*response.mutable_results(item)),
             response.rewards(item), &done);
        rollouts->Recycle(scored.mutable_completion()->mutable_text());
      } else if (!ScoreAlone(line.number, line.id_json, std::move(scored), &done)) {
        return;
      }
      ++item;
    }
    return;
  }

  // Scores one item in a request of its own and writes what it gets. False when the run stops.
  bool ScoreAlone(uint64_t number, const std::string& id_json, v1::ScoreItem item,
                  DoneBatch* done) const {
    v1::ScoreRequest one;
    one.set_profile(flags_.profile);
    *one.add_items() = std::move(item);
    v1::ScoreResponse response;
    const absl::Status status = scorer_->Score(one, &response);
    if (IsItemError(status) || (status.ok() && response.results_size() != 1)) {
      // The request had one item: "items[0]: ..." or "items[0].completion.text: ..." says
      // nothing the line number does not.
      absl::string_view message = status.ok() ? "no result received" : status.message();
      if (!absl::ConsumePrefix(&message, "items[0]: ")) absl::ConsumePrefix(&message, "items[0].");
      return Skip(number, std::string_view(message.data(), message.size()), done);
    }
    if (!status.ok()) {
      absl::StrAppend(&done->messages, "rlscore score: line ", number, ": ",
                      Printable(Std(status.message())), "\n");
      done->stop = true;
      return false;
    }
    done->profile_hash = response.profile_hash();
    Emit(number, id_json, one.mutable_items(0), std::move(*response.mutable_results(0)),
         response.rewards(0), done);
    return true;
  }

  // Writes a scored item's result line and keeps what the summary needs; takes the item's prompt
  // id.
  void Emit(uint64_t number, std::string_view id_json, v1::ScoreItem* item,
            v1::CompletionResult result, double reward, DoneBatch* done) const {
    AppendResult(&done->output, number, id_json, *item, result, reward);
    done->prompt_ids.push_back(std::move(*item->mutable_prompt_id()));
    done->counted.push_back(engine::CountedOf(result));
    done->rewards.push_back(reward);
  }

  // A line that will not be scored: reported, and under --on-error=skip written as an error
  // record. False when the flags say to stop.
  // A line over the limit is refused unread: memory stays bounded whatever the input. The limit
  // is the server's on a request, which a line stands for.
  std::string LineTooLong(uint64_t bytes) const {
    return absl::StrCat("the line is ", bytes, " bytes; at most ",
                        flags_.options.limits.max_message_bytes, " (max_message_bytes)");
  }

  bool Skip(uint64_t number, std::string_view message, DoneBatch* done) const {
    absl::StrAppend(&done->messages, "rlscore score: line ", number, ": ", Printable(message),
                    flags_.fail_on_error ? "" : " (skipped)", "\n");
    if (flags_.fail_on_error) {
      done->stop = true;
      return false;
    }
    ++done->skipped;
    AppendError(&done->output, number, message);
    return true;
  }

  // An error that names one item of the request ("items[3]: ..."): skipping that item lets the
  // others be scored. Other refusals (an unknown profile, a request-level limit) stop the run.
  static bool IsItemError(const absl::Status& status) {
    return (status.code() == absl::StatusCode::kInvalidArgument ||
            status.code() == absl::StatusCode::kResourceExhausted) &&
           absl::StartsWith(status.message(), "items[");
  }

  // On the calling thread, in input order: writes a batch and counts it. False when the run
  // must stop.
  bool Pass(DoneBatch batch) {
    *out_ << batch.output;
    std::cerr << batch.messages;
    skipped_ += batch.skipped;
    if (!batch.profile_hash.empty()) profile_hash_ = std::move(batch.profile_hash);
    for (size_t i = 0; i < batch.counted.size(); ++i) {
      aggregator_.Add(batch.prompt_ids[i], batch.counted[i]);
      rewards_.push_back(batch.rewards[i]);
      lengths_.push_back(batch.counted[i].num_tokens);
    }
    return !batch.stop;
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
    absl::StrAppend(&out, out.empty() ? "" : "  ", Sv(VerdictName(static_cast<v1::Verdict>(v))),
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

// The size of a regular file, for the progress bar; 0 for a pipe.
uint64_t FileSize(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
}

// Closes a file descriptor of ours at the end of the command.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ > STDIN_FILENO) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  const int fd_;
};

}  // namespace

int RunScoreCommand(std::span<const std::string> args, const RemoteScorerFactory& remote) {
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

  // Before any file is opened: the launcher's remote scorer hands the whole command over to
  // another binary.
  absl::StatusOr<std::unique_ptr<BatchScorer>> scorer =
      f.server.empty() ? NewLocalScorer(f.options)
                       : remote(f.server, absl::Seconds(static_cast<int64_t>(f.timeout_secs)));
  if (!scorer.ok()) {
    std::cerr << "rlscore score: " << scorer.status().message() << "\n";
    return 1;
  }

  const std::string input = parsed->positional().empty() ? "-" : parsed->positional().front();
  const int fd = input == "-" ? STDIN_FILENO : open(input.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::cerr << "rlscore score: cannot read " << input << "\n";
    return 1;
  }
  const FdCloser close_input(fd);
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
  // The scoring threads allocate and free each completion's buffers. glibc would hand freed
  // memory back to the system and fault it in again for the next one, and page faults take the
  // address space's lock: on 2 threads that cost 10 % of the time. Keep it for reuse instead;
  // what is held stays bounded by the batches in flight.
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);

  const absl::Time start = absl::Now();
  const bool show_progress =
      f.progress == "always" || (f.progress == "auto" && isatty(STDERR_FILENO) != 0);
  Progress progress(show_progress, FileSize(fd));
  ScoreRun run(f, scorer->get(), &out);
  const bool ok = run.Run(fd, &progress);
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
