// rlscore._native: the engine in the Python process, behind the small surface the rlscore package
// wraps (python/rlscore/). Requests and responses cross as serialized rlscore.v1 messages, so the
// package scores with exactly the server's code path (engine::RunScoreGroups, RunScore);
// advantages cross as numpy arrays without a copy. Every call that does work releases the GIL.
//
//   engine = _native.Engine(config_text="", threads=0)
//   response_bytes = engine.score_groups(request_bytes)
//   verdict, extracted, detail = _native.verify(gold_text, answer_text, "math")
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "advantage/advantage.h"
#include "common/cpu_features.h"
#include "common/mutex.h"
#include "engine/advantage_mapping.h"
#include "engine/config.h"
#include "engine/local_engine.h"
#include "engine/scoring_engine.h"
#include "rlscore/v1/advantage.pb.h"
#include "rlscore/v1/scoring.pb.h"
#include "scorers/accuracy.h"
#include "scorers/math/extract.h"
#include "scorers/math/verifier.h"

namespace py = pybind11;

namespace rlscore::python {
namespace {

// A non-OK Status on its way to Python, where it becomes rlscore.Error(code, message).
struct StatusError {
  absl::Status status;
};

// Set once at import by rlscore/__init__.py: the class rlscore.Error.
py::object& ErrorClass() {
  static py::object* error = new py::object();  // never destroyed: outlives the interpreter's exit
  return *error;
}

void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError{status};
}

template <typename Message>
Message ParseOrThrow(const py::bytes& bytes, std::string_view what) {
  Message message;
  const std::string_view view(bytes);
  if (!message.ParseFromArray(view.data(), static_cast<int>(view.size()))) {
    ThrowIfError(absl::InvalidArgumentError(std::string(what) + " is not a valid " +
                                            Message::descriptor()->full_name()));
  }
  return message;
}

// One process's engine: the server's options (profiles, limits, advantage defaults), the accuracy
// scorer, the CPU advantage backend and a worker pool. Thread-safe, as the engine is: Python
// threads may call it at once (each call releases the GIL).
class Engine {
 public:
  Engine(const std::string& config_text, unsigned threads)
      : engine_(Configure(config_text, threads)) {}

  py::bytes ScoreGroups(const py::bytes& request_bytes) const {
    const auto request = ParseOrThrow<v1::ScoreGroupsRequest>(request_bytes, "the request");
    std::string out;
    {
      py::gil_scoped_release release;
      v1::ScoreGroupsResponse response;
      ThrowIfError(engine::RunScoreGroups(engine_.context(), request, &response));
      response.SerializeToString(&out);
    }
    return py::bytes(out);
  }

  py::bytes Score(const py::bytes& request_bytes) const {
    const auto request = ParseOrThrow<v1::ScoreRequest>(request_bytes, "the request");
    std::string out;
    {
      py::gil_scoped_release release;
      v1::ScoreResponse response;
      ThrowIfError(engine::RunScore(engine_.context(), request, &response));
      response.SerializeToString(&out);
    }
    return py::bytes(out);
  }

  // Advantages of `rewards` (float64, read in place) in groups of `group_sizes`, with the engine's
  // defaults overridden by `options_bytes` (a serialized rlscore.v1.AdvantageOptions) and
  // `outcomes` (uint8 rlscore.v1 outcome values, or empty). GDPO reads `components` (flat,
  // row-major [rewards x num_components]) and `component_weights`; with no rewards they are the
  // rows' weighted sums. The keep band reads `accuracy` (empty, or one per reward). Returns
  // (advantages, mean, std, zero-variance cause per group, summary bytes, keep per group).
  py::tuple ComputeAdvantages(
      const py::array_t<double, py::array::c_style | py::array::forcecast>& rewards,
      const py::array_t<uint32_t, py::array::c_style | py::array::forcecast>& group_sizes,
      const py::bytes& options_bytes,
      const py::array_t<uint8_t, py::array::c_style | py::array::forcecast>& outcomes,
      const py::array_t<double, py::array::c_style | py::array::forcecast>& components,
      uint32_t num_components,
      const py::array_t<double, py::array::c_style | py::array::forcecast>& component_weights,
      const py::array_t<double, py::array::c_style | py::array::forcecast>& accuracy) const {
    if (rewards.ndim() != 1 || group_sizes.ndim() != 1 || outcomes.ndim() != 1 ||
        components.ndim() != 1 || component_weights.ndim() != 1 || accuracy.ndim() != 1) {
      ThrowIfError(absl::InvalidArgumentError(
          "rewards, group_sizes, outcomes, components, component_weights and accuracy must be "
          "one-dimensional arrays"));
    }
    const auto proto_options = ParseOrThrow<v1::AdvantageOptions>(options_bytes, "the options");
    advantage::Options options = engine_.options().advantage;
    ThrowIfError(engine::ApplyAdvantageOptions(proto_options, &options));
    const std::span<const double> component_values(components.data(),
                                                   static_cast<size_t>(components.size()));
    const std::span<const double> weight_values(component_weights.data(),
                                                static_cast<size_t>(component_weights.size()));
    std::vector<double> derived;  // GDPO from components alone, as ComputeAdvantages does
    if (options.estimator == advantage::Estimator::kGdpo && rewards.size() == 0 &&
        !component_values.empty()) {
      absl::StatusOr<std::vector<double>> sums =
          advantage::WeightedRowSums(component_values, num_components, weight_values);
      ThrowIfError(sums.status());
      derived = *std::move(sums);
    }
    const size_t n = derived.empty() ? static_cast<size_t>(rewards.size()) : derived.size();
    const size_t g = static_cast<size_t>(group_sizes.size());
    std::vector<advantage::Outcome> outcome_values(static_cast<size_t>(outcomes.size()));
    for (size_t i = 0; i < outcome_values.size(); ++i) {
      outcome_values[i] = static_cast<advantage::Outcome>(outcomes.data()[i]);
    }
    py::array_t<double> advantages(static_cast<py::ssize_t>(n));
    py::array_t<double> means(static_cast<py::ssize_t>(g));
    py::array_t<double> stds(static_cast<py::ssize_t>(g));
    py::array_t<uint8_t> causes(static_cast<py::ssize_t>(g));
    py::array_t<bool> keep(static_cast<py::ssize_t>(g));
    // Pointers taken with the GIL held: the arrays stay alive, referenced by this frame.
    const std::span<const double> reward_values =
        derived.empty() ? std::span<const double>(rewards.data(), n) : derived;
    const std::span<const double> accuracy_values(accuracy.data(),
                                                  static_cast<size_t>(accuracy.size()));
    const std::span<const uint32_t> sizes(group_sizes.data(), g);
    const std::span<double> out(advantages.mutable_data(), n);
    double* const mean_out = means.mutable_data();
    double* const std_out = stds.mutable_data();
    uint8_t* const cause_out = causes.mutable_data();
    bool* const keep_out = keep.mutable_data();
    std::string summary_bytes;
    {
      py::gil_scoped_release release;
      std::vector<advantage::GroupStats> groups(g);
      advantage::BatchSummary summary;
      const advantage::Batch batch{.rewards = reward_values,
                                   .group_sizes = sizes,
                                   .outcomes = outcome_values,
                                   .components = component_values,
                                   .num_components = num_components,
                                   .component_weights = weight_values,
                                   .accuracy = accuracy_values};
      const absl::StatusOr<std::string_view> served =
          engine_.backend().Compute(batch, options, out, groups, &summary);
      ThrowIfError(served.status());
      for (size_t i = 0; i < g; ++i) {
        mean_out[i] = groups[i].mean;
        std_out[i] = groups[i].std;
        cause_out[i] = static_cast<uint8_t>(groups[i].cause);
        keep_out[i] = groups[i].keep();
      }
      v1::BatchSummary proto_summary;
      engine::FillBatchSummary(summary, &proto_summary);
      proto_summary.SerializeToString(&summary_bytes);
    }
    return py::make_tuple(advantages, means, stds, causes, py::bytes(summary_bytes), keep);
  }

  // The hash of `profile` ("" is the default), as ScoreGroups reports it.
  std::string ProfileHash(const std::string& profile) const {
    const absl::StatusOr<const engine::ServiceProfile*> found =
        engine_.options().profiles.Find(profile);
    ThrowIfError(found.status());
    return (*found)->hash;
  }

  std::vector<std::string> ProfileNames() const {
    std::vector<std::string> names;
    for (const auto& [name, unused] : engine_.options().profiles.all()) names.push_back(name);
    return names;
  }
  unsigned threads() const { return engine_.threads(); }

 private:
  static engine::ServerOptions Configure(const std::string& config_text, unsigned threads) {
    engine::ServerOptions options = engine::DefaultServerOptions();
    if (!config_text.empty()) {
      engine::ConfigLocations locations;
      ThrowIfError(engine::ApplyConfigText(config_text, "the config", &options, &locations));
      ThrowIfError(locations.Locate(engine::ValidateServerOptions(options), options));
    }
    if (threads != 0) options.scoring_threads = threads;
    return options;
  }

  const engine::LocalEngine engine_;
};

// Extraction is one linear pass: below this many bytes it takes less time than handing the GIL
// to another thread and back.
constexpr size_t kHoldTheGilBelowBytes = 4096;

const scorers::AccuracyScorer& SharedAccuracy() {
  static const scorers::AccuracyScorer* const scorer = scorers::math::NewAccuracyScorer().release();
  return *scorer;
}

// The judges of the golds verified last: a trainer verifies every rollout of a prompt against
// the same gold, so its reference is parsed once for the group, as ScoreGroups does. Each judge
// keeps its own bounded verdict cache; the verdict does not depend on what is cached.
// Thread-safe.
class JudgeCache {
 public:
  static constexpr size_t kCapacity = 256;

  std::shared_ptr<const scorers::Judge> Get(scorers::Task task, const std::string& gold) {
    std::string key(1, static_cast<char>(task));
    key += gold;
    {
      MutexLock lock(&mu_);
      if (auto it = index_.find(key); it != index_.end()) {
        recent_.splice(recent_.begin(), recent_, it->second);
        return it->second->second;
      }
    }
    const std::vector<std::string> references = {gold};
    std::shared_ptr<const scorers::Judge> judge = SharedAccuracy().Prepare(task, references);
    MutexLock lock(&mu_);
    if (index_.contains(key)) return judge;  // another thread prepared it meanwhile
    recent_.emplace_front(key, judge);
    index_.emplace(std::move(key), recent_.begin());
    if (recent_.size() > kCapacity) {
      index_.erase(recent_.back().first);
      recent_.pop_back();
    }
    return judge;
  }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const scorers::Judge>>;
  Mutex mu_;
  std::list<Entry> recent_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
};

JudgeCache& Judges() {
  static JudgeCache* const cache = new JudgeCache();
  return *cache;
}

absl::StatusOr<scorers::Task> TaskNamed(std::string_view name) {
  if (name == "math") return scorers::Task::kMath;
  if (name == "numeric") return scorers::Task::kNumeric;
  if (name == "multiple_choice") return scorers::Task::kMultipleChoice;
  if (name == "exact") return scorers::Task::kExact;
  if (name == "if" || name == "instruction_following") {
    return scorers::Task::kInstructionFollowing;
  }
  return absl::InvalidArgumentError("unknown task \"" + std::string(name) +
                                    "\": expected math, numeric, multiple_choice, exact or if");
}

// `answer` graded against `gold` for `task` ("math", ...), with the GIL released.
scorers::AccuracyResult Grade(const std::string& gold, const std::string& answer,
                              const std::string& task) {
  const absl::StatusOr<scorers::Task> parsed = TaskNamed(task);
  ThrowIfError(parsed.status());
  py::gil_scoped_release release;
  return Judges().Get(*parsed, gold)->Grade(answer);
}

}  // namespace
}  // namespace rlscore::python

PYBIND11_MODULE(_native, m) {
  using namespace rlscore::python;  // NOLINT: the module's one scope
  m.doc() = "rlscore's engine in process (use the rlscore package, not this module)";

  m.def("_set_error_class", [](py::object cls) { ErrorClass() = std::move(cls); });
  m.def("_cpu_isa_environment_error", [] { return rlscore::CpuIsaEnvironmentError(); });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      const std::string code = absl::StatusCodeToString(e.status.code());
      const std::string message(e.status.message());
      if (ErrorClass()) {
        PyErr_SetObject(ErrorClass().ptr(), py::make_tuple(code, message).ptr());
      } else {
        PyErr_SetString(PyExc_RuntimeError, (code + ": " + message).c_str());
      }
    }
  });

  py::class_<Engine>(m, "Engine")
      .def(py::init<const std::string&, unsigned>(), py::arg("config_text") = "",
           py::arg("threads") = 0)
      .def("score_groups", &Engine::ScoreGroups)
      .def("score", &Engine::Score)
      .def("compute_advantages", &Engine::ComputeAdvantages)
      .def("profile_hash", &Engine::ProfileHash)
      .def("profile_names", &Engine::ProfileNames)
      .def_property_readonly("threads", &Engine::threads);

  // The parts of the final answer found in `text` (empty: none), as the verifier extracts them for
  // `task`: from a completion, or from a reference when `reference` is true.
  m.def("extract", [](const std::string& text, bool reference, const std::string& task) {
    namespace math = rlscore::scorers::math;
    const absl::StatusOr<rlscore::scorers::Task> parsed = TaskNamed(task);
    ThrowIfError(parsed.status());
    const math::Fallback fallback =
        *parsed == rlscore::scorers::Task::kMultipleChoice ? math::Fallback::kChoiceLetter
        : *parsed == rlscore::scorers::Task::kExact        ? math::Fallback::kWholeText
                                                           : math::Fallback::kExpression;
    const math::Source source = reference ? math::Source::kReference : math::Source::kCompletion;
    math::ExtractedAnswer answer;
    if (text.size() < kHoldTheGilBelowBytes) {
      answer = math::ExtractAnswer(text, source, fallback);
    } else {
      py::gil_scoped_release release;
      answer = math::ExtractAnswer(text, source, fallback);
    }
    return answer.parts;
  });

  // (verdict name, extracted answer, detail) of `answer` judged against `gold`; the GIL is
  // released while it grades. Budgets bound it; it never raises on model output.
  m.def("verify", [](const std::string& gold, const std::string& answer, const std::string& task) {
    const rlscore::scorers::AccuracyResult result = Grade(gold, answer, task);
    return std::make_tuple(std::string(rlscore::scorers::VerdictName(result.verdict)),
                           result.extracted, result.detail);
  });
  // Whether that verdict is CORRECT: the same grading, without building its strings.
  m.def("is_correct",
        [](const std::string& gold, const std::string& answer, const std::string& task) {
          return Grade(gold, answer, task).verdict == rlscore::scorers::Verdict::kCorrect;
        });
}
