// Client folding, beyond the paper: the callers of a trace that are never
// called themselves are its external clients (browsers, load generators,
// other systems). Each client address starts its own pattern, so a capture
// with 50 client addresses shows 50 copies of every path pattern. Folding
// names every such client by the
// group it belongs to (by default one node, `clients`), after calls are
// paired with their returns (callids are per caller, so pairing must see
// the real callers) and before the nesting steps, which never see a client
// as a callee and so are unchanged by it.
#ifndef BBPROF_NESTING_STEPS_CLIENT_FOLDING_H_
#define BBPROF_NESTING_STEPS_CLIENT_FOLDING_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bbprof::nesting {

inline constexpr std::string_view kFoldedClientsName = "clients";

struct ClientFolding {
  enum class Mode {
    kFold,   // every external client becomes `clients`
    kKeep,   // clients stay apart (the paper's behaviour)
    kGroup,  // each client becomes group(name); an empty group keeps it
  };
  Mode mode = Mode::kFold;
  std::function<std::string(std::string_view client)> group;
  // How it was asked for (`fold`, `keep`, `cidr:/24`), for the result's
  // params, so that a result can be re-run the same way.
  std::string spec = "fold";
};

// Per node id, the node it is named as once clients are folded (itself for
// every node that is not an external client). `calls[n]`: node n makes a
// call; `called[n]`: node n receives one. Folded names are appended to
// `names`, each once, as new ids: a folded group never shares an id with a
// node that is called, even when their names coincide, so no call can take
// a folded client's root call for a candidate parent.
std::vector<uint32_t> FoldClients(const std::vector<bool>& calls,
                                  const std::vector<bool>& called,
                                  const ClientFolding& how,
                                  std::vector<std::string>* names);

}  // namespace bbprof::nesting

#endif  // BBPROF_NESTING_STEPS_CLIENT_FOLDING_H_
