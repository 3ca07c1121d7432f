// bbprof capture: reduces packets to trace records (paper sections 6.1, 6.2),
// live from an interface or from pcap/pcapng files, with tcpdump's flags.
// The work is in capture/: PacketSource (libpcap), Reducer (flows, decoders,
// naming), TraceOutput (files, rotation). This file is the daemon around
// them: flags, privilege dropping, signals, counters.
#include "cli/capture_command.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "base/atomic_file.h"
#include "base/interrupt.h"
#include "base/progress.h"
#include "capture/capture_reader.h"
#include "capture/pcap_source.h"
#include "capture/reducer.h"
#include "capture/trace_output.h"
#include "cli/command_line.h"
#include "cli/naming_flags.h"
#include "trace/timestamp.h"

namespace bbprof::cli {

namespace {

volatile std::sig_atomic_t g_report = 0;
std::atomic<capture::PacketSource*> g_source{nullptr};

// pcap_breakloop is documented as safe to call from a signal handler.
void BreakSourceLoop() {
  if (capture::PacketSource* s = g_source.load()) s->BreakLoop();
}

void OnReportSignal(int /*sig*/) {
  g_report = 1;
  BreakSourceLoop();
}

// SIGINT and SIGTERM stop the loop gracefully (base/interrupt.h: a flag, the
// loop broken, a blocking read from a pipe woken); a second one ends the
// process at once. SIGUSR1 prints the counters.
void InstallSignals() {
  SetGracefulInterrupts(&BreakSourceLoop);
  struct sigaction sa {};
  sa.sa_handler = &OnReportSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking read returns to the loop
  sigaction(SIGUSR1, &sa, nullptr);
}

// -Z USER: after the interface is open, become USER (tcpdump -Z).
Status DropPrivileges(const std::string& user) {
  struct passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) return Status::Error("-Z: no such user '" + user + "'");
  if (geteuid() != 0) {
    if (pw->pw_uid == geteuid()) return Status::Ok();
    return Status::Error("-Z " + user + ": only root can change user");
  }
  if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
      setuid(pw->pw_uid) != 0) {
    return Status::Error("-Z " + user + ": cannot change to this user");
  }
  return Status::Ok();
}

void PrintCounters(const capture::Reducer& reducer,
                   const capture::PacketSource* live) {
  std::string out = "bbprof capture: counters\n";
  if (live != nullptr) {
    capture::SourceStats s = live->Stats();
    out += "  kernel_received " + std::to_string(s.received) + "\n";
    out += "  kernel_drops " + std::to_string(s.kernel_drops) + "\n";
    out += "  interface_drops " + std::to_string(s.if_drops) + "\n";
  }
  for (const auto& [name, n] : reducer.counters()) {
    out += "  " + name + " " + std::to_string(n) + "\n";
  }
  std::fputs(out.c_str(), stderr);
}

bool ParseSeconds(const std::string& text, trace::TimeNs* out) {
  trace::TimeNs ns = 0;
  if (!trace::ParseSecondsFlag(text, &ns) || ns < 0) return false;
  *out = ns;
  return true;
}

// -C: millions of bytes, as tcpdump counts them, fractions allowed (0.5 is
// 500000 bytes); at least one byte, at most an exabyte.
bool ParseMillionsOfBytes(const std::string& text, uint64_t* bytes) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) {
    return false;
  }
  char* end = nullptr;
  errno = 0;
  double mb = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(mb) ||
      mb <= 0 || mb > 1e12) {
    return false;
  }
  double b = std::round(mb * 1e6);
  if (b < 1) return false;
  *bytes = static_cast<uint64_t>(b);
  return true;
}

int Run(std::span<const std::string> args) {
  CommandLine cl(
      "capture",
      "(-i IFACE | -r FILE [-r FILE]...) [-o OUT] [options] [FILTER...]",
      "Reduces packets to a trace of calls and returns (or, with --messages, "
      "of messages),\npassively: live from an interface (a mirrored switch "
      "port) or from pcap/pcapng\nfiles. TCP streams are reassembled; ONC "
      "RPC, DNS, HTTP/1.x, HTTP/2 and gRPC are\ndecoded by their framing, "
      "Redis, memcached, PostgreSQL and MySQL by theirs, any\nother TCP "
      "protocol by the generic request/response rule. Each call is named by\n"
      "its operation (http:GET:/item/{n}, nfs3:GETATTR). Node names are IP "
      "addresses\n(host granularity) or server IP:port (service granularity), "
      "renamed by --names.\nUndecodable packets are counted by reason, never "
      "fatal; the counters are printed\nat exit (and on SIGUSR1) and written "
      "as #meta lines at the end of every file.\nSIGINT or SIGTERM stops a "
      "live capture cleanly: nothing captured is lost.");
  cl.options().add_options()("interface,i", po::value<std::string>(),
                             "capture live on IFACE")(
      "read,r", po::value<std::vector<std::string>>(),
      "read a pcap/pcapng file ('-' = standard input; .gz/.zst read "
      "compressed); several are read in order as one capture")(
      "output,o", po::value<std::string>()->default_value("-"),
      "output trace ('-' = standard output), or a folder for rotated files")(
      "format", po::value<std::string>(),
      "output form: text or binary (default: from OUT's name; text in a "
      "folder)")(
      "rotate-size,C", po::value<std::string>(),
      "start a new file in the OUT folder once one holds about this many "
      "million bytes (uncompressed; fractions allowed: 0.5)")(
      "rotate-seconds,G", po::value<std::string>(),
      "start a new file in the OUT folder every this many seconds of "
      "capture time")("snaplen,s", po::value<int>()->default_value(262144),
                      "bytes to capture of each packet (live)")(
      "buffer-size,B", po::value<int>()->default_value(32768),
      "kernel capture buffer in KiB (live; larger means fewer drops in "
      "bursts; tcpdump's default is 2048)")(
      "filter,f", po::value<std::string>(),
      "BPF filter expression (or give it as trailing words)")(
      "user,Z", po::value<std::string>(),
      "drop privileges to USER once the interface is open")(
      "no-promiscuous-mode,p", "do not put the interface in promiscuous mode")(
      "count,c", po::value<uint64_t>(), "stop after this many packets")(
      "list-interfaces,D", "list the interfaces libpcap can capture on")(
      "decode", po::value<std::vector<std::string>>(),
      "force a decoder on a server port: tcp/8080=http, udp/5353=dns "
      "(repeatable; see --list-decoders)")(
      "list-decoders", "list the decoders and their well-known ports")(
      "truth-header", po::value<std::vector<std::string>>(),
      "record the request id that HTTP/1.x and HTTP/2 calls carry in header "
      "NAME as the pathid of the call and its return (ground truth for "
      "bbprof eval; repeatable, the first given wins; traceparent, "
      "uber-trace-id and b3 give their trace id)")(
      "messages",
      "emit every UDP datagram and TCP message as a MSG record "
      "(for bbprof convolve)")(
      "max-ops", po::value<std::string>()->default_value("1000"),
      "distinct operation names kept per server and protocol; new ones "
      "beyond are recorded as PROTO:VERB:{other} and counted as "
      "ops_capped (0: no limit)")(
      "reorder-window", po::value<std::string>()->default_value("2"),
      "seconds records wait for late packets before being written")(
      "max-flows",
      po::value<std::string>()->default_value(
          std::to_string(capture::ReducerOptions::kDefaultMaxFlows)),
      "TCP connections and UDP flows followed at once; beyond, the least "
      "recently active is ended early and counted as flows_evicted (0: no "
      "limit)")(
      "tcp-idle-timeout", po::value<std::string>()->default_value("300"),
      "seconds of capture time after which a silent TCP connection is ended "
      "(counted as flows_ended_idle)")(
      "udp-idle-timeout", po::value<std::string>()->default_value("60"),
      "seconds of capture time after which a silent UDP flow is ended")(
      "capture-host", po::value<std::string>(),
      "record in #meta which host this capture was taken on (for "
      "bbprof skewer --estimate)");
  AddNamingFlags(cl, /*capture=*/true);
  cl.AddPositional("FILTER", "BPF filter words, as tcpdump takes them", 0, -1);
  cl.SetEpilog(
      "Examples:\n"
      "  bbprof capture -r dump.pcap -o dump.trace\n"
      "  sudo bbprof capture -i eth1 -Z nobody -o traces/ -G 600 tcp port 80 "
      "or port 53\n"
      "  bbprof capture -r dump.pcapng --granularity service --names hosts.map "
      "--decode tcp/8080=http -o -\n"
      "Exit status: 0 done (a live capture stopped by SIGINT/SIGTERM is done),"
      " 1 bad input\nor I/O error, 2 bad usage, 130 an offline read "
      "interrupted. A failed or\ninterrupted offline read writes what it "
      "decoded to OUT.partial and leaves an\nexisting OUT as it was.");
  if (auto rc = cl.Parse(args)) return *rc;

  if (cl.Has("list-interfaces")) {
    auto list = capture::PacketSource::ListInterfaces();
    if (!list.ok()) return cl.Fail(list.status());
    for (const std::string& s : *list) std::cout << s << "\n";
    return kExitOk;
  }
  if (cl.Has("list-decoders")) {
    for (const capture::DecoderInfo& d : capture::AllDecoders()) {
      std::string line = d.name;
      for (uint16_t p : d.tcp_ports) line += " tcp/" + std::to_string(p);
      for (uint16_t p : d.udp_ports) line += " udp/" + std::to_string(p);
      std::cout << line << "\n";
    }
    return kExitOk;
  }

  bool live = cl.Has("interface");
  std::vector<std::string> files;
  if (cl.Has("read")) files = cl.Get<std::vector<std::string>>("read");
  if (live == !files.empty()) {
    return cl.UsageError(live ? "give -i or -r, not both"
                              : "missing -i IFACE or -r FILE");
  }
  std::string filter;
  if (cl.Has("filter")) filter = cl.Get<std::string>("filter");
  for (const std::string& w : cl.Positional("FILTER")) {
    if (cl.Has("filter")) {
      return cl.UsageError("give the filter with -f or as trailing words, "
                           "not both (stray '" + w + "')");
    }
    filter += (filter.empty() ? "" : " ") + w;
  }

  capture::ReducerOptions ro;
  NamingFlags naming;
  if (auto rc = ParseNamingFlags(cl, /*capture=*/true, &naming)) return *rc;
  ro.granularity = naming.granularity;
  ro.names = std::move(naming.names);
  if (cl.Has("decode")) {
    for (const std::string& d : cl.Get<std::vector<std::string>>("decode")) {
      capture::ForcedDecoder f;
      if (std::string why = capture::ParseForcedDecoder(d, &f); !why.empty()) {
        return cl.UsageError("--decode: " + why);
      }
      ro.forced.push_back(f);
    }
  }
  if (cl.Has("truth-header")) {
    const auto names = cl.Get<std::vector<std::string>>("truth-header");
    for (const std::string& n : names) {
      if (std::string why = capture::TruthHeaders::ValidateName(n);
          !why.empty()) {
        return cl.UsageError("--truth-header: " + why);
      }
    }
    ro.truth_headers = capture::TruthHeaders(names);
  }
  ro.messages = cl.Has("messages");
  uint64_t max_ops = 0;
  if (auto rc = ParseLimitFlag(cl, "max-ops", &max_ops)) return *rc;
  ro.max_ops_per_server =
      max_ops == 0 ? SIZE_MAX : static_cast<size_t>(max_ops);
  uint64_t max_flows = 0;
  if (auto rc = ParseLimitFlag(cl, "max-flows", &max_flows)) return *rc;
  ro.max_flows = static_cast<size_t>(max_flows);
  for (auto [flag, timeout] :
       {std::pair{"tcp-idle-timeout", &ro.tcp_idle_timeout},
        std::pair{"udp-idle-timeout", &ro.udp_idle_timeout}}) {
    if (!ParseSeconds(cl.Get<std::string>(flag), timeout) || *timeout == 0) {
      return cl.UsageError(std::string("--") + flag +
                           " must be a positive number of seconds, not '" +
                           cl.Get<std::string>(flag) + "'");
    }
  }
  ro.on_limit = [&cl](std::string_view what) { Warn(cl, what); };
  if (!ParseSeconds(cl.Get<std::string>("reorder-window"), &ro.reorder_window)) {
    return cl.UsageError("--reorder-window must be a number of seconds, not '" +
                         cl.Get<std::string>("reorder-window") + "'");
  }

  capture::OutputOptions oo;
  oo.path = cl.Get<std::string>("output");
  struct stat st {};
  oo.directory = (oo.path != "-" && stat(oo.path.c_str(), &st) == 0 &&
                  S_ISDIR(st.st_mode)) ||
                 (!oo.path.empty() && oo.path.back() == '/');
  if ((cl.Has("rotate-size") || cl.Has("rotate-seconds")) && !oo.directory) {
    return cl.UsageError("-C and -G rotate files in a folder: give -o an "
                         "existing folder (or a name ending in '/')");
  }
  if (oo.directory && stat(oo.path.c_str(), &st) != 0 &&
      mkdir(oo.path.c_str(), 0777) != 0) {
    return cl.Fail("cannot create folder '" + oo.path + "'");
  }
  oo.format = oo.directory ? trace::TraceFormat::kText
                           : trace::FormatForPath(oo.path);
  if (cl.Has("format") &&
      !trace::ParseTraceFormat(cl.Get<std::string>("format"), &oo.format)) {
    return cl.UsageError("--format must be text or binary, not '" +
                         cl.Get<std::string>("format") + "'");
  }
  if (cl.Has("rotate-size")) {
    const std::string text = cl.Get<std::string>("rotate-size");
    if (!ParseMillionsOfBytes(text, &oo.rotate_bytes)) {
      return cl.UsageError(
          "-C must be a positive number of millions of bytes (as tcpdump's "
          "-C; e.g. 100 or 0.5), not '" +
          text + "'");
    }
  }
  if (cl.Has("rotate-seconds") &&
      (!ParseSeconds(cl.Get<std::string>("rotate-seconds"), &oo.rotate_interval) ||
       oo.rotate_interval <= 0)) {
    return cl.UsageError("-G must be a positive number of seconds, not '" +
                         cl.Get<std::string>("rotate-seconds") + "'");
  }
  int snaplen = cl.Get<int>("snaplen");
  if (snaplen <= 0) return cl.UsageError("-s must be positive");
  uint64_t max_packets = cl.Has("count") ? cl.Get<uint64_t>("count") : 0;

  // Open the packet sources first: a missing interface, a permission
  // problem or a bad filter is reported before any output exists.
  std::vector<std::unique_ptr<capture::PacketSource>> sources;
  if (live) {
    capture::LiveOptions lo;
    lo.interface = cl.Get<std::string>("interface");
    lo.snaplen = snaplen;
    lo.promiscuous = !cl.Has("no-promiscuous-mode");
    // A daemon left running on a monitoring box must ride out bursts and
    // the pauses of writing a file: 32 MiB by default, 16 times libpcap's.
    int kib = cl.Get<int>("buffer-size");
    if (kib <= 0 || kib > 2 * 1024 * 1024) {
      return cl.UsageError("-B must be between 1 and 2097152 KiB");
    }
    lo.buffer_bytes = kib * 1024;
    auto src = capture::PacketSource::OpenLive(lo);
    if (!src.ok()) return cl.Fail(src.status());
    sources.push_back(std::move(*src));
  } else {
    for (const std::string& f : files) {
      auto src = capture::PacketSource::OpenFile(f);
      if (!src.ok()) return cl.Fail(src.status());
      sources.push_back(std::move(*src));
    }
  }
  for (auto& s : sources) {
    if (Status st2 = s->SetFilter(filter); !st2.ok()) {
      return cl.UsageError(st2.message());
    }
  }
  if (cl.Has("user")) {
    if (Status s = DropPrivileges(cl.Get<std::string>("user")); !s.ok()) {
      return cl.Fail(s);
    }
  }
  // Before the first packet, as whoever we now are: an output we cannot
  // write (a root-only folder after -Z nobody) fails now, not at the first
  // record of a capture that already said it was listening.
  if (Status s = CheckOutputWritable(oo.path); !s.ok()) {
    return cl.Fail(s.message() +
                   (cl.Has("user")
                        ? " (as user " + cl.Get<std::string>("user") + ")"
                        : std::string()));
  }

  if (live) {
    // As tcpdump does: tells a person (or a script waiting to start load)
    // that packets are being captured from now on.
    Inform(cl, "listening on " + sources[0]->name() + ", link type " +
                   std::to_string(sources[0]->link_type()) +
                   ", snapshot length " + std::to_string(sources[0]->snaplen()) +
                   " bytes");
  }
  oo.header_meta.push_back(
      capture::CaptureHeaderMeta(*sources[0], files.size(), ro, filter));
  if (!live) {
    for (const std::string& f : files) {
      if (f.find_first_of(" \t\n") == std::string::npos) {
        oo.header_meta.push_back("capture_file=" + f);
      }
    }
  }
  if (cl.Has("capture-host")) {
    oo.header_meta.push_back("capture_host=" + cl.Get<std::string>("capture-host"));
  }

  trace::NodeTable nodes;
  nodes.SetLimit(static_cast<size_t>(naming.max_nodes));
  std::unique_ptr<capture::Reducer> reducer;
  const capture::PacketSource* live_source = live ? sources[0].get() : nullptr;
  capture::TraceOutput output(oo, &nodes, [&]() {
    return std::vector<std::string>{capture::CaptureStatsMeta(*reducer, *sources[0])};
  });
  reducer = std::make_unique<capture::Reducer>(
      ro, &nodes, [&](const trace::Record& r) { return output.Write(r); });

  InstallSignals();
  Progress progress(live ? "capturing (packets)" : "reading (packets)", 0,
                    cl.quiet());
  Status failure;
  bool interrupted = false;
  for (auto& src : sources) {
    g_source.store(src.get());
    uint32_t link = src->link_type();
    auto on_frame = [&](const capture::Frame& f) {
      if (!failure.ok()) return;
      Status s = reducer->AddFrame(link, f.ts, f.data, f.wire_length);
      if (!s.ok()) {
        failure = s;
        src->BreakLoop();
      }
    };
    while (failure.ok()) {
      if (InterruptRequested()) {
        interrupted = true;
        break;
      }
      if (g_report) {
        g_report = 0;
        PrintCounters(*reducer, live_source);
      }
      int budget = -1;
      if (max_packets > 0) {
        uint64_t left = max_packets - reducer->packets();
        if (left == 0) break;
        budget = static_cast<int>(std::min<uint64_t>(left, 1u << 16));
      }
      auto n = src->Dispatch(budget, on_frame);
      if (!n.ok()) {
        // A read cut short by the signal is the interruption, not an error.
        if (InterruptRequested()) {
          interrupted = true;
        } else {
          failure = n.status();
        }
        break;
      }
      progress.Update(reducer->packets());
      if (src->at_end()) break;
    }
    g_source.store(nullptr);
    if (interrupted || !failure.ok()) break;
  }
  progress.Finish();

  // Whatever happened, write what was decoded and close the files cleanly.
  // The last file is complete unless the capture failed or an offline read
  // was cut short; then it keeps its .partial name (capture/trace_output.h)
  // and an existing output of the same name is left as it was.
  Status finish = reducer->Finish();
  const bool complete = finish.ok() && failure.ok() && !(interrupted && !live);
  Status close = output.Close(complete);
  if (!cl.quiet()) PrintCounters(*reducer, live_source);
  std::string partial_note;
  if (output.left_partial()) {
    partial_note =
        " (the records decoded before it are in " + output.files().back() +
        "; " +
        (oo.directory ? "the files before it are complete"
                      : "an existing " + oo.path + " is left as it was") +
        ")";
  } else if (!output.files().empty() && oo.path != "-") {
    partial_note = " (the records decoded before it were written to " +
                   output.files().back() + ")";
  }
  if (!finish.ok()) return cl.Fail(finish.message() + partial_note);
  if (!close.ok()) return cl.Fail(close);
  if (!failure.ok()) return cl.Fail(failure.message() + partial_note);
  if (interrupted && !live) {
    Inform(cl, "interrupted" + partial_note);
    return kExitInterrupted;
  }
  const auto counters = reducer->counters();
  const uint64_t written = counters.at("records_call") +
                           counters.at("records_ret") +
                           counters.at("records_msg");
  const size_t files_written = output.files().size();
  Inform(cl, "wrote " + std::to_string(written) +
                 (written == 1 ? " record to " : " records to ") +
                 (oo.directory ? std::to_string(files_written) +
                                     (files_written == 1 ? " file in " : " files in ") +
                                     oo.path
                               : oo.path == "-" ? std::string("standard output")
                                                : oo.path));
  return kExitOk;
}

}  // namespace

const Subcommand kCaptureCommand = {
    "capture",
    "reduce packets (live or pcap/pcapng files) to a trace of calls and returns",
    Run};

}  // namespace bbprof::cli
