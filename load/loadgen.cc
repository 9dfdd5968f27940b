// rlscore-loadgen: a bounded, closed-loop load generator for a running server
// (docs/RELIABILITY.md).
//
//   rlscore-loadgen --address=127.0.0.1:50051 --metrics=127.0.0.1:9464 --seconds=600
//       --warmup=60 --server-pid=$PID --max-rss-growth=0.10
//
// Lanes of each kind run on their own thread and channel, each sending its next call as soon as
// the last one is answered, for --seconds: ScoreGroups with realistic batches (8 groups of 8
// mixed completions: correct, wrong, looping, repeated derivations, cloned code, malformed, long),
// ComputeAdvantages with large batches (65,536 rewards), MonitorGeneration streams (looping ones
// that must be stopped, clean ones that must run to their end) and grpc.health.v1 checks. One call
// in 16 is malformed on purpose and must be refused with its planned code.
//
// Every call is accounted for: sent = answered as planned (OK with a well-shaped response, or the
// planned error) + answered otherwise (unexpected). The server's own counters
// (rlscore_requests_total{method,code}) must have moved by exactly what the client saw. The
// server's RSS is sampled from /proc; growth is measured from the end of the warm-up. Exit status
// 0 only when nothing is unaccounted or unexpected, the counters agree and RSS growth (the mean
// of the last fifth of the samples after warm-up over the first fifth) stayed within
// --max-rss-growth (when given).
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cli/flags.h"
#include "common/mutex.h"
#include "rlscore/v1/scoring_service.grpc.pb.h"
#include "service/grpc_status.h"
#include "service/health_check.h"

namespace rlscore::load {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string address = "127.0.0.1:50051";
  std::string metrics;  // host:port of the server's Prometheus endpoint; empty skips the check
  uint32_t seconds = 30;
  uint32_t warmup = 5;
  uint32_t score_groups = 4;
  uint32_t advantages = 2;
  uint32_t monitor = 2;
  uint32_t health = 1;
  uint64_t server_pid = 0;  // 0: no RSS sampling
  uint32_t rss_interval = 5;
  double max_rss_growth = 0.0;  // 0: report only
  std::string json;             // also write the report here
};

// ------------------------------------------------------------------------------------------------
// The traffic.

constexpr char kLoop[] = "Wait, let me double check the sum once more... ";

std::string Completion(int kind, int salt) {
  const std::string n = std::to_string(salt % 97);
  switch (kind % 8) {
    case 0:
      return absl::StrCat("<think>We need 6 times 7. Six sevens are 42; check: 42 / 6 = 7.", n,
                          "</think> The answer is \\boxed{42}.");
    case 1:
      return absl::StrCat("<think>Adding ", n, " and 7 gives the total.</think> So \\boxed{41}.");
    case 2: {
      std::string text = "<think>";
      for (int i = 0; i < 60; ++i) text += kLoop;
      return text;
    }
    case 3: {
      std::string text = "<think>";
      for (int i = 0; i < 5; ++i) {
        absl::StrAppend(&text, "\n\nWe expand $(x + ", i, ")^2 = x^2 + ", 2 * i, "x + ", i * i,
                        "$ and collect the terms of the polynomial on the left hand side.\n");
      }
      return text + "</think> \\boxed{42}";
    }
    case 4: {
      std::string text = "<think>Let me write code.\n";
      for (int i = 0; i < 4; ++i) {
        absl::StrAppend(&text, "```python\ndef f", i, "(a, b):\n    total = 0\n",
                        "    for i in range(a):\n        if i % 2 == 0:\n",
                        "            total += i * b\n        else:\n            total -= b\n",
                        "    return total\n```\n");
      }
      return text + "</think> \\boxed{42}";
    }
    case 5:
      return absl::StrCat("<think>The product is 42 ", n, " and the answer is \\boxed{42}");
    case 6: {
      std::string text = "<think>";
      for (int i = 0; i < 40; ++i) {
        absl::StrAppend(&text, "Step ", i, ": consider the ", i * 3 + salt % 11,
                        "th term and compare it with the previous bound. ");
      }
      return text + "</think> Therefore the answer is $\\frac{84}{2}$.";
    }
    default:
      return "<think>42 it is.</think> \\boxed{\\frac{84}{2}}";
  }
}

// Reasoning with no repeated phrase: pseudo-random five-letter words, so no n-gram recurs.
std::string CleanText(uint64_t salt) {
  std::string text = "<think>";
  for (uint64_t i = 0; i < 600; ++i) {
    uint64_t h = (i + salt * 1000003) * 0x9e3779b97f4a7c15ULL;
    for (int k = 0; k < 5; ++k, h >>= 5) text += static_cast<char>('a' + h % 26);
    text += ' ';
  }
  return text + "</think> \\boxed{42}";
}

v1::ScoreGroupsRequest ScoreGroupsRequest(uint32_t lane, uint64_t step, bool bad) {
  v1::ScoreGroupsRequest request;
  request.set_run_id(absl::StrCat("load-", lane));
  request.set_step(static_cast<int64_t>(step));
  if (bad) request.set_profile("no-such-profile");  // NOT_FOUND
  for (int g = 0; g < 8; ++g) {
    v1::Group* group = request.add_groups();
    group->set_prompt_id(absl::StrCat("p", g));
    group->add_references("42");
    for (int c = 0; c < 8; ++c) {
      v1::Completion* completion = group->add_completions();
      completion->set_text(Completion(c + g, static_cast<int>(step) + c));
      completion->set_finished(c % 8 != 2);
      completion->set_num_tokens(c % 8 == 2 ? 16384u : 900u);
    }
  }
  return request;
}

v1::ComputeAdvantagesRequest AdvantagesRequest(uint64_t step, bool bad) {
  v1::ComputeAdvantagesRequest request;
  constexpr int kRewards = 65536;
  request.mutable_rewards()->Reserve(kRewards);
  for (int i = 0; i < kRewards; ++i) {
    const uint64_t h = (static_cast<uint64_t>(i) + step) * 0x9e3779b97f4a7c15ULL;
    request.add_rewards(static_cast<double>(h >> 62) * 0.5 - 0.25);
  }
  for (int g = 0; g < kRewards / 16; ++g) request.add_group_sizes(16);
  if (bad)
    request.set_rewards(static_cast<int>(step % kRewards), std::nan(""));  // INVALID_ARGUMENT
  return request;
}

// ------------------------------------------------------------------------------------------------
// Accounting.

struct Tally {
  uint64_t sent = 0;
  uint64_t as_planned = 0;  // OK with a well-shaped answer, or the planned error
  uint64_t planned_errors = 0;
  uint64_t unexpected = 0;                // any other answer
  std::map<std::string, uint64_t> codes;  // by gRPC code name, as the server counts them
  std::vector<double> latencies_ms;       // after the warm-up
  std::vector<std::string> first_unexpected;
};

std::string CodeName(absl::StatusCode code) { return absl::StatusCodeToString(code); }

class Lane {
 public:
  Lane(std::string method, Clock::time_point measure_from)
      : method_(std::move(method)), measure_from_(measure_from) {}

  void Sent() {
    MutexLock lock(&mu_);
    ++tally_.sent;
  }
  // `planned` is the code the call should get; `shape_error` is non-empty when an OK answer was
  // malformed.
  void Answered(absl::StatusCode planned, const absl::Status& status,
                const std::string& shape_error, Clock::time_point started) {
    const Clock::time_point now = Clock::now();
    MutexLock lock(&mu_);
    ++tally_.codes[CodeName(status.code())];
    if (status.code() == planned && shape_error.empty()) {
      ++tally_.as_planned;
      if (planned != absl::StatusCode::kOk) ++tally_.planned_errors;
    } else {
      ++tally_.unexpected;
      if (tally_.first_unexpected.size() < 5) {
        tally_.first_unexpected.push_back(absl::StrCat(method_, ": planned ", CodeName(planned),
                                                       ", got ", CodeName(status.code()), " ",
                                                       status.message(), shape_error));
      }
    }
    if (started >= measure_from_) {
      tally_.latencies_ms.push_back(
          std::chrono::duration<double, std::milli>(now - started).count());
    }
  }
  const std::string& method() const { return method_; }
  Tally tally() const {
    MutexLock lock(&mu_);
    return tally_;
  }

 private:
  const std::string method_;
  const Clock::time_point measure_from_;
  mutable Mutex mu_;
  Tally tally_ ABSL_GUARDED_BY(mu_);
};

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection per lane, like separate clients
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  // A lane whose connection attempt fails (once seen at the end of a full test run: "failed to
  // connect ... No such file or directory", while the server served the other lanes) waits for
  // the channel to reconnect instead of failing every call at once: what is measured is how the
  // server answers, and a refusal the server sends is still a status, never waited on.
  context->set_wait_for_ready(true);
}

void RunScoreGroups(const Options& options, uint32_t lane, Clock::time_point end, Lane* out) {
  auto stub = v1::ScoringService::NewStub(NewChannel(options.address));
  for (uint64_t i = 0; Clock::now() < end; ++i) {
    const bool bad = i % 16 == 15;
    const v1::ScoreGroupsRequest request = ScoreGroupsRequest(lane, i, bad);
    v1::ScoreGroupsResponse response;
    grpc::ClientContext context;
    SetDeadline(&context);
    const Clock::time_point started = Clock::now();
    out->Sent();
    const absl::Status status =
        service::FromGrpcStatus(stub->ScoreGroups(&context, request, &response));
    std::string shape;
    if (status.ok() && (response.rewards_size() != 64 || response.advantages_size() != 64)) {
      shape = absl::StrCat(" (", response.rewards_size(), " rewards for 64 completions)");
    }
    out->Answered(bad ? absl::StatusCode::kNotFound : absl::StatusCode::kOk, status, shape,
                  started);
  }
}

void RunAdvantages(const Options& options, uint32_t /*lane*/, Clock::time_point end, Lane* out) {
  auto stub = v1::ScoringService::NewStub(NewChannel(options.address));
  for (uint64_t i = 0; Clock::now() < end; ++i) {
    const bool bad = i % 16 == 15;
    const v1::ComputeAdvantagesRequest request = AdvantagesRequest(i, bad);
    v1::ComputeAdvantagesResponse response;
    grpc::ClientContext context;
    SetDeadline(&context);
    const Clock::time_point started = Clock::now();
    out->Sent();
    const absl::Status status =
        service::FromGrpcStatus(stub->ComputeAdvantages(&context, request, &response));
    std::string shape;
    if (status.ok() && response.advantages_size() != request.rewards_size()) {
      shape = absl::StrCat(" (", response.advantages_size(), " advantages)");
    }
    out->Answered(bad ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kOk, status, shape,
                  started);
  }
}

// A looping generation must be stopped (one STOP, then OK); a clean one runs to its end (no
// response, OK); a stream that sends text before its start is INVALID_ARGUMENT.
void RunMonitor(const Options& options, uint32_t /*lane*/, Clock::time_point end, Lane* out) {
  auto stub = v1::ScoringService::NewStub(NewChannel(options.address));
  for (uint64_t i = 0; Clock::now() < end; ++i) {
    const bool bad = i % 16 == 15;
    const bool looping = i % 2 == 0;
    grpc::ClientContext context;
    SetDeadline(&context);
    const Clock::time_point started = Clock::now();
    out->Sent();
    auto stream = stub->MonitorGeneration(&context);
    v1::MonitorGenerationRequest message;
    if (!bad) {
      message.mutable_start()->set_max_tokens(8192);
      stream->Write(message);
    }
    const std::string text = looping ? Completion(2, 0) + Completion(2, 0) : CleanText(i);
    for (size_t at = 0; at < text.size(); at += 64) {
      message.mutable_text()->set_text(text.substr(at, 64));
      if (!stream->Write(message)) break;  // the server has finished the stream
    }
    stream->WritesDone();
    v1::MonitorGenerationResponse response;
    int stops = 0;
    while (stream->Read(&response)) ++stops;
    const absl::Status status = service::FromGrpcStatus(stream->Finish());
    std::string shape;
    if (status.ok() && stops != (looping ? 1 : 0)) {
      shape = absl::StrCat(" (", stops, " STOP responses to a ", looping ? "looping" : "clean",
                           " generation)");
    }
    out->Answered(bad ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kOk, status, shape,
                  started);
  }
}

void RunHealth(const Options& options, uint32_t /*lane*/, Clock::time_point end, Lane* out) {
  const std::shared_ptr<grpc::Channel> channel = NewChannel(options.address);
  while (Clock::now() < end) {
    const Clock::time_point started = Clock::now();
    out->Sent();
    const absl::StatusOr<service::HealthState> state =
        service::CheckHealth(channel, "", absl::Seconds(60));
    std::string shape;
    if (state.ok() && *state != service::HealthState::kServing) {
      shape = absl::StrCat(" (", std::string(service::HealthStateName(*state)), ")");
    }
    out->Answered(absl::StatusCode::kOk, state.status(), shape, started);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a probe's pace, not a flood
  }
}

// ------------------------------------------------------------------------------------------------
// The server's side: its counters and its memory.

// GET http://host:port/metrics with a plain socket; empty on failure.
std::string Scrape(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return "";
  const std::string host = host_port.substr(0, colon);
  const std::string port = host_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return "";
  std::string body;
  const int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    const std::string request =
        absl::StrCat("GET /metrics HTTP/1.0\r\nHost: ", host_port, "\r\n\r\n");
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[65536];
      for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) {
        body.append(buffer, static_cast<size_t>(n));
      }
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return body;
}

// rlscore_requests_total by "method code".
std::map<std::string, uint64_t> RequestCounters(const std::string& exposition) {
  std::map<std::string, uint64_t> out;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (!absl::StartsWith(line, "rlscore_requests_total{")) continue;
    const size_t close = line.find('}');
    if (close == absl::string_view::npos) continue;
    std::string method, code;
    for (absl::string_view label : absl::StrSplit(line.substr(23, close - 23), ',')) {
      const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(label, '=');
      const std::string value(absl::StripSuffix(absl::StripPrefix(kv.second, "\""), "\""));
      if (kv.first == "method") method = value;
      if (kv.first == "code") code = value;
    }
    double value = 0;
    if (absl::SimpleAtod(line.substr(close + 1), &value)) {
      out[absl::StrCat(method, " ", code)] = static_cast<uint64_t>(value);
    }
  }
  return out;
}

uint64_t RssKib(uint64_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    uint64_t kib = 0;
    if (absl::StartsWith(line, "VmRSS:") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::StripSuffix(
                             absl::StripAsciiWhitespace(absl::string_view(line).substr(6)), "kB")),
                         &kib)) {
      return kib;
    }
  }
  return 0;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t index =
      std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())));
  return values[index];
}

absl::Status ParseDouble(std::string_view text, double* out) {
  if (!absl::SimpleAtod(absl::string_view(text.data(), text.size()), out) || *out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a number >= 0, got \"", std::string(text), "\""));
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  Options options;
  cli::FlagSet flags("rlscore-loadgen");
  flags.Add({"address", "ADDR", "the server's gRPC address",
             [&](std::string_view v) { return options.address = v, absl::OkStatus(); }});
  flags.Add({"metrics", "HOST:PORT", "the server's metrics endpoint, to cross-check its counters",
             [&](std::string_view v) { return options.metrics = v, absl::OkStatus(); }});
  flags.Add({"seconds", "N", "how long to send (default 30)",
             [&](std::string_view v) { return cli::ParseUint32(v, &options.seconds); }});
  flags.Add({"warmup", "N", "seconds left out of latencies and the RSS baseline (default 5)",
             [&](std::string_view v) { return cli::ParseUint32(v, &options.warmup); }});
  flags.Add({"score-groups", "N", "ScoreGroups lanes (default 4)",
             [&](std::string_view v) { return cli::ParseUint32(v, &options.score_groups); }});
  flags.Add({"advantages", "N", "ComputeAdvantages lanes (default 2)",
             [&](std::string_view v) { return cli::ParseUint32(v, &options.advantages); }});
  flags.Add({"monitor", "N", "MonitorGeneration lanes (default 2)",
             [&](std::string_view v) { return cli::ParseUint32(v, &options.monitor); }});
  flags.Add({"health", "N", "health-check lanes, 10 checks a second each (default 1)",
             [&](std::string_view v) { return cli::ParseUint32(v, &options.health); }});
  flags.Add({"server-pid", "PID", "the server's process, for its RSS",
             [&](std::string_view v) { return cli::ParseUint64(v, &options.server_pid); }});
  flags.Add({"rss-interval", "N", "seconds between RSS samples (default 5)",
             [&](std::string_view v) { return cli::ParseUint32(v, &options.rss_interval); }});
  flags.Add({"max-rss-growth", "F", "fail when RSS grows more than this fraction after warm-up",
             [&](std::string_view v) { return ParseDouble(v, &options.max_rss_growth); }});
  flags.Add({"json", "FILE", "also write the report as JSON",
             [&](std::string_view v) { return options.json = v, absl::OkStatus(); }});
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("%s", flags.Usage().c_str());
    return 0;
  }
  absl::StatusOr<cli::ParsedFlags> parsed = flags.Parse(args);
  absl::Status applied = parsed.ok() ? parsed->ApplyAll() : parsed.status();
  if (applied.ok() && !parsed->positional().empty()) {
    applied = absl::InvalidArgumentError("takes no positional arguments");
  }
  if (!applied.ok()) {
    std::fprintf(stderr, "rlscore-loadgen: %s\n%s", std::string(applied.message()).c_str(),
                 flags.Usage().c_str());
    return 2;
  }

  std::map<std::string, uint64_t> before;
  if (!options.metrics.empty()) {
    const std::string page = Scrape(options.metrics);
    if (page.find("rlscore_build_info") == std::string::npos) {
      std::fprintf(stderr, "rlscore-loadgen: no rlscore metrics at http://%s/metrics\n",
                   options.metrics.c_str());
      return 2;
    }
    before = RequestCounters(page);  // empty before the server's first call
  }

  const Clock::time_point start = Clock::now();
  const Clock::time_point measure_from = start + std::chrono::seconds(options.warmup);
  const Clock::time_point end = start + std::chrono::seconds(options.seconds);
  std::vector<std::unique_ptr<Lane>> lanes;
  std::vector<std::thread> threads;
  using RunFn = void (*)(const Options&, uint32_t, Clock::time_point, Lane*);
  const std::pair<const char*, std::pair<uint32_t, RunFn>> kinds[] = {
      {"ScoreGroups", {options.score_groups, &RunScoreGroups}},
      {"ComputeAdvantages", {options.advantages, &RunAdvantages}},
      {"MonitorGeneration", {options.monitor, &RunMonitor}},
      {"Health", {options.health, &RunHealth}}};
  for (const auto& [method, spec] : kinds) {
    lanes.push_back(std::make_unique<Lane>(method, measure_from));
    for (uint32_t i = 0; i < spec.first; ++i) {
      threads.emplace_back(spec.second, std::cref(options), i, end, lanes.back().get());
    }
  }

  // RSS samples: (seconds since start, KiB).
  std::vector<std::pair<double, uint64_t>> rss;
  std::atomic<bool> sending = true;
  std::thread sampler([&] {
    if (options.server_pid == 0) return;
    Clock::time_point next = start;
    while (sending.load()) {
      if (Clock::now() >= next) {
        rss.emplace_back(std::chrono::duration<double>(Clock::now() - start).count(),
                         RssKib(options.server_pid));
        std::fprintf(stderr, "  t=%5.0fs  server RSS %7.1f MiB\n", rss.back().first,
                     static_cast<double>(rss.back().second) / 1024.0);
        next += std::chrono::seconds(std::max<uint32_t>(1, options.rss_interval));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  for (std::thread& t : threads) t.join();
  sending = false;
  sampler.join();
  if (options.server_pid != 0) {
    rss.emplace_back(std::chrono::duration<double>(Clock::now() - start).count(),
                     RssKib(options.server_pid));
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  // Report.
  bool pass = true;
  std::string json = absl::StrCat("{\"seconds\": ", elapsed, ", \"methods\": {");
  std::printf("\n%-18s %9s %9s %9s %9s %9s %9s %9s %9s\n", "method", "sent", "answered", "planned",
              "errors", "unexpect", "per s", "p50 ms", "p99 ms");
  std::map<std::string, uint64_t> client_counts;
  for (size_t k = 0; k < lanes.size(); ++k) {
    const Tally t = lanes[k]->tally();
    const uint64_t answered = t.as_planned + t.unexpected;
    const double p50 = Percentile(t.latencies_ms, 0.50);
    const double p99 = Percentile(t.latencies_ms, 0.99);
    std::printf("%-18s %9llu %9llu %9llu %9llu %9llu %9.1f %9.1f %9.1f\n",
                lanes[k]->method().c_str(), static_cast<unsigned long long>(t.sent),
                static_cast<unsigned long long>(answered),
                static_cast<unsigned long long>(t.as_planned),
                static_cast<unsigned long long>(t.planned_errors),
                static_cast<unsigned long long>(t.unexpected),
                static_cast<double>(answered) / elapsed, p50, p99);
    for (const std::string& line : t.first_unexpected)
      std::printf("  unexpected: %s\n", line.c_str());
    if (answered != t.sent || t.unexpected != 0) pass = false;
    if (lanes[k]->method() != "Health") {
      for (const auto& [code, n] : t.codes) client_counts[lanes[k]->method() + " " + code] += n;
    }
    absl::StrAppend(&json, k == 0 ? "" : ", ", "\"", lanes[k]->method(), "\": {\"sent\": ", t.sent,
                    ", \"answered\": ", answered, ", \"as_planned\": ", t.as_planned,
                    ", \"planned_errors\": ", t.planned_errors, ", \"unexpected\": ", t.unexpected,
                    ", \"p50_ms\": ", p50, ", \"p99_ms\": ", p99, "}");
  }
  absl::StrAppend(&json, "}");

  if (!options.metrics.empty()) {
    // The server counts a stream when its reactor is done, just after the client saw the status.
    std::map<std::string, uint64_t> delta;
    for (int attempt = 0; attempt < 50; ++attempt) {
      delta.clear();
      for (const auto& [key, n] : RequestCounters(Scrape(options.metrics))) {
        const auto it = before.find(key);
        const uint64_t moved = n - (it == before.end() ? 0 : it->second);
        if (moved != 0) delta[key] = moved;
      }
      if (delta == client_counts) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const bool agree = delta == client_counts;
    std::printf("server counters (rlscore_requests_total): %s\n",
                agree ? "agree with the client" : "DISAGREE");
    for (const auto& [key, n] : client_counts) {
      const auto it = delta.find(key);
      std::printf("  %-36s client %9llu  server %9llu\n", key.c_str(),
                  static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(it == delta.end() ? 0 : it->second));
    }
    for (const auto& [key, n] : delta) {
      if (!client_counts.contains(key)) {
        std::printf("  %-36s client %9d  server %9llu\n", key.c_str(), 0,
                    static_cast<unsigned long long>(n));
      }
    }
    if (!agree) pass = false;
    absl::StrAppend(&json, ", \"server_counters_agree\": ", agree ? "true" : "false");
  }

  if (!rss.empty()) {
    // Growth is a trend, not one sample: the mean of the last fifth of the samples after the
    // warm-up against the mean of the first fifth (one 34 MiB process moves by an allocator arena,
    // a few MiB, from sample to sample). The peak is reported beside it.
    std::vector<double> after;
    for (const auto& [t, kib] : rss) {
      if (t >= options.warmup) after.push_back(static_cast<double>(kib) / 1024.0);
    }
    if (after.empty()) after.push_back(static_cast<double>(rss.back().second) / 1024.0);
    const size_t fifth = std::max<size_t>(1, after.size() / 5);
    double first = 0, last = 0, peak = 0;
    for (size_t i = 0; i < fifth; ++i) {
      first += after[i] / static_cast<double>(fifth);
      last += after[after.size() - fifth + i] / static_cast<double>(fifth);
    }
    for (const double mib : after) peak = std::max(peak, mib);
    const double growth = last / first - 1.0;
    std::printf(
        "server RSS after warm-up (%zu samples): first fifth %.1f MiB, last fifth %.1f MiB "
        "(growth %+.1f %%), peak %.1f MiB (%+.1f %% over the first fifth)\n",
        after.size(), first, last, growth * 100.0, peak, (peak / first - 1.0) * 100.0);
    if (options.max_rss_growth > 0 && growth > options.max_rss_growth) {
      std::printf("RSS grew more than --max-rss-growth=%g\n", options.max_rss_growth);
      pass = false;
    }
    absl::StrAppend(&json, ", \"rss_kib\": [");
    for (size_t i = 0; i < rss.size(); ++i) {
      absl::StrAppend(&json, i == 0 ? "" : ", ", "[", rss[i].first, ", ", rss[i].second, "]");
    }
    absl::StrAppend(&json, "], \"rss_growth\": ", growth, ", \"rss_peak_mib\": ", peak);
  }
  absl::StrAppend(&json, ", \"pass\": ", pass ? "true" : "false", "}\n");
  if (!options.json.empty()) std::ofstream(options.json) << json;
  std::printf("%s\n", pass ? "PASS: every request accounted for" : "FAIL");
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace rlscore::load

int main(int argc, char** argv) { return rlscore::load::Main(argc, argv); }
