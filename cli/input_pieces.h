// Cuts a JSONL input into pieces of whole lines for the scoring threads. Pieces of about N bytes
// are cut without looking at most of the input: the reader only finds a newline every N bytes,
// and each scoring thread splits its own pieces into lines, so the work that touches every byte
// runs on every thread. Pieces of exactly N non-blank lines (for requests of N rollouts to a
// server) make the reader look at every line.
//
// A regular file is mapped and pieces are views into the mapping; a pipe is read in chunks of a
// few megabytes, and what has arrived is passed on without waiting for a full chunk. A line
// longer than a chunk grows it to twice its size, so a byte is copied a bounded number of times
// however long its line. Every piece is followed by at least kRolloutLinePadding readable bytes
// (of any content), as RolloutReader::ReadPadded needs after a line.
//
// A line longer than PieceSize::max_line_bytes is not held: where the reader finds one (a line
// that a piece's cut falls inside, or one that a pipe has not finished), it hands on a piece that
// stands for that line alone (InputPiece::overlong_line) and skips its bytes, so the memory of
// reading stays bounded by the limit whatever the input. Lines over the limit may still come
// inside pieces (where a piece is longer than the limit), so a scoring thread checks each line's
// length as well.
//
// A scoring thread reads a piece of a file into memory of its own, reused from piece to piece
// (LoadPiece), rather than through the mapping: the first touch of each mapped page is a page
// fault, and the faults of a whole file cost more than copying it (a tenth of the scoring CPU
// of `rlscore score` on 2 cores, against a copy of a third of that).
//
//   absl::Status read = ReadPieces(fd, {.bytes = 256 << 10}, [&](InputPiece piece) {
//     return queue.Push(std::move(piece));   // false stops the reading
//   });
//   PieceBuffer buffer;                                      // one per scoring thread
//   const std::string_view text = LoadPiece(piece, &buffer);
//   std::vector<PieceLine> lines;
//   const uint64_t count = SplitLines(text, &lines);         // numbers from 1 within the piece
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace rlscore::cli {

// Consecutive whole lines of the input: the last one's newline included, except at the end of
// an input that does not end with one.
struct InputPiece {
  uint64_t sequence = 0;  // 0, 1, 2, ... in input order
  std::string_view text;
  std::shared_ptr<const void> owner;  // keeps `text` alive: a piece may outlive the reading
  uint64_t bytes_end = 0;             // offset in the input where the piece ends
  // For a view into a mapped file: the file, open until every piece is done, and where `text`
  // starts in it (LoadPiece reads it from there). -1 for any other piece.
  int fd = -1;
  uint64_t file_offset = 0;
  // If not 0: the piece stands for one line of this many bytes (its line ending not counted),
  // over PieceSize::max_line_bytes and not read; `text` is empty.
  uint64_t overlong_line = 0;
};

// A scoring thread's memory for the pieces it loads, mapped in whole 2 MiB huge pages where the
// kernel grants transparent huge pages to memory that asks for them: a new 4 KiB page costs a
// page fault at its first touch, and the faults of a megabyte of small pages cost ten times the
// one fault of a huge page. Not thread-safe.
class PieceBuffer {
 public:
  PieceBuffer() = default;
  ~PieceBuffer();
  PieceBuffer(const PieceBuffer&) = delete;
  PieceBuffer& operator=(const PieceBuffer&) = delete;

  // At least `bytes` of writable memory; what it held before is lost. Throws std::bad_alloc when
  // no memory can be mapped.
  char* Reserve(size_t bytes);

 private:
  char* data_ = nullptr;
  size_t capacity_ = 0;
};

// Maps `bytes` of fresh memory into the calling thread's heap in one call (MADV_POPULATE_WRITE),
// so that the heap's next growth by that much takes no page fault per page. A scoring thread's
// heap grows by a few hundred KiB over its first piece; a new page's first fault cost 13 µs on
// the KVM guest of docs/PERFORMANCE.md ("Evaluation CLI"), and populating 128 pages took
// 0.2-0.8 ms. The memory is a block taken from the heap and freed, so it must come from the heap
// and stay with it once free. REQUIRES: M_MMAP_THRESHOLD and M_TRIM_THRESHOLD (mallopt) above
// `bytes`, as `rlscore score` sets them. False where nothing was mapped: a kernel before Linux
// 5.14, or no memory.
bool PopulateHeap(size_t bytes);

// The text of `piece` followed by kRolloutLinePadding readable bytes: a view into a mapped file is
// read into `buffer` and the view returned is valid until the buffer's next use; any other piece
// is its own text. Should the file read short (it shrank since it was mapped), the mapping's view
// is returned.
std::string_view LoadPiece(const InputPiece& piece, PieceBuffer* buffer);

// Where a piece ends.
struct PieceSize {
  size_t bytes = 256 << 10;  // at the first newline this many bytes in (unless `lines` is set)
  uint32_t lines = 0;        // if not 0: after this many non-blank lines
  // Guided pieces, when above `bytes`: a piece takes a `parts`-th of what is left of the input
  // (of the file, or of a pipe's chunk), at least `bytes` and at most `max_bytes`. Large pieces
  // early hand over less often (each handing-over wakes threads), and small ones at the end
  // leave no thread idle long.
  size_t max_bytes = 0;
  size_t parts = 8;  // 0 is taken as 1
  // The longest line that is read, its line ending ("\n" or "\r\n") not counted; 0 for no
  // limit.
  uint64_t max_line_bytes = 0;
};

// Reads `fd` to its end in pieces of `size`, in order, handing each to `emit`; stops early when
// `emit` answers false. The last piece may be shorter; so may one of a pipe whose writer pauses,
// in pieces of bytes. An error of reading comes after the pieces read before it were emitted.
absl::Status ReadPieces(int fd, PieceSize size, const std::function<bool(InputPiece)>& emit);

// A non-blank line of a piece: its text without the newline (and without a CR before it), and
// its number within the piece, from 1, blank lines counted.
struct PieceLine {
  std::string_view text;
  uint64_t number;
};

// Appends the non-blank lines of `text` to `lines`, and any blank one over `max_line_bytes` (if
// not 0), which the reader would have reported had a cut fallen inside it; returns how many
// lines it has, blank ones included (the numbering of the next piece goes on from there).
uint64_t SplitLines(std::string_view text, std::vector<PieceLine>* lines,
                    uint64_t max_line_bytes = 0);

}  // namespace rlscore::cli
