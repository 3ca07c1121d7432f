#include "capture/decoders/op_names.h"

#include <algorithm>
#include <array>

#include "trace/op.h"

namespace bbprof::capture {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsHex(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
char Upper(char c) {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
}
char Lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  return Lower(c) - 'a' + 10;
}

bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !IsHex(s[i])) return false;
  }
  return true;
}

// Bytes of base64, base64url and the usual id alphabets.
bool IsTokenByte(char c) {
  return IsLetter(c) || IsDigit(c) ||
         std::string_view("-_.~=+").find(c) != std::string_view::npos;
}

std::string Upcase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Upper(c);
  return out;
}

}  // namespace

std::string_view FoldSegment(std::string_view s) {
  if (s.empty()) return {};
  size_t digits = 0, letters = 0, hex = 0, token = 0, transitions = 0;
  int last_class = 0;  // 1 letter, 2 digit
  for (char c : s) {
    digits += IsDigit(c);
    letters += IsLetter(c);
    hex += IsHex(c);
    token += IsTokenByte(c);
    int cls = IsLetter(c) ? 1 : IsDigit(c) ? 2 : 0;
    if (cls != 0) {
      transitions += last_class != 0 && cls != last_class;
      last_class = cls;
    }
  }
  // Numbers, and numbers with separators: 42, 3.14, 2024-05-01, 1.2.3.
  if (digits > 0 && letters == 0 && IsDigit(s.front()) &&
      std::all_of(s.begin(), s.end(), [](char c) {
        return IsDigit(c) ||
               std::string_view("-._:,+").find(c) != std::string_view::npos;
      })) {
    return "{n}";
  }
  if (IsUuid(s)) return "{uuid}";
  if (token != s.size()) return {};
  // Hashes: md5, sha1, Mongo ObjectIds, git revisions (a digit is required
  // so that words made of a-f, "facade", stay).
  if (s.size() >= 8 && hex == s.size() && digits > 0) return "{id}";
  // Ids that mix letters and digits ("a1b2c3d4", "item12345",
  // "dQw4w9WgXcQ"), but not names with a version in them ("v2beta1",
  // "sha256sum", "utf8mb4"): long, and digits many or interleaved.
  if (s.size() >= 8 && letters > 0 && digits > 0 &&
      (digits >= 4 || transitions >= 3)) {
    return "{id}";
  }
  // Long opaque tokens (JWTs, base64 blobs, long slugs) whatever their bytes.
  if (s.size() >= 32) return "{id}";
  return {};
}

std::string RouteTemplate(std::string_view target) {
  if (target == "*") return "*";
  std::string_view path = target;
  if (!path.starts_with('/')) {
    size_t scheme = path.find("://");
    if (scheme == std::string_view::npos) {
      return std::string(path);  // authority-form (CONNECT host:port)
    }
    path.remove_prefix(scheme + 3);
    size_t slash = path.find('/');
    path = slash == std::string_view::npos ? std::string_view("/")
                                           : path.substr(slash);
  }
  path = path.substr(0, path.find_first_of("?#"));
  std::string out;
  std::string segment;
  size_t i = 0;
  while (true) {
    size_t end = path.find('/', i);
    std::string_view raw = path.substr(
        i, end == std::string_view::npos ? std::string_view::npos : end - i);
    segment.clear();
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '%' && k + 2 < raw.size() && IsHex(raw[k + 1]) &&
          IsHex(raw[k + 2])) {
        segment.push_back(static_cast<char>(HexValue(raw[k + 1]) * 16 +
                                            HexValue(raw[k + 2])));
        k += 2;
      } else {
        segment.push_back(raw[k]);
      }
    }
    std::string_view fold = FoldSegment(segment);
    out += fold.empty() ? std::string_view(segment) : fold;
    if (end == std::string_view::npos) break;
    out.push_back('/');
    i = end + 1;
    // Enough for any op: MakeOp cuts at kMaxOpBytes anyway.
    if (out.size() > 2 * trace::kMaxOpBytes) break;
  }
  return out;
}

std::string HttpOp(std::string_view method, std::string_view target) {
  return trace::MakeOp({"http", method, RouteTemplate(target)});
}

std::string GrpcOp(std::string_view path) {
  return trace::MakeOp({"grpc", path.substr(0, path.find('?'))});
}

std::string DnsOp(uint16_t qtype) {
  struct Type {
    uint16_t code;
    const char* name;
  };
  static constexpr Type kTypes[] = {
      {1, "A"},      {2, "NS"},          {5, "CNAME"},    {6, "SOA"},
      {12, "PTR"},   {13, "HINFO"},      {15, "MX"},      {16, "TXT"},
      {17, "RP"},    {18, "AFSDB"},      {24, "SIG"},     {25, "KEY"},
      {28, "AAAA"},  {29, "LOC"},        {33, "SRV"},     {35, "NAPTR"},
      {36, "KX"},    {37, "CERT"},       {39, "DNAME"},   {41, "OPT"},
      {42, "APL"},   {43, "DS"},         {44, "SSHFP"},   {45, "IPSECKEY"},
      {46, "RRSIG"}, {47, "NSEC"},       {48, "DNSKEY"},  {49, "DHCID"},
      {50, "NSEC3"}, {51, "NSEC3PARAM"}, {52, "TLSA"},    {53, "SMIMEA"},
      {55, "HIP"},   {59, "CDS"},        {60, "CDNSKEY"}, {61, "OPENPGPKEY"},
      {62, "CSYNC"}, {63, "ZONEMD"},     {64, "SVCB"},    {65, "HTTPS"},
      {99, "SPF"},   {108, "EUI48"},     {109, "EUI64"},  {249, "TKEY"},
      {250, "TSIG"}, {251, "IXFR"},      {252, "AXFR"},   {255, "ANY"},
      {256, "URI"},  {257, "CAA"}};
  for (const Type& t : kTypes) {
    if (t.code == qtype) return trace::MakeOp({"dns", t.name});
  }
  // RFC 3597's spelling of a type without a mnemonic.
  return trace::MakeOp({"dns", "TYPE" + std::to_string(qtype)});
}

std::string RpcOp(uint32_t program, uint32_t version, uint32_t procedure) {
  // Procedure names as Wireshark's dissectors show them (packet-nfs.c,
  // packet-mount.c, packet-portmap.c, packet-nlm.c, packet-stat.c).
  static constexpr const char* kNfs2[] = {
      "NULL", "GETATTR",    "SETATTR", "ROOT",   "LOOKUP",  "READLINK",
      "READ", "WRITECACHE", "WRITE",   "CREATE", "REMOVE",  "RENAME",
      "LINK", "SYMLINK",    "MKDIR",   "RMDIR",  "READDIR", "STATFS"};
  static constexpr const char* kNfs3[] = {
      "NULL",   "GETATTR", "SETATTR",  "LOOKUP", "ACCESS",  "READLINK",
      "READ",   "WRITE",   "CREATE",   "MKDIR",  "SYMLINK", "MKNOD",
      "REMOVE", "RMDIR",   "RENAME",   "LINK",   "READDIR", "READDIRPLUS",
      "FSSTAT", "FSINFO",  "PATHCONF", "COMMIT"};
  static constexpr const char* kNfs4[] = {"NULL", "COMPOUND"};
  static constexpr const char* kMount[] = {"NULL",      "MNT",     "DUMP",
                                           "UMNT",      "UMNTALL", "EXPORT",
                                           "EXPORTALL", "PATHCONF"};
  static constexpr const char* kPortmap2[] = {"NULL",    "SET",  "UNSET",
                                              "GETPORT", "DUMP", "CALLIT"};
  static constexpr const char* kRpcbind[] = {
      "NULL",     "SET",         "UNSET",       "GETADDR",     "DUMP",
      "CALLIT",   "GETTIME",     "UADDR2TADDR", "TADDR2UADDR", "GETVERSADDR",
      "INDIRECT", "GETADDRLIST", "GETSTAT"};
  static constexpr const char* kNlm[] = {
      "NULL",        "TEST",     "LOCK",     "CANCEL",     "UNLOCK",
      "GRANTED",     "TEST_MSG", "LOCK_MSG", "CANCEL_MSG", "UNLOCK_MSG",
      "GRANTED_MSG", "TEST_RES", "LOCK_RES", "CANCEL_RES", "UNLOCK_RES",
      "GRANTED_RES", "",         "",         "",           "",
      "SHARE",       "UNSHARE",  "NM_LOCK",  "FREE_ALL"};
  static constexpr const char* kStatus[] = {
      "NULL", "STAT", "MON", "UNMON", "UNMON_ALL", "SIMU_CRASH", "NOTIFY"};
  struct Program {
    uint32_t number;
    const char* name;
    uint32_t min_version, max_version;
    std::span<const char* const> procedures;
  };
  static constexpr std::array<Program, 9> kPrograms{{
      {100003, "nfs", 2, 2, kNfs2},
      {100003, "nfs", 3, 3, kNfs3},
      {100003, "nfs", 4, 4, kNfs4},
      {100005, "mount", 1, 3, kMount},
      {100000, "portmap", 2, 2, kPortmap2},
      {100000, "portmap", 3, 4, kRpcbind},
      {100021, "nlm", 1, 4, kNlm},
      {100024, "status", 1, 1, kStatus},
      {100227, "nfsacl", 2, 3, std::span<const char* const>()},
  }};
  for (const Program& p : kPrograms) {
    if (p.number != program || version < p.min_version ||
        version > p.max_version) {
      continue;
    }
    std::string prefix = p.name + std::to_string(version);
    if (procedure < p.procedures.size() && *p.procedures[procedure] != '\0') {
      return trace::MakeOp({prefix, p.procedures[procedure]});
    }
    return trace::MakeOp({prefix, "PROC" + std::to_string(procedure)});
  }
  return trace::MakeOp({"rpc", std::to_string(program), std::to_string(version),
                        std::to_string(procedure)});
}

std::string RedisOp(std::string_view command) {
  return trace::MakeOp({"redis", Upcase(command.substr(0, 32))});
}

std::string MemcachedOp(std::string_view command) {
  return trace::MakeOp({"memcached", command.substr(0, 32)});
}

namespace {

// A small SQL scanner: enough to find a statement's verb and table without
// being fooled by comments, string literals or quoted identifiers.
class SqlScanner {
 public:
  explicit SqlScanner(std::string_view text) : s_(text.substr(0, 4096)) {}

  // The next token: a word (letters, digits, _ $ and '.'-joined parts), a
  // quoted identifier (quotes removed), a string literal ("'"), or one
  // punctuation byte. Empty at the end.
  std::string_view Next(bool* quoted = nullptr) {
    SkipBlanks();
    if (quoted != nullptr) *quoted = false;
    if (i_ >= s_.size()) return {};
    char c = s_[i_];
    if (c == '\'') {
      ++i_;
      while (i_ < s_.size()) {
        if (s_[i_] == '\'' && !(i_ + 1 < s_.size() && s_[i_ + 1] == '\''))
          break;
        i_ += s_[i_] == '\'' ? 2 : 1;
      }
      ++i_;
      return "'";
    }
    if (c == '"' || c == '`') {
      size_t start = ++i_;
      while (i_ < s_.size() && s_[i_] != c) ++i_;
      std::string_view word = s_.substr(start, i_ - start);
      ++i_;
      if (quoted != nullptr) *quoted = true;
      return word;
    }
    if (IsWordByte(c)) {
      size_t start = i_;
      while (i_ < s_.size() && (IsWordByte(s_[i_]) || s_[i_] == '.')) ++i_;
      return s_.substr(start, i_ - start);
    }
    return s_.substr(i_++, 1);
  }

 private:
  static bool IsWordByte(char c) {
    return IsLetter(c) || IsDigit(c) || c == '_' || c == '$' ||
           static_cast<unsigned char>(c) >= 0x80;
  }
  void SkipBlanks() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f') {
        ++i_;
      } else if (s_.substr(i_, 2) == "--" || c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (s_.substr(i_, 2) == "/*") {
        size_t end = s_.find("*/", i_ + 2);
        i_ = end == std::string_view::npos ? s_.size() : end + 2;
      } else {
        return;
      }
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](char x, char y) { return Upper(x) == Upper(y); });
}

// The table named at the scanner's position (after noise words), or "".
std::string TableAt(SqlScanner scan) {
  static constexpr std::string_view kSkip[] = {
      "ONLY",   "TABLE", "IF",      "NOT",           "EXISTS", "LOW_PRIORITY",
      "IGNORE", "QUICK", "DELAYED", "HIGH_PRIORITY", "INTO"};
  bool quoted = false;
  std::string_view tok = scan.Next(&quoted);
  while (!quoted &&
         std::any_of(std::begin(kSkip), std::end(kSkip),
                     [&](std::string_view k) { return IEquals(tok, k); })) {
    tok = scan.Next(&quoted);
  }
  if (tok.empty() ||
      (!quoted && (tok.size() == 1 && !IsLetter(tok[0]) && tok[0] != '_'))) {
    return {};
  }
  std::string table(tok.substr(0, 64));
  // Unquoted identifiers are case-blind in SQL: one name per table.
  if (!quoted) {
    for (char& c : table) c = Lower(c);
  }
  // schema."Table": keep the quoted part after a dot.
  if (!quoted && table.ends_with('.')) {
    std::string_view more = scan.Next(&quoted);
    if (quoted) table += std::string(more.substr(0, 64));
  }
  return table;
}

// The table a statement names after `keyword` (at nesting depth 0), or "".
std::string TableAfter(SqlScanner scan, std::string_view keyword) {
  int depth = 0;
  for (std::string_view tok = scan.Next(); !tok.empty(); tok = scan.Next()) {
    if (tok == "(") ++depth;
    if (tok == ")") --depth;
    if (tok == ";") return {};
    if (depth == 0 && IEquals(tok, keyword)) return TableAt(scan);
  }
  return {};
}

}  // namespace

std::string SqlOp(std::string_view protocol, std::string_view statement) {
  SqlScanner scan(statement);
  std::string_view verb = scan.Next();
  while (verb == "(") verb = scan.Next();
  if (verb.empty() || !IsLetter(verb[0])) return {};
  std::string v = Upcase(verb.substr(0, 32));
  std::string table;
  if (v == "SELECT" || v == "DELETE") {
    table = TableAfter(scan, "FROM");
  } else if (v == "INSERT" || v == "REPLACE") {
    table = TableAfter(scan, "INTO");
  } else if (v == "UPDATE" || v == "TRUNCATE" || v == "COPY" || v == "LOCK") {
    table = TableAt(scan);
  } else if (v == "CREATE" || v == "DROP" || v == "ALTER") {
    // Only for TABLE (CREATE [TEMP|UNLOGGED] TABLE [IF NOT EXISTS] t).
    SqlScanner look = scan;
    std::string_view next = look.Next();
    while (IEquals(next, "TEMP") || IEquals(next, "TEMPORARY") ||
           IEquals(next, "UNLOGGED") || IEquals(next, "GLOBAL") ||
           IEquals(next, "LOCAL")) {
      next = look.Next();
    }
    if (IEquals(next, "TABLE")) table = TableAfter(scan, "TABLE");
  }
  return trace::MakeOp({protocol, v, table});
}

std::string GenericOp(std::string_view protocol,
                      std::span<const std::byte> first) {
  std::string_view text(reinterpret_cast<const char*>(first.data()),
                        std::min<size_t>(first.size(), 17));
  size_t n = 0;
  while (n < text.size() && IsLetter(text[n])) ++n;
  if (n == 0 || n > 16) return {};
  if (n < text.size() &&
      std::string_view(" \t\r\n").find(text[n]) == std::string_view::npos) {
    return {};
  }
  return trace::MakeOp({protocol, text.substr(0, n)});
}

}  // namespace bbprof::capture
