// The subcommand table. To add one: write cli/NAME_command.{h,cc} exporting
// `extern const Subcommand kNameCommand;`, include it here and add a row.
#include "cli/capture_command.h"
#include "cli/convert_command.h"
#include "cli/diff_command.h"
#include "cli/eval_command.h"
#include "cli/import_command.h"
#include "cli/nest_command.h"
#include "cli/convolve_command.h"
#include "cli/maketrace_command.h"
#include "cli/merge_command.h"
#include "cli/render_command.h"
#include "cli/report_command.h"
#include "cli/skewer_command.h"
#include "cli/stats_command.h"
#include "cli/subcommand.h"

namespace bbprof::cli {

std::span<const Subcommand> AllSubcommands() {
  static const Subcommand kTable[] = {
      kCaptureCommand,
      kStatsCommand,
      kMergeCommand,
      kSkewerCommand,
      kConvertCommand,
      kImportCommand,
      kNestCommand,
      kEvalCommand,
      kDiffCommand,
      kConvolveCommand,
      kMaketraceCommand,
      kRenderCommand,
      kReportCommand,
  };
  return kTable;
}

}  // namespace bbprof::cli
