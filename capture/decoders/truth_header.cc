#include "capture/decoders/truth_header.h"

#include <algorithm>

#include "trace/token.h"

namespace bbprof::capture {
namespace {

char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

std::string LowerCase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), Lower);
  return out;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](char x, char y) { return Lower(x) == Lower(y); });
}

std::string_view TrimBlanks(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// The part of `value` before the first `sep` (the whole value if none).
std::string_view Field(std::string_view value, char sep, size_t index) {
  for (size_t i = 0; i < index; ++i) {
    size_t at = value.find(sep);
    if (at == std::string_view::npos) return {};
    value.remove_prefix(at + 1);
  }
  return value.substr(0, value.find(sep));
}

std::string MakeToken(std::string_view id) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(id.size());
  for (char c : id) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f ||
        std::string_view("%(),;").find(c) != std::string_view::npos) {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  // "-" alone means "no pathid" in the trace format.
  if (out == "-") out = "%2D";
  return out;
}

}  // namespace

TruthHeaders::TruthHeaders(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    std::string lower = LowerCase(n);
    if (std::find(names_.begin(), names_.end(), lower) == names_.end()) {
      names_.push_back(std::move(lower));
    }
  }
}

std::string TruthHeaders::ValidateName(std::string_view name) {
  if (name.empty()) return "an empty header name";
  for (char c : name) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9');
    if (!alnum &&
        std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) {
      return "'" + std::string(name) +
             "' is not a header name (letters, digits and !#$%&'*+-.^_`|~ "
             "only)";
    }
  }
  return {};
}

int TruthHeaders::Rank(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (IEquals(names_[i], name)) return static_cast<int>(i);
  }
  return -1;
}

std::string RequestIdFromHeader(std::string_view name, std::string_view value) {
  value = TrimBlanks(value);
  std::string_view id = value;
  if (IEquals(name, "traceparent")) {
    // W3C Trace Context: version-traceid-parentid-flags.
    id = Field(value, '-', 1);
    if (id.empty()) id = value;
  } else if (IEquals(name, "uber-trace-id")) {
    // Jaeger: trace-id:span-id:parent-span-id:flags.
    id = Field(value, ':', 0);
  } else if (IEquals(name, "b3")) {
    // Zipkin single header: traceid-spanid[-sampled[-parentspanid]], or only
    // the sampling decision (no ids at all).
    id = Field(value, '-', 0);
    if (value.find('-') == std::string_view::npos &&
        (value == "0" || value == "1" || value == "d")) {
      id = {};
    }
  }
  return MakeToken(TrimBlanks(id));
}

void TruthHeaderScan::Header(std::string_view name, std::string_view value) {
  if (headers_ == nullptr) return;
  int rank = headers_->Rank(name);
  if (rank < 0 || (rank_ >= 0 && rank >= rank_)) return;
  std::string id = RequestIdFromHeader(name, value);
  if (id.empty()) return;
  // No trace reader accepts a longer pathid, so the writer would refuse the
  // record; an id that long is no request id a tracer makes.
  if (id.size() > trace::kMaxTokenBytes) {
    too_long_ = true;
    return;
  }
  rank_ = rank;
  pathid_ = std::move(id);
}

}  // namespace bbprof::capture
