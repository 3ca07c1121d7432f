// The block index of a binary trace (trace/binary/binary_format.h): read and
// checked whole before it is trusted, then used to open a reader on a block
// range or a time range without scanning what comes before it.
#include <fcntl.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/binary/binary_codec.h"
#include "trace/binary/binary_format.h"
#include "trace/op.h"
#include "trace/string_hash.h"
#include "trace/text/text_format.h"
#include "trace/timestamp.h"
#include "trace/token.h"

namespace bbprof::trace {
namespace binary {
namespace {

// An uncompressed binary trace opened for seeking, with its validated index.
struct IndexedFile {
  int fd = -1;
  BlockIndex index;
};

// Reads and checks PATH's block index (see binary_format.h). Every offset,
// count and length is checked against the file's size before it is used, so
// a damaged index is an error naming the byte offset, never a crash or a
// huge allocation.
Result<IndexedFile> OpenIndexed(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::Error(path + ": cannot open: " + std::strerror(errno));
  }
  IndexedFile file;
  file.fd = fd;
  auto fail = [&](std::string message) -> Result<IndexedFile> {
    ::close(fd);
    return Status::Error(path + ": " + std::move(message));
  };
  auto bad = [&](uint64_t at, const std::string& what) {
    return fail("corrupt binary trace: block index at byte offset " +
                std::to_string(at) + ": " + what);
  };
  auto read_at = [&](uint64_t at, uint8_t* dst, size_t size) {
    size_t got = 0;
    while (got < size) {
      ssize_t n =
          ::pread(fd, dst + got, size - got, static_cast<off_t>(at + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    return true;
  };
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail("a block range needs a regular file");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  uint8_t head[kBinaryFileHeaderBytes] = {};
  if (!read_at(0, head, std::min<uint64_t>(size, sizeof head))) {
    return fail("read failed");
  }
  if ((head[0] == 0x1f && head[1] == 0x8b) ||
      LoadU32(head) == 0xfd2fb528u) {  // gzip, zstd
    return fail(
        "a compressed trace cannot be read by block range (decompress it "
        "first)");
  }
  if (size < kBinaryFileHeaderBytes ||
      std::memcmp(head, kBinaryMagic.data(), kBinaryMagic.size()) != 0) {
    return fail("not a bbprof binary trace (bad magic bytes)");
  }
  const uint32_t version = LoadU32(head + kBinaryMagic.size());
  if (version < 2 || version > kBinaryVersion) {
    return fail("binary trace version " + std::to_string(version) +
                " has no block index (rewrite it with 'bbprof convert')");
  }
  constexpr uint64_t kMin =
      kBinaryFileHeaderBytes + kBinaryBlockHeaderBytes + kBinaryFooterBytes;
  if (size < kMin) {
    return fail("truncated binary trace (block index at byte offset " +
                std::to_string(size) + ")");
  }
  const uint64_t footer_at = size - kBinaryFooterBytes;
  uint8_t f[kBinaryFooterBytes];
  if (!read_at(footer_at, f, sizeof f)) return fail("read failed");
  if (std::memcmp(f + 28, kBinaryFooterTag.data(), 4) != 0) {
    return bad(footer_at, "no footer (truncated?)");
  }
  const uint64_t at = LoadU64(f), blocks = LoadU64(f + 8),
                 length = LoadU64(f + 16);
  if (at < kBinaryFileHeaderBytes + kBinaryBlockHeaderBytes || at > footer_at ||
      length != footer_at - at) {
    return bad(footer_at, "the footer places the index at byte offset " +
                              std::to_string(at) + " with " +
                              std::to_string(length) + " bytes");
  }
  if (blocks > length / kBinaryIndexEntryBytes) {
    return bad(footer_at, "the footer counts " + std::to_string(blocks) +
                              " blocks, more than the index holds");
  }
  // Zeroed padding after the index, as in a block, for the varints.
  std::vector<uint8_t> buf(length + kPadding, 0);
  if (!read_at(at, buf.data(), length)) return fail("read failed");
  if (libdeflate_crc32(0, buf.data(), length) != LoadU32(f + 24)) {
    return bad(at, "checksum mismatch");
  }
  BlockIndex& index = file.index;
  index.end_marker_offset = at - kBinaryBlockHeaderBytes;
  index.blocks.reserve(blocks);
  uint64_t expected = kBinaryFileHeaderBytes;
  for (uint64_t i = 0; i < blocks; ++i) {
    const uint64_t entry_at = at + i * kBinaryIndexEntryBytes;
    BinaryBlockInfo e = LoadEntry(buf.data() + i * kBinaryIndexEntryBytes);
    const uint64_t next =
        i + 1 < blocks ? LoadU64(buf.data() + (i + 1) * kBinaryIndexEntryBytes)
                       : index.end_marker_offset;
    if (e.offset != expected) {
      return bad(entry_at, "block " + std::to_string(i) + " at byte offset " +
                               std::to_string(e.offset) + " (expected " +
                               std::to_string(expected) + ")");
    }
    if (next <= e.offset + kBinaryBlockHeaderBytes ||
        next - e.offset - kBinaryBlockHeaderBytes > kBinaryMaxBlockPayload ||
        next > index.end_marker_offset) {
      return bad(entry_at, "block " + std::to_string(i) +
                               " ends at byte offset " + std::to_string(next) +
                               ", outside the blocks");
    }
    if (e.messages == 0 ? (e.min_ts != 0 || e.max_ts != 0)
                        : (!InTimeRange(e.min_ts) || !InTimeRange(e.max_ts) ||
                           e.min_ts > e.max_ts)) {
      return bad(entry_at,
                 "block " + std::to_string(i) + " has a bad time span");
    }
    index.blocks.push_back(e);
    expected = next;
  }
  if (expected != index.end_marker_offset) {
    return bad(at, "the blocks end at byte offset " + std::to_string(expected) +
                       ", not at the end marker");
  }
  // The definitions, read with a bounds check per field.
  const uint8_t* p = buf.data() + blocks * kBinaryIndexEntryBytes;
  const uint8_t* const end = buf.data() + length;
  auto names = [&](std::vector<std::string>* out, auto check) -> std::string {
    uint64_t count;
    if (!DecodeVarint(p, &count) || p > end ||
        count > static_cast<uint64_t>(end - p)) {
      return "bad count of definitions";
    }
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t len;
      if (!DecodeVarint(p, &len) || p > end ||
          len > static_cast<uint64_t>(end - p)) {
        return "definition " + std::to_string(i) + " runs past the index";
      }
      std::string_view name(reinterpret_cast<const char*>(p), len);
      p += len;
      if (std::string why = check(name); !why.empty()) return why;
      out->emplace_back(name);
    }
    return {};
  };
  std::string why = names(&index.node_names, CheckNodeName);
  if (why.empty()) why = names(&index.op_names, CheckOpToken);
  if (why.empty() && p != end) why = "bytes after the definitions";
  if (!why.empty()) {
    return bad(at + blocks * kBinaryIndexEntryBytes, "definitions: " + why);
  }
  return file;
}

// A reader of blocks [first, end) of the file `index` describes, read
// through `fd`, which the reader owns from here on (closed on failure too).
Result<std::unique_ptr<TraceReader>> OpenPlannedRange(
    const std::string& path, int fd, const BlockIndex& index, uint64_t first,
    uint64_t end, RangePlan plan, std::shared_ptr<NodeTable> nodes,
    const ReaderOptions& options) {
  plan.first = first;
  plan.entries.assign(index.blocks.begin() + static_cast<ptrdiff_t>(first),
                      index.blocks.begin() + static_cast<ptrdiff_t>(end));
  plan.end_offset = end < index.blocks.size() ? index.blocks[end].offset
                                              : index.end_marker_offset;
  for (uint64_t i = 0; i < first; ++i) {
    plan.message_base += index.blocks[i].messages;
  }
  const uint64_t begin =
      first < end ? index.blocks[first].offset : plan.end_offset;
  if (nodes == nullptr) nodes = std::make_shared<NodeTable>();
  return OpenRangeReader(fd, path, begin, std::move(plan), index,
                         std::move(nodes), options);
}

}  // namespace

}  // namespace binary

struct BinaryTraceIndex::Impl {
  std::string path;
  binary::IndexedFile file;
  ~Impl() { ::close(file.fd); }
};

BinaryTraceIndex::BinaryTraceIndex(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
BinaryTraceIndex::~BinaryTraceIndex() = default;

const std::string& BinaryTraceIndex::path() const { return impl_->path; }

const std::vector<BinaryBlockInfo>& BinaryTraceIndex::blocks() const {
  return impl_->file.index.blocks;
}

Result<std::unique_ptr<const BinaryTraceIndex>> OpenBinaryIndex(
    const std::string& path) {
  Result<binary::IndexedFile> file = binary::OpenIndexed(path);
  if (!file.ok()) return file.status();
  auto impl = std::make_unique<BinaryTraceIndex::Impl>();
  impl->path = path;
  impl->file = std::move(*file);
  return std::make_unique<const BinaryTraceIndex>(std::move(impl));
}

Result<std::vector<BinaryBlockInfo>> ReadBinaryBlockIndex(
    const std::string& path) {
  Result<binary::IndexedFile> file = binary::OpenIndexed(path);
  if (!file.ok()) return file.status();
  ::close(file->fd);
  return std::move(file->index.blocks);
}

uint64_t BinaryMessagesHint(const std::string& path) {
  // stat, not open: opening a FIFO could block, or take its data.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  Result<std::vector<BinaryBlockInfo>> blocks = ReadBinaryBlockIndex(path);
  if (!blocks.ok()) return 0;
  uint64_t messages = 0;
  for (const BinaryBlockInfo& b : *blocks) messages += b.messages;
  return messages;
}

Result<std::unique_ptr<TraceReader>> OpenBinaryBlockRange(
    const BinaryTraceIndex& index, uint64_t first, uint64_t end,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  const BinaryTraceIndex::Impl& impl = index.impl();
  const uint64_t n = impl.file.index.blocks.size();
  if (first > end || end > n) {
    return Status::Error(impl.path + ": block range [" + std::to_string(first) +
                         ", " + std::to_string(end) + ") is not within its " +
                         std::to_string(n) + " blocks");
  }
  // A descriptor of its own for the reader (pread keeps no shared offset),
  // on the file the index was read from, whatever the path names now.
  const int fd = ::fcntl(impl.file.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    return Status::Error(impl.path + ": cannot open: " + std::strerror(errno));
  }
  return binary::OpenPlannedRange(impl.path, fd, impl.file.index, first, end,
                                  binary::RangePlan{}, std::move(nodes),
                                  options);
}

Result<std::unique_ptr<TraceReader>> OpenBinaryBlockRange(
    const std::string& path, uint64_t first, uint64_t end,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  Result<std::unique_ptr<const BinaryTraceIndex>> index = OpenBinaryIndex(path);
  if (!index.ok()) return index.status();
  return OpenBinaryBlockRange(**index, first, end, std::move(nodes), options);
}

Result<std::unique_ptr<TraceReader>> OpenBinaryTimeRange(
    const std::string& path, TimeNs from_ns, TimeNs to_ns,
    std::shared_ptr<NodeTable> nodes, const ReaderOptions& options) {
  Result<binary::IndexedFile> file = binary::OpenIndexed(path);
  if (!file.ok()) return file.status();
  // The first and last blocks whose span meets [from, to); in a trace in
  // time order, the blocks between them are all in it too.
  const std::vector<BinaryBlockInfo>& blocks = file->index.blocks;
  uint64_t first = blocks.size(), last = 0;
  for (uint64_t i = 0; i < blocks.size(); ++i) {
    const BinaryBlockInfo& b = blocks[i];
    if (b.messages == 0 || b.max_ts < from_ns || b.min_ts >= to_ns) continue;
    first = std::min(first, i);
    last = i;
  }
  if (first == blocks.size()) last = first - 1;  // none: an empty range
  Result<std::unique_ptr<TraceReader>> inner =
      binary::OpenPlannedRange(path, file->fd, file->index, first, last + 1,
                               binary::RangePlan{}, nodes, options);
  if (!inner.ok()) return inner.status();
  return binary::FilterTimeRange(std::move(*inner), from_ns, to_ns,
                                 !options.allow_unsorted);
}

}  // namespace bbprof::trace
