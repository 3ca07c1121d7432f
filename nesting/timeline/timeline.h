// The timeline passes, beyond the paper (docs/nesting.md, "Timeline
// passes"): after the paper's parent choice (section 5.1.1.3, Figure 4's
// "find nested pairs"), hard EM on each parent's timeline of events. The
// scoreboards of 5.1.1.2 relate a call only to the start of its parent,
// and the penalties of 5.1.1.3 only guess at how many children a parent
// should have; here every call into a node that makes calls is read as its
// arrival, each child's call and return, and its own return, and each pass
// learns the gaps and spawned sets per edge from the current assignment and
// re-chooses every call's parent by how likely its parent's timeline
// becomes. The learned state (gap densities, multiset frequencies) is per
// edge of the system, not per call.
#ifndef BBPROF_NESTING_TIMELINE_TIMELINE_H_
#define BBPROF_NESTING_TIMELINE_TIMELINE_H_

#include <cstdint>
#include <vector>

#include "nesting/assignment.h"
#include "nesting/bins.h"
#include "nesting/call_table.h"
#include "nesting/nesting.h"

namespace bbprof::nesting {

// The edges the timeline passes learn by: every (caller, callee keyed by
// its op) pair numbered in the order it first calls, each call's number,
// and the nodes that make calls. They need only the calls and their
// candidates, not the assignment, so AssignParents numbers them beside the
// scoreboards and the components. Not usable when there are too many edges
// for the gap keys: then no timeline pass runs.
struct TimelineEdges {
  std::vector<uint32_t> edge_of;  // by call
  std::vector<bool> makes_calls;  // by node
  size_t count = 0;
  bool usable = false;
};
TimelineEdges NumberTimelineEdges(const CallTable& table);

// Params::timeline_passes passes over an assignment made by the parent
// choice (parent_choice.h); none when `edges` is not usable. Each pass
// learns from every parent (in parts whose integer counts are summed),
// then re-chooses the calls of each part of `parts`
// (PartitionByComponents), the parts taken in turn by Params::threads
// threads.
void RunTimelinePasses(const Params& params, const BinScale& scale,
                       const Penalties& penalties, TimelineEdges&& edges,
                       const std::vector<std::vector<uint32_t>>& parts,
                       CallTable* table);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_TIMELINE_TIMELINE_H_
