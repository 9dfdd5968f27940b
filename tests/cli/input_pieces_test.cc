#include "cli/input_pieces.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli/rollouts.h"

namespace rlscore::cli {
namespace {

struct Read {
  std::vector<std::string> pieces;
  uint64_t padding_checksum = 0;  // reads the padding after every piece, so a fault shows
};

// A piece that stands for a line over the limit, as Check writes it into Read::pieces.
std::string Overlong(uint64_t bytes) { return "<" + std::to_string(bytes) + " bytes>"; }

void Check(const std::vector<InputPiece>& pieces, Read* read) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const InputPiece& p = pieces[i];
    EXPECT_EQ(p.sequence, i);
    if (p.overlong_line != 0) {
      EXPECT_TRUE(p.text.empty());
      EXPECT_GT(p.bytes_end, bytes + p.overlong_line - 1);
      bytes = p.bytes_end;
      read->pieces.push_back(Overlong(p.overlong_line));
      continue;
    }
    ASSERT_FALSE(p.text.empty());
    bytes += p.text.size();
    EXPECT_EQ(p.bytes_end, bytes);
    if (i + 1 < pieces.size()) {
      EXPECT_EQ(p.text.back(), '\n') << i;
    }
    for (size_t k = 0; k < kRolloutLinePadding; ++k) {
      read->padding_checksum += static_cast<unsigned char>(p.text.data()[p.text.size() + k]);
    }
    read->pieces.emplace_back(p.text);
  }
}

Read ReadFile(const std::string& content, PieceSize size) {
  char path[] = "/tmp/rlscore-pieces-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  lseek(fd, 0, SEEK_SET);
  std::vector<InputPiece> pieces;
  EXPECT_TRUE(ReadPieces(fd, size, [&](InputPiece p) {
                pieces.push_back(std::move(p));
                return true;
              }).ok());
  // What a scoring thread reads of each piece, in one buffer reused from piece to piece: the
  // piece's bytes, then readable padding. Pieces of the mapping name the file; the last, when it
  // was copied out of the mapping, names none.
  PieceBuffer buffer;
  for (const InputPiece& p : pieces) {
    if (p.overlong_line != 0) continue;
    const std::string_view loaded = LoadPiece(p, &buffer);
    EXPECT_EQ(loaded, p.text) << p.sequence;
    if (p.fd >= 0) {
      EXPECT_EQ(p.fd, fd);
      EXPECT_EQ(p.file_offset, p.bytes_end - p.text.size());
      EXPECT_NE(loaded.data(), p.text.data());
      for (size_t k = 0; k < kRolloutLinePadding; ++k) {
        EXPECT_EQ(loaded.data()[loaded.size() + k], ' ');
      }
    }
  }
  close(fd);
  unlink(path);
  if (!pieces.empty()) {
    EXPECT_EQ(pieces.back().bytes_end, content.size());
  }
  Read read;
  Check(pieces, &read);
  return read;
}

Read ReadFile(const std::string& content, size_t piece_bytes) {
  return ReadFile(content, PieceSize{.bytes = piece_bytes, .lines = 0});
}

Read ReadPipe(const std::string& content, PieceSize size) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  std::thread writer([&] {
    for (size_t done = 0; done < content.size();) {
      const ssize_t n = write(fds[1], content.data() + done, content.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fds[1]);
  });
  std::vector<InputPiece> pieces;
  EXPECT_TRUE(ReadPieces(fds[0], size, [&](InputPiece p) {
                pieces.push_back(std::move(p));
                return true;
              }).ok());
  writer.join();
  close(fds[0]);
  if (!pieces.empty()) {
    EXPECT_EQ(pieces.back().bytes_end, content.size());
  }
  Read read;
  Check(pieces, &read);
  return read;
}

Read ReadPipe(const std::string& content, size_t piece_bytes) {
  return ReadPipe(content, PieceSize{.bytes = piece_bytes, .lines = 0});
}

std::string Joined(const Read& read) {
  std::string all;
  for (const std::string& p : read.pieces) all += p;
  return all;
}

std::string Lines(size_t total, size_t line_length, bool final_newline) {
  std::string s;
  while (s.size() < total) {
    s.append(std::min(line_length, total - s.size()), 'x');
    if (s.size() < total || final_newline) s.push_back('\n');
  }
  return s;
}

// Around the end of a page, where the padding after the last line stops fitting in the mapping.
TEST(InputPieces, AFileIsCutIntoWholeLinesWithPaddingAtEveryEnd) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t size : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, page - 65, page - 64,
                      page - 63, page - 1, page, page + 1, 3 * page + 17}) {
    for (bool final_newline : {true, false}) {
      for (size_t piece_bytes : {size_t{1}, size_t{100}, size_t{1} << 20}) {
        SCOPED_TRACE(testing::Message() << size << " " << final_newline << " " << piece_bytes);
        const std::string content = Lines(size, 37, final_newline);
        const Read read = ReadFile(content, piece_bytes);
        EXPECT_EQ(Joined(read), content);
        if (piece_bytes == 1) {
          // One line a piece.
          for (size_t i = 0; i + 1 < read.pieces.size(); ++i) {
            EXPECT_EQ(read.pieces[i].find('\n'), read.pieces[i].size() - 1);
          }
        }
      }
    }
  }
}

// A piece whose file can no longer be read (here: closed) is still its own text, through the
// mapping that the piece keeps alive.
TEST(InputPieces, APieceWhoseFileCannotBeReadIsTheMappingsView) {
  char path[] = "/tmp/rlscore-pieces-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string content = Lines(5000, 50, true);
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  std::vector<InputPiece> pieces;
  ASSERT_TRUE(ReadPieces(fd, {.bytes = 1000, .lines = 0}, [&](InputPiece p) {
                pieces.push_back(std::move(p));
                return true;
              }).ok());
  close(fd);
  unlink(path);
  ASSERT_GT(pieces.size(), 1u);
  PieceBuffer buffer;
  std::string joined;
  for (const InputPiece& p : pieces) {
    ASSERT_GE(p.fd, 0) << p.sequence;
    const std::string_view loaded = LoadPiece(p, &buffer);
    EXPECT_EQ(loaded.data(), p.text.data()) << p.sequence;
    joined += loaded;
  }
  EXPECT_EQ(joined, content);
}

// A piece buffer is whole 2 MiB pages aligned to one, which the kernel can back with huge pages,
// writable to its end; it keeps its memory while pieces fit and maps more when one does not.
TEST(PieceBuffer, IsWholeAlignedHugePagesThatGrow) {
  constexpr size_t kHugePage = size_t{2} << 20;
  PieceBuffer buffer;
  char* const first = buffer.Reserve(1000);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kHugePage, 0u);
  std::memset(first, 'a', kHugePage);
  EXPECT_EQ(buffer.Reserve(kHugePage), first);
  EXPECT_EQ(first[kHugePage - 1], 'a');
  // 3 MiB and an eighth more take two huge pages.
  char* const grown = buffer.Reserve(3 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(grown) % kHugePage, 0u);
  std::memset(grown, 'b', 2 * kHugePage);
  EXPECT_EQ(buffer.Reserve(2 * kHugePage), grown);
  EXPECT_EQ(grown[2 * kHugePage - 1], 'b');
}

// How many of the whole pages inside [p, p + bytes) are in memory (mincore), and of how many.
struct Residency {
  size_t resident = 0;
  size_t pages = 0;
};
Residency PagesInMemory(const void* p, size_t bytes) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = (at + page - 1) & ~(page - 1);
  const uintptr_t end = (at + bytes) & ~(page - 1);
  Residency r;
  if (end <= start) return r;
  std::vector<unsigned char> in((end - start) / page);
  if (mincore(reinterpret_cast<void*>(start), end - start, in.data()) != 0) return r;
  r.pages = in.size();
  for (const unsigned char v : in) r.resident += v & 1;
  return r;
}

// The heap grows into the memory PopulateHeap mapped: a block allocated after it is in memory
// before anything touches it. (The sanitizers' allocators hold freed blocks back from reuse.)
TEST(PopulateHeap, TheHeapGrowsIntoMappedMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator replaces the heap";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "a sanitizer's allocator replaces the heap";
#endif
#endif
  // As `rlscore score` sets them: blocks this size come from the heap and stay with it.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  constexpr size_t kPopulated = 512 << 10;
  // The method can tell: fresh memory that nothing touched is not in memory.
  void* const fresh =
      mmap(nullptr, kPopulated, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(fresh, MAP_FAILED);
  const Residency untouched = PagesInMemory(fresh, kPopulated);
  munmap(fresh, kPopulated);
  ASSERT_GT(untouched.pages, 0u);
  EXPECT_EQ(untouched.resident, 0u);

  bool populated = false;
  Residency after;
  std::thread([&] {  // a thread of its own, whose heap is new
    populated = PopulateHeap(kPopulated);
    void* const block = std::malloc(kPopulated / 2);
    after = PagesInMemory(block, kPopulated / 2);
    std::free(block);
  })
      .join();
  if (!populated) GTEST_SKIP() << "the kernel has no MADV_POPULATE_WRITE (before Linux 5.14)";
  ASSERT_GT(after.pages, 0u);
  EXPECT_EQ(after.resident, after.pages);
}

// Lines longer than the window in which the reader looks for the end of a piece.
TEST(InputPieces, LongLinesOfAFileAreCutWhole) {
  std::string content = Lines(3000, 10, true);
  content += std::string(70000, 'y') + "\n";
  content += Lines(100000, 33000, false);
  for (size_t piece_bytes : {size_t{1}, size_t{1000}, size_t{40000}, size_t{1} << 20}) {
    SCOPED_TRACE(piece_bytes);
    const Read read = ReadFile(content, piece_bytes);
    EXPECT_EQ(Joined(read), content);
    for (size_t i = 0; i + 1 < read.pieces.size(); ++i) EXPECT_EQ(read.pieces[i].back(), '\n');
  }
}

// Guided pieces: each a `parts`-th of what the file has left, within [bytes, max_bytes], to the
// first newline from there. Through a pipe, what is left is that of the chunk read so far.
TEST(InputPieces, GuidedPiecesShrinkWithWhatIsLeft) {
  std::mt19937 rng(3);
  std::string content;
  while (content.size() < 200000) content += std::string(1 + rng() % 80, 'g') + "\n";
  // Ending half a page into the mapping's last page leaves room for the padding there, so that
  // the cutter sees the whole file (AFileIsCutIntoWholeLinesWithPaddingAtEveryEnd covers ends).
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  content += std::string((page + page / 2 - (content.size() + 1) % page) % page, 'h') + "\n";
  ASSERT_EQ(content.size() % page, page / 2);
  const PieceSize size{.bytes = 1000, .lines = 0, .max_bytes = 20000, .parts = 6};
  const Read read = ReadFile(content, size);
  EXPECT_EQ(Joined(read), content);
  ASSERT_GT(read.pieces.size(), 20u);
  size_t left = content.size();
  for (size_t i = 0; i + 1 < read.pieces.size(); ++i) {
    SCOPED_TRACE(i);
    const std::string& piece = read.pieces[i];
    const size_t target = std::clamp<size_t>(left / 6, 1000, 20000);
    ASSERT_GE(piece.size(), target);
    EXPECT_EQ(piece.find('\n', target - 1), piece.size() - 1);
    left -= piece.size();
  }
  EXPECT_GE(read.pieces.front().size(), 20000u);
  EXPECT_LT(read.pieces.back().size(), 1000u + 81u + page);
  EXPECT_EQ(Joined(ReadPipe(content, size)), content);
  // No parts is one: the first piece takes all it may.
  const Read whole = ReadFile(content, {.bytes = 1000, .lines = 0, .max_bytes = 20000, .parts = 0});
  EXPECT_EQ(Joined(whole), content);
  EXPECT_GE(whole.pieces.front().size(), 20000u);
}

TEST(InputPieces, APipeIsReadInChunksAndALongLineGrowsOne) {
  std::string content = Lines(1000, 10, true);
  content += std::string((size_t{5} << 20) + 3, 'y') + "\n";  // longer than a chunk
  content += Lines(10000, 300, false);
  for (size_t piece_bytes : {size_t{1000}, size_t{256} << 10}) {
    const Read read = ReadPipe(content, piece_bytes);
    EXPECT_EQ(Joined(read), content);
  }
  EXPECT_EQ(Joined(ReadPipe("", 100)), "");
  EXPECT_EQ(Joined(ReadPipe("no newline", 100)), "no newline");
}

// A pipe whose writer sends a long line a little at a time: each burst that arrives is added to
// what came before, not copied with it into a new chunk (which took 10 minutes for a line of
// 300 MB that `cat` wrote, the reader waiting for each 64 KiB it sent).
TEST(InputPieces, APipeReadsALongLineThatArrivesSlowlyInLinearTime) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  constexpr size_t kLine = size_t{64} << 20;
  std::thread writer([&] {
    const std::string block(4096, 'z');
    EXPECT_EQ(write(fds[1], "a\n", 2), 2);
    for (size_t sent = 0; sent < kLine; sent += block.size()) {
      ASSERT_EQ(write(fds[1], block.data(), block.size()), static_cast<ssize_t>(block.size()));
    }
    EXPECT_EQ(write(fds[1], "\nb\n", 3), 3);
    close(fds[1]);
  });
  std::vector<std::string> lines;
  ASSERT_TRUE(ReadPieces(fds[0], {.bytes = 1000, .lines = 0}, [&](InputPiece p) {
                std::vector<PieceLine> split;
                SplitLines(p.text, &split);
                for (const PieceLine& l : split) {
                  lines.push_back(l.text.size() > 10 ? std::to_string(l.text.size())
                                                     : std::string(l.text));
                }
                return true;
              }).ok());
  writer.join();
  close(fds[0]);
  EXPECT_EQ(lines, (std::vector<std::string>{"a", std::to_string(kLine), "b"}));
}

// A line over the limit is handed on as a piece that stands for it, its bytes not held: from a
// file where a cut falls inside it (or it ends the file), from a pipe wherever it is. Its length
// leaves out the line ending, "\r\n" too, as the scoring threads measure a line; a line of
// exactly the limit is read.
TEST(InputPieces, ALineOverTheLimitIsAPieceOfItsOwn) {
  constexpr uint64_t kLimit = 20000;
  const std::string exact(kLimit, 'e');
  const std::string over(kLimit + 1, 'o');
  const std::string huge(300000, 'h');
  const std::string blank(kLimit + 5, ' ');
  const std::string content = "a\n" + exact + "\r\n" + over + "\n" + huge + "\r\nb\n" + blank +
                              "\n" + exact + "\n" + over + "\r";
  const std::string expected = "a\n" + exact + "\r\n" + Overlong(kLimit + 1) + Overlong(300000) +
                               "b\n" + Overlong(kLimit + 5) + exact + "\n" + Overlong(kLimit + 1);
  // Pieces of 1 byte and 1000 cut inside every line; lines of a piece of 1 MiB are left to the
  // scoring threads where no cut falls in them.
  for (const size_t bytes : {size_t{1}, size_t{1000}}) {
    SCOPED_TRACE(bytes);
    const PieceSize size{.bytes = bytes, .lines = 0, .max_line_bytes = kLimit};
    EXPECT_EQ(Joined(ReadFile(content, size)), expected);
    EXPECT_EQ(Joined(ReadPipe(content, size)), expected);
  }
  const PieceSize lines{.bytes = 0, .lines = 2, .max_line_bytes = kLimit};
  EXPECT_EQ(Joined(ReadFile(content, lines)), expected);
  EXPECT_EQ(Joined(ReadPipe(content, lines)), expected);
  // A pipe's chunk of 4 MiB holds a line of 1 MiB before the reader looks at it.
  const std::string wide = "x\n" + std::string(size_t{10} << 20, 'w') + "\ny";
  const PieceSize large{.bytes = 1 << 20, .lines = 0, .max_line_bytes = 1 << 20};
  EXPECT_EQ(Joined(ReadPipe(wide, large)), "x\n" + Overlong(size_t{10} << 20) + "y");
  EXPECT_EQ(Joined(ReadFile(wide, large)), "x\n" + Overlong(size_t{10} << 20) + "y");
  // Without a limit, nothing is over it.
  EXPECT_EQ(Joined(ReadPipe(content, 1000)), content);
}

// Pieces of lines, for requests to a server: exactly N non-blank lines each, blank ones riding
// along, from a file and from a pipe.
TEST(InputPieces, PiecesOfLinesCountTheNonBlankOnes) {
  std::string content;
  for (int i = 0; i < 1000; ++i)
    content += i % 7 == 3 ? "  \r\n" : std::string(i % 50 + 1, 'z') + "\n";
  content += "last without newline";
  for (const bool file : {true, false}) {
    std::vector<InputPiece> pieces;
    int fds[2];
    char path[] = "/tmp/rlscore-pieces-XXXXXX";
    int fd;
    std::thread writer;
    if (file) {
      fd = mkstemp(path);
      ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
      lseek(fd, 0, SEEK_SET);
    } else {
      ASSERT_EQ(pipe(fds), 0);
      fd = fds[0];
      writer = std::thread([&] {
        EXPECT_EQ(write(fds[1], content.data(), content.size()),
                  static_cast<ssize_t>(content.size()));
        close(fds[1]);
      });
    }
    ASSERT_TRUE(ReadPieces(fd, {.bytes = 0, .lines = 10}, [&](InputPiece p) {
                  pieces.push_back(std::move(p));
                  return true;
                }).ok());
    if (writer.joinable()) writer.join();
    close(fd);
    if (file) unlink(path);
    std::string joined;
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::vector<PieceLine> lines;
      SplitLines(pieces[i].text, &lines);
      if (i + 1 < pieces.size()) {
        EXPECT_EQ(lines.size(), 10u) << file << " " << i;
      }
      joined += pieces[i].text;
    }
    EXPECT_EQ(joined, content);
    EXPECT_EQ(pieces.size(), (1000 - 143 + 1 + 9) / 10) << file;
  }
}

// A writer that pauses after two lines (or keeps its end open after a bad one) gets them read
// without waiting for more input.
TEST(InputPieces, APipeWhoseWriterPausesIsReadMeanwhile) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::promise<void> seen;
  std::thread writer([&] {
    EXPECT_EQ(write(fds[1], "a\nb\n", 4), 4);
    seen.get_future().wait_for(std::chrono::seconds(60));
    close(fds[1]);
  });
  std::vector<std::string> pieces;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ReadPieces(fds[0], {.bytes = 1 << 20, .lines = 0}, [&](InputPiece p) {
                if (pieces.empty()) seen.set_value();
                pieces.emplace_back(p.text);
                return true;
              }).ok());
  writer.join();
  close(fds[0]);
  EXPECT_EQ(pieces, std::vector<std::string>{"a\nb\n"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(50));
}

TEST(InputPieces, AnEmptyFileHasNoPieces) { EXPECT_TRUE(ReadFile("", 100).pieces.empty()); }

TEST(InputPieces, StopsWhenAsked) {
  const std::string content = Lines(100000, 10, true);
  char path[] = "/tmp/rlscore-pieces-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  lseek(fd, 0, SEEK_SET);
  int calls = 0;
  EXPECT_TRUE(
      ReadPieces(fd, {.bytes = 100, .lines = 0}, [&](InputPiece) { return ++calls < 3; }).ok());
  EXPECT_EQ(calls, 3);
  close(fd);
  unlink(path);
}

TEST(InputPieces, SplitLinesNumbersEveryLineAndKeepsTheNonBlankOnes) {
  std::vector<PieceLine> lines;
  EXPECT_EQ(SplitLines("a\n\n  \r\nb\r\nc", &lines), 5u);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, "a");
  EXPECT_EQ(lines[0].number, 1u);
  EXPECT_EQ(lines[1].text, "b");
  EXPECT_EQ(lines[1].number, 4u);
  EXPECT_EQ(lines[2].text, "c");
  EXPECT_EQ(lines[2].number, 5u);
  lines.clear();
  EXPECT_EQ(SplitLines("x\n", &lines), 1u);
  EXPECT_EQ(SplitLines("\n\n", &lines), 2u);
  EXPECT_EQ(lines.size(), 1u);
  // A blank line over the limit is kept, to be reported as the reader reports one it skips.
  lines.clear();
  EXPECT_EQ(SplitLines("   \n    \r\n \t\t\t\t\r", &lines, 3), 3u);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].text, "    ");
  EXPECT_EQ(lines[1].text, " \t\t\t\t");
}

}  // namespace
}  // namespace rlscore::cli
