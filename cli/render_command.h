// bbprof render: draws a nest or convolve result JSON as Graphviz pictures.
#ifndef BBPROF_CLI_RENDER_COMMAND_H_
#define BBPROF_CLI_RENDER_COMMAND_H_

#include "cli/subcommand.h"

namespace bbprof::cli {
extern const Subcommand kRenderCommand;
}  // namespace bbprof::cli

#endif  // BBPROF_CLI_RENDER_COMMAND_H_
