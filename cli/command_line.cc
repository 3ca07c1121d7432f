#include "cli/command_line.h"

#include <charconv>
#include <iostream>
#include <sstream>

#include "base/progress.h"

namespace bbprof::cli {

CommandLine::CommandLine(std::string name, std::string usage,
                         std::string description)
    : name_(std::move(name)),
      usage_(std::move(usage)),
      description_(std::move(description)),
      options_("Options", 100, 50) {
  options_.add_options()("help,h", "show this help and exit")(
      "quiet,q", "print nothing on standard error but errors");
}

void CommandLine::AddPositional(const std::string& name,
                                const std::string& help, int min_count,
                                int max_count) {
  positionals_.push_back({name, help, min_count, max_count, {}});
}

const std::vector<std::string>& CommandLine::Positional(
    const std::string& name) const {
  for (const auto& p : positionals_) {
    if (p.name == name) return p.values;
  }
  static const std::vector<std::string> kEmpty;
  return kEmpty;
}

std::string CommandLine::HelpText() const {
  std::ostringstream out;
  out << "Usage: bbprof " << name_ << " " << usage_ << "\n\n"
      << description_ << "\n";
  if (!positionals_.empty()) {
    out << "\nArguments:\n";
    for (const auto& p : positionals_) {
      std::string label = "  " + p.name;
      if (label.size() < 24) label.resize(24, ' ');
      out << label << " " << p.help << "\n";
    }
  }
  out << "\n" << options_;
  if (!epilog_.empty()) out << "\n" << epilog_ << "\n";
  // A subcommand whose epilog spells out its own exit statuses (capture's
  // 130) replaces the generic line rather than repeating it.
  if (epilog_.find("Exit status:") == std::string::npos) {
    out << "\nExit status: 0 success, 1 bad input or failed run, 2 usage "
           "error.\n";
  }
  return out.str();
}

int CommandLine::UsageError(const std::string& message) const {
  std::cerr << "bbprof " << name_ << ": " << message << "\n"
            << "Try 'bbprof " << name_ << " --help' for more information.\n";
  return 2;
}

int CommandLine::Fail(const std::string& message) const {
  std::cerr << "bbprof " << name_ << ": " << message << "\n";
  return 1;
}

std::optional<int> CommandLine::Parse(std::span<const std::string> args) {
  std::vector<std::string> argv(args.begin(), args.end());
  // Positional words are collected under a hidden option and handed out to
  // the declared positionals below, so counts give precise messages.
  po::options_description all;
  all.add(options_);
  all.add_options()("bbprof-positional",
                    po::value<std::vector<std::string>>(), "");
  po::positional_options_description pos;
  pos.add("bbprof-positional", -1);
  std::vector<std::string> free;
  try {
    po::parsed_options parsed =
        po::command_line_parser(argv)
            .options(all)
            .positional(pos)
            .style(po::command_line_style::default_style &
                   ~po::command_line_style::allow_guessing)
            .run();
    po::store(parsed, vm_);
    if (vm_.count("help")) {
      std::cout << HelpText();
      return 0;
    }
    po::notify(vm_);
  } catch (const po::error& e) {
    return UsageError(e.what());
  }
  if (vm_.count("bbprof-positional")) {
    free = vm_["bbprof-positional"].as<std::vector<std::string>>();
  }
  quiet_ = vm_.count("quiet") > 0;
  Progress::SetQuiet(quiet_);

  size_t i = 0;
  for (size_t k = 0; k < positionals_.size(); ++k) {
    auto& p = positionals_[k];
    bool last = k + 1 == positionals_.size();
    int take = p.max_count < 0 ? static_cast<int>(free.size() - i)
                               : p.max_count;
    if (!last && p.max_count < 0) {
      // A repeating positional before others leaves room for their minimums.
      int reserve = 0;
      for (size_t j = k + 1; j < positionals_.size(); ++j) {
        reserve += positionals_[j].min_count;
      }
      take = std::max(0, static_cast<int>(free.size() - i) - reserve);
    }
    while (take-- > 0 && i < free.size()) p.values.push_back(free[i++]);
    if (static_cast<int>(p.values.size()) < p.min_count) {
      return UsageError("missing argument " + p.name);
    }
  }
  if (i < free.size()) {
    return UsageError("unexpected argument '" + free[i] + "'");
  }
  return std::nullopt;
}

void Inform(const CommandLine& cl, const std::string& message) {
  if (!cl.quiet()) std::cerr << message << "\n";
}

std::optional<int> ParseLimitFlag(const CommandLine& cl,
                                  const std::string& name, uint64_t* out) {
  const std::string text = cl.Get<std::string>(name);
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *out);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return cl.UsageError("--" + name +
                         " must be a whole number (0: no limit), not '" + text +
                         "'");
  }
  return std::nullopt;
}

void Warn(const CommandLine& cl, std::string_view message) {
  if (!cl.quiet())
    std::cerr << "bbprof " << cl.name() << ": warning: " << message << "\n";
}

}  // namespace bbprof::cli
