#include "cli/input_pieces.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "cli/rollouts.h"
#include "common/strings.h"

namespace rlscore::cli {
namespace {

// A read-only mapping of a whole file, unmapped when the last piece that views it is gone.
class Mapping {
 public:
  Mapping(void* data, size_t size) : data_(data), size_(size) {}
  ~Mapping() { munmap(data_, size_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* const data_;
  const size_t size_;
};

// Lines that are not rollouts: empty, or only whitespace (a CR before the newline included).
bool IsBlank(std::string_view line) { return absl::StripAsciiWhitespace(Sv(line)).empty(); }

// Cuts data into pieces, numbers them and hands them on; remembers when emit said stop.
class Cutter {
 public:
  Cutter(PieceSize size, const std::function<bool(InputPiece)>& emit) : size_(size), emit_(emit) {}

  void Emit(std::string_view text, const std::shared_ptr<const void>& owner) {
    if (stopped_ || text.empty()) return;
    bytes_ += text.size();
    InputPiece piece{.sequence = sequence_++, .text = text, .owner = owner, .bytes_end = bytes_};
    if (file_ != nullptr && text.data() >= file_ && text.data() < file_ + file_size_) {
      piece.fd = fd_;
      piece.file_offset = static_cast<uint64_t>(text.data() - file_);
    }
    stopped_ = !emit_(std::move(piece));
  }

  // Emits a piece that stands for a line over the limit, `line_bytes` long without its line
  // ending, which takes `span` bytes of the input (its newline included, if it has one).
  void EmitOverlong(uint64_t line_bytes, uint64_t span) {
    if (stopped_) return;
    bytes_ += span;
    InputPiece piece;
    piece.sequence = sequence_++;
    piece.bytes_end = bytes_;
    piece.overlong_line = line_bytes;
    stopped_ = !emit_(std::move(piece));
  }

  // Whether the line [begin, end) of `data` (`end` at its newline, or the end of the input) is
  // over the limit; if so, how long it is.
  uint64_t Overlong(std::string_view data, size_t begin, size_t end) const {
    if (size_.max_line_bytes == 0 || end - begin <= size_.max_line_bytes) return 0;
    const size_t bytes = end - begin - (data[end - 1] == '\r' ? 1 : 0);
    return bytes > size_.max_line_bytes ? bytes : 0;
  }

  // Pieces that view [bytes, bytes + size) are the bytes of the file `fd` from its start.
  void SetFile(int fd, const char* bytes, size_t size) {
    fd_ = fd;
    file_ = bytes;
    file_size_ = size;
  }

  // Emits pieces of the whole lines at the start of `data`; returns where the rest starts: a
  // line without its newline, and when `more` input follows in pieces of lines, the lines of an
  // unfinished piece. Without `more`, pieces of lines take in the rest.
  size_t EmitWholeLines(std::string_view data, const std::shared_ptr<const void>& owner,
                        bool more) {
    return size_.lines == 0 ? ByBytes(data, owner) : ByLines(data, owner, more);
  }

  bool stopped() const { return stopped_; }
  uint64_t max_line_bytes() const { return size_.max_line_bytes; }

 private:
  size_t ByBytes(std::string_view data, const std::shared_ptr<const void>& owner) {
    size_t start = 0;
    while (!stopped_ && start < data.size()) {
      const size_t left = data.size() - start;
      const size_t bytes = size_.max_bytes > size_.bytes
                               ? std::clamp(left / size_.parts, size_.bytes, size_.max_bytes)
                               : size_.bytes;
      const size_t from = std::min(data.size(), start + bytes) - 1;
      size_t newline = FindNewline(data, from);
      if (newline == std::string_view::npos) {
        const void* nl = memrchr(data.data() + start, '\n', from - start);
        if (nl == nullptr) break;  // no whole line left
        newline = static_cast<size_t>(static_cast<const char*>(nl) - data.data());
      }
      const size_t end = newline + 1;
      if (size_.max_line_bytes != 0 && end - start > size_.max_line_bytes) {
        // The line the cut falls in (or the last whole one) may be over the limit: it starts
        // after the last newline before the cut, since none lies between the cut and `newline`.
        const void* before = memrchr(data.data() + start, '\n', std::min(from, newline) - start);
        const size_t begin =
            before == nullptr
                ? start
                : static_cast<size_t>(static_cast<const char*>(before) - data.data()) + 1;
        if (const uint64_t line = Overlong(data, begin, newline); line != 0) {
          Emit(data.substr(start, begin - start), owner);
          EmitOverlong(line, end - begin);
          start = end;
          continue;
        }
      }
      Emit(data.substr(start, end - start), owner);
      start = end;
    }
    return start;
  }

  // The first newline of `data` at or after `from`, or npos. In the mapped file it is read with
  // pread rather than through the mapping, whose pages nothing else touches (LoadPiece).
  size_t FindNewline(std::string_view data, size_t from) {
    if (data.data() == file_) {
      constexpr size_t kWindow = 16 << 10;
      window_.resize(kWindow);
      size_t at = from;
      while (at < data.size()) {
        const ssize_t got =
            pread(fd_, window_.data(), std::min(kWindow, data.size() - at), static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;  // the mapping has the bytes still
        if (const void* nl = std::memchr(window_.data(), '\n', static_cast<size_t>(got))) {
          return at + static_cast<size_t>(static_cast<const char*>(nl) - window_.data());
        }
        at += static_cast<size_t>(got);
      }
      if (at >= data.size()) return std::string_view::npos;
      from = at;
    }
    const void* nl = std::memchr(data.data() + from, '\n', data.size() - from);
    return nl == nullptr ? std::string_view::npos
                         : static_cast<size_t>(static_cast<const char*>(nl) - data.data());
  }

  size_t ByLines(std::string_view data, const std::shared_ptr<const void>& owner, bool more) {
    size_t start = 0, next = 0;
    uint32_t lines = 0;
    while (!stopped_) {
      const void* nl = std::memchr(data.data() + next, '\n', data.size() - next);
      if (nl == nullptr) break;
      const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data.data());
      if (const uint64_t line = Overlong(data, next, end); line != 0) {
        // The piece ends before it, with fewer lines than the others.
        Emit(data.substr(start, next - start), owner);
        EmitOverlong(line, end + 1 - next);
        start = next = end + 1;
        lines = 0;
        continue;
      }
      if (!IsBlank(data.substr(next, end - next))) ++lines;
      next = end + 1;
      if (lines == size_.lines) {
        Emit(data.substr(start, next - start), owner);
        start = next;
        lines = 0;
      }
    }
    if (!more) {  // the rest, a last line without its newline too, is the last piece
      Emit(data.substr(start), owner);
      start = data.size();
    }
    return start;
  }

  const PieceSize size_;
  const std::function<bool(InputPiece)>& emit_;
  uint64_t sequence_ = 0, bytes_ = 0;
  bool stopped_ = false;
  int fd_ = -1;
  const char* file_ = nullptr;
  size_t file_size_ = 0;
  std::vector<char> window_;  // FindNewline's reads
};

std::shared_ptr<const char[]> PaddedCopy(std::string_view bytes) {
  std::shared_ptr<char[]> copy =
      std::make_shared_for_overwrite<char[]>(bytes.size() + kRolloutLinePadding);
  std::memcpy(copy.get(), bytes.data(), bytes.size());
  std::memset(copy.get() + bytes.size(), ' ', kRolloutLinePadding);
  return copy;
}

absl::Status ReadMapped(int fd, size_t size, Cutter* cutter) {
  void* data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED) return absl::ErrnoToStatus(errno, "mapping the input");
  madvise(data, size, MADV_SEQUENTIAL);
  const auto mapping = std::make_shared<const Mapping>(data, size);
  const std::string_view bytes = mapping->bytes();
  // Pieces are views as far as the padding after them stays inside the mapping's last page;
  // the rest of the file is read from a padded copy.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t readable = (size + page - 1) / page * page;
  const size_t viewable =
      readable >= size + kRolloutLinePadding ? size : size - std::min(size, kRolloutLinePadding);
  cutter->SetFile(fd, bytes.data(), size);
  size_t start = cutter->EmitWholeLines(bytes.substr(0, viewable), mapping, /*more=*/true);
  const auto emit_copied = [&](size_t end) {
    if (cutter->stopped() || start == end) return;
    const std::shared_ptr<const char[]> copy = PaddedCopy(bytes.substr(start, end - start));
    const std::string_view tail(copy.get(), end - start);
    const size_t rest = cutter->EmitWholeLines(tail, copy, /*more=*/false);
    cutter->Emit(tail.substr(rest), copy);  // a last line without its newline
    start = end;
  };
  // The line that runs past `viewable`, if it is over the limit, is skipped rather than copied.
  if (!cutter->stopped() && start < size && size - start > cutter->max_line_bytes() + 1 &&
      cutter->max_line_bytes() != 0) {
    const void* before = memrchr(bytes.data() + start, '\n', viewable - start);
    const size_t begin =
        before == nullptr
            ? start
            : static_cast<size_t>(static_cast<const char*>(before) - bytes.data()) + 1;
    const size_t from = std::max(begin, viewable);
    const void* after = std::memchr(bytes.data() + from, '\n', size - from);
    const size_t end = after == nullptr
                           ? size
                           : static_cast<size_t>(static_cast<const char*>(after) - bytes.data());
    if (const uint64_t line = cutter->Overlong(bytes, begin, end); line != 0) {
      emit_copied(begin);
      cutter->EmitOverlong(line, std::min(end + 1, size) - begin);
      start = std::min(end + 1, size);
    }
  }
  emit_copied(size);
  return absl::OkStatus();
}

// Whether more input can be read from `fd` without waiting.
bool Ready(int fd) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP)) != 0;
}

// Reads `fd` into a chunk until it is full, the input ends, or nothing more has arrived: a
// writer that pauses (or keeps its end open after a bad line) gets its lines scored meanwhile.
// Returns how many bytes the chunk holds; sets *eof at the end of the input.
absl::StatusOr<size_t> ReadBurst(int fd, char* chunk, size_t size, size_t capacity, bool* eof) {
  do {
    const ssize_t got = read(fd, chunk + size, capacity - size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return absl::ErrnoToStatus(errno, "reading the input");
    if (got == 0) {
      *eof = true;
      break;
    }
    size += static_cast<size_t>(got);
  } while (size < capacity && Ready(fd));
  return size;
}

absl::Status ReadChunks(int fd, Cutter* cutter) {
  constexpr size_t kChunk = size_t{4} << 20;
  const uint64_t max_line = cutter->max_line_bytes();
  // The chunk holds the input not yet passed on, [0, size), and no piece views it, so it may be
  // written on. Once pieces view it, what they leave is copied into a new chunk (renew); one
  // that fills with nothing passed on (a line longer than it) doubles, so however long a line,
  // each of its bytes is copied a bounded number of times. Left uninitialised: reads overwrite
  // it, and pages not read into are never touched.
  std::shared_ptr<char[]> chunk;
  size_t capacity = 0, size = 0;
  const auto renew = [&](size_t keep_from) {
    const size_t kept = size - keep_from;
    const size_t room = std::max(kChunk, 2 * kept);
    std::shared_ptr<char[]> next =
        std::make_shared_for_overwrite<char[]>(room + kRolloutLinePadding);
    if (kept != 0) std::memcpy(next.get(), chunk.get() + keep_from, kept);
    chunk = std::move(next);
    capacity = room;
    size = kept;
  };
  size_t line_begin = 0;    // where the chunk's last line begins: no newline follows it
  uint64_t skipped = 0;     // bytes of a line over the limit, read and dropped; 0 when none is
  bool skipped_cr = false;  // whether the last of them is a CR (not counted in its length)
  const auto skip_ends = [&](bool newline) {
    cutter->EmitOverlong(skipped - (skipped_cr ? 1 : 0), skipped + (newline ? 1 : 0));
    skipped = 0;
  };
  for (bool eof = false; !eof && !cutter->stopped();) {
    if (size == capacity) renew(0);
    size_t fresh = size;  // where the bytes of this burst start
    absl::StatusOr<size_t> read = ReadBurst(fd, chunk.get(), size, capacity, &eof);
    if (!read.ok()) return read.status();
    size = *read;
    if (skipped != 0) {  // the chunk holds only this burst: what follows the line is kept
      const void* nl = std::memchr(chunk.get(), '\n', size);
      const size_t end =
          nl == nullptr ? size : static_cast<size_t>(static_cast<const char*>(nl) - chunk.get());
      if (end != 0) {
        skipped += end;
        skipped_cr = chunk[end - 1] == '\r';
      }
      if (nl == nullptr) {
        size = 0;
        if (eof) skip_ends(/*newline=*/false);
        continue;
      }
      skip_ends(/*newline=*/true);
      size -= end + 1;
      std::memmove(chunk.get(), chunk.get() + end + 1, size);
      fresh = 0;
      line_begin = 0;
    }
    const void* last_nl = memrchr(chunk.get() + fresh, '\n', size - fresh);
    if (last_nl != nullptr) {
      line_begin = static_cast<size_t>(static_cast<const char*>(last_nl) - chunk.get()) + 1;
    }
    if (max_line != 0 && size - line_begin > max_line + 1) {
      // The last line is over the limit whatever ends it (a CR before its newline would not
      // count): the lines before it are passed on, and it is read to its newline and dropped.
      skipped = size - line_begin;
      skipped_cr = chunk[size - 1] == '\r';
      if (line_begin != 0) {
        std::memset(chunk.get() + size, ' ', kRolloutLinePadding);
        cutter->EmitWholeLines(std::string_view(chunk.get(), line_begin), chunk, /*more=*/false);
        chunk.reset();  // viewed now: the next burst goes to a new one
        capacity = 0;
      }
      size = 0;
      line_begin = 0;
      if (eof) skip_ends(/*newline=*/false);
      continue;
    }
    if (last_nl == nullptr && !eof) continue;  // no line has ended: nothing to pass on yet
    std::memset(chunk.get() + size, ' ', kRolloutLinePadding);
    const std::string_view data(chunk.get(), size);
    const size_t start = cutter->EmitWholeLines(data, chunk, /*more=*/!eof);
    if (eof) {
      cutter->Emit(data.substr(start), chunk);  // a last line without its newline
    } else if (start != 0) {
      renew(start);
      line_begin -= start;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadPieces(int fd, PieceSize size, const std::function<bool(InputPiece)>& emit) {
  size.bytes = std::max<size_t>(size.bytes, 1);
  size.parts = std::max<size_t>(size.parts, 1);
  Cutter cutter(size, emit);
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    return ReadMapped(fd, static_cast<size_t>(st.st_size), &cutter);
  }
  return ReadChunks(fd, &cutter);
}

PieceBuffer::~PieceBuffer() {
  if (data_ != nullptr) munmap(data_, capacity_);
}

char* PieceBuffer::Reserve(size_t bytes) {
  if (bytes <= capacity_) return data_;
  // Pieces differ in size by a line or so: room for an eighth more, or half again as much as
  // before, so that few pieces remap.
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t wanted = std::max(bytes + bytes / 8, capacity_ + capacity_ / 2);
  const size_t capacity = (wanted + kHugePage - 1) / kHugePage * kHugePage;
  if (data_ != nullptr) munmap(data_, capacity_);
  data_ = nullptr;
  capacity_ = 0;
  // A huge page backs only an aligned 2 MiB: map a huge page more than needed and give back
  // what lies outside the aligned range. MADV_HUGEPAGE goes before the first touch; where the
  // kernel has transparent huge pages off, or none free, the memory is small pages as before.
  const size_t mapped = capacity + kHugePage;
  void* map = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  char* const start = static_cast<char*>(map);
  char* const aligned = reinterpret_cast<char*>(
      (reinterpret_cast<uintptr_t>(start) + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1));
  if (aligned > start) munmap(start, static_cast<size_t>(aligned - start));
  const size_t after = static_cast<size_t>(start + mapped - (aligned + capacity));
  if (after > 0) munmap(aligned + capacity, after);
  madvise(aligned, capacity, MADV_HUGEPAGE);
  data_ = aligned;
  capacity_ = capacity;
  return data_;
}

bool PopulateHeap(size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* const block = std::malloc(bytes);
  if (block == nullptr) return false;
  const auto at = reinterpret_cast<uintptr_t>(block);
  const uintptr_t start = (at + page - 1) & ~(page - 1);
  const uintptr_t end = (at + bytes) & ~(page - 1);
  const bool mapped =
      end > start && madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_WRITE) == 0;
  std::free(block);
  return mapped;
#else
  (void)bytes;
  return false;
#endif
}

std::string_view LoadPiece(const InputPiece& piece, PieceBuffer* buffer) {
  if (piece.fd < 0) return piece.text;
  const size_t size = piece.text.size();
  char* data = buffer->Reserve(size + kRolloutLinePadding);
  for (size_t got = 0; got < size;) {
    const ssize_t read =
        pread(piece.fd, data + got, size - got, static_cast<off_t>(piece.file_offset + got));
    if (read < 0 && errno == EINTR) continue;
    if (read <= 0) return piece.text;
    got += static_cast<size_t>(read);
  }
  std::memset(data + size, ' ', kRolloutLinePadding);
  return {data, size};
}

uint64_t SplitLines(std::string_view text, std::vector<PieceLine>* lines, uint64_t max_line_bytes) {
  uint64_t number = 0;
  size_t start = 0;
  while (start < text.size()) {
    const void* nl = std::memchr(text.data() + start, '\n', text.size() - start);
    const size_t end = nl == nullptr
                           ? text.size()
                           : static_cast<size_t>(static_cast<const char*>(nl) - text.data());
    std::string_view line = text.substr(start, end - start);
    ++number;
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Not a rollout, unless it is over the limit: whether a reader skips it should not depend on
    // where the pieces are cut.
    if (IsBlank(line) && (max_line_bytes == 0 || line.size() <= max_line_bytes)) continue;
    lines->push_back({line, number});
  }
  return number;
}

}  // namespace rlscore::cli
