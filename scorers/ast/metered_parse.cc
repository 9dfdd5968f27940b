#include "scorers/ast/metered_parse.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "tree_sitter/api.h"

namespace rlscore::scorers::ast {
namespace {

// The work of the parse running on this thread. tree-sitter checks `cancel` every 100 parse
// actions; the charge that crosses the limit sets it, so where a parse stops depends only on the
// text. Every kClockStride charges the meter also reads the clock for the safety net (a charge
// stands for microseconds of work at most; reading the clock costs about 20 ns).
struct Meter {
  static constexpr uint32_t kClockStride = 1024;

  uint64_t used = 0;
  uint64_t limit = 0;
  std::chrono::steady_clock::time_point deadline;
  uint32_t charges = 0;
  bool timed_out = false;
  size_t cancel = 0;  // tree-sitter's cancellation flag

  void Charge(uint64_t units) {
    used += units;
    if (used > limit) cancel = 1;
    if (++charges % kClockStride == 0 && std::chrono::steady_clock::now() > deadline) {
      timed_out = true;
      cancel = 1;
    }
  }
  bool exhausted() const { return used > limit; }
};

thread_local Meter* t_meter = nullptr;

void Charge(size_t bytes) {
  if (t_meter != nullptr) t_meter->Charge(bytes);
}

// tree-sitter's default allocator aborts when memory runs out rather than return null (its
// callers do not check); so do these.
[[noreturn]] void OutOfMemory(size_t bytes) {
  std::fprintf(stderr, "tree-sitter: failed to allocate %zu bytes\n", bytes);
  std::abort();
}

void* CountingMalloc(size_t bytes) {
  Charge(bytes);
  void* p = std::malloc(bytes);
  if (p == nullptr && bytes != 0) OutOfMemory(bytes);
  return p;
}

void* CountingCalloc(size_t count, size_t size) {
  Charge(count * size);
  void* p = std::calloc(count, size);
  if (p == nullptr && count != 0 && size != 0) OutOfMemory(count * size);
  return p;
}

void* CountingRealloc(void* old, size_t bytes) {
  Charge(bytes);
  void* p = std::realloc(old, bytes);
  if (p == nullptr && bytes != 0) OutOfMemory(bytes);
  return p;
}

void InstallCountingAllocator() {
  static std::once_flag once;
  // Safe at any time: memory allocated before is freed by the same free().
  std::call_once(once,
                 [] { ts_set_allocator(CountingMalloc, CountingCalloc, CountingRealloc, free); });
}

// The text, handed to the lexer one whole UTF-8 character at a time so that every read is charged.
struct Source {
  std::string_view text;
  Meter* meter;
};

const char* ReadCharacter(void* payload, uint32_t byte, TSPoint /*point*/, uint32_t* bytes_read) {
  Source& source = *static_cast<Source*>(payload);
  source.meter->Charge(kLexerReadWork);
  // Past the budget the text is still read as it is: the cancellation flag stops the parse. (A
  // made-up end of text would not do: tree-sitter 0.20 reads a character again after a decoding
  // error and dereferences the new chunk without checking that it is empty.)
  if (byte >= source.text.size()) {
    *bytes_read = 0;
    return "";
  }
  const auto lead = static_cast<unsigned char>(source.text[byte]);
  // A lead byte's sequence length; an invalid byte is read alone (the lexer decodes it as an
  // error), and a sequence cut by the end of the text is read as far as it goes.
  const size_t length = lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  *bytes_read = static_cast<uint32_t>(std::min(length, source.text.size() - byte));
  return source.text.data() + byte;
}

// Owns a parser and deletes it.
class Parser {
 public:
  explicit Parser(Grammar grammar) : parser_(ts_parser_new()) {
    // Cannot fail: every linked grammar is ABI 14 (checked by grammars_test).
    ts_parser_set_language(parser_, LanguageOf(grammar));
  }
  ~Parser() { ts_parser_delete(parser_); }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
  TSParser* get() const { return parser_; }

 private:
  TSParser* const parser_;
};

uint64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  const auto spent = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  return static_cast<uint64_t>(std::max<int64_t>(spent.count(), 0));
}

}  // namespace

Tree::~Tree() {
  if (tree_ != nullptr) ts_tree_delete(tree_);
}

Tree& Tree::operator=(Tree&& other) noexcept {
  if (this != &other) {
    if (tree_ != nullptr) ts_tree_delete(tree_);
    tree_ = other.tree_;
    other.tree_ = nullptr;
  }
  return *this;
}

MeteredParse ParseMetered(Grammar grammar, std::string_view text, ParseAllowance* allowance) {
  MeteredParse result;
  if (allowance->micros == 0) {  // the parses before took all of it
    result.outcome = ParseOutcome::kOutOfTime;
    return result;
  }
  InstallCountingAllocator();
  const Parser parser(grammar);
  const auto start = std::chrono::steady_clock::now();
  Meter meter{.limit = allowance->work,
              .deadline = start + std::chrono::microseconds(allowance->micros)};
  Source source{.text = text, .meter = &meter};
  // tree-sitter's own timeout is not used: version 0.20 halts any parse that crosses a second
  // boundary when the timeout has a fractional second (its clock_after does not carry), and a
  // resumed parse re-reads and allocates again, which would change the charge.
  ts_parser_set_cancellation_flag(parser.get(), &meter.cancel);
  t_meter = &meter;
  TSTree* tree =
      ts_parser_parse(parser.get(), nullptr, TSInput{&source, ReadCharacter, TSInputEncodingUTF8});
  t_meter = nullptr;

  result.work = meter.used;
  result.micros = MicrosSince(start);
  allowance->micros -= std::min(result.micros, allowance->micros);
  if (meter.exhausted()) {
    // Decided by the charges alone, whether or not tree-sitter finished first.
    if (tree != nullptr) ts_tree_delete(tree);
    result.outcome = ParseOutcome::kOutOfWork;
    allowance->work = 0;
    return result;
  }
  allowance->work -= meter.used;
  if (tree == nullptr) {  // cancelled by the clock
    result.outcome = ParseOutcome::kOutOfTime;
    allowance->micros = 0;
    return result;
  }
  if (meter.timed_out) allowance->micros = 0;  // it finished first; later parses will not
  result.tree = Tree(tree);
  return result;
}

}  // namespace rlscore::scorers::ast
