// Interruption: what SIGINT and SIGTERM do to a running subcommand.
//
// Every subcommand ends with exit status 130 when interrupted, and leaves no
// temporary file behind. By default the handler (installed once by main)
// removes every registered temporary file (AtomicFile registers its own), says
// "interrupted" on standard error and ends the process at once: an output
// that had not been renamed into place is simply gone, the file it was to
// replace untouched. Removing files and _exit are async-signal-safe, so this
// holds wherever the signal lands, in a write loop or a blocking read.
//
// A subcommand that stops cleanly on a signal (capture, which writes what it
// decoded) asks for graceful interrupts instead: the first signal only raises
// a flag that its loop polls and wakes any WaitReadable; a second signal takes
// the immediate path, so a stuck shutdown can still be interrupted.
#ifndef BBPROF_BASE_INTERRUPT_H_
#define BBPROF_BASE_INTERRUPT_H_

#include <string>

namespace bbprof {

// Installs the SIGINT and SIGTERM handlers. `program` names the process in
// the message ("bbprof convert"); it is copied.
void InstallInterruptHandlers(const std::string& program);

// Switches to graceful interrupts. `notify` (may be null) is called from the
// signal handler after the flag is raised, so it must be async-signal-safe
// (e.g. pcap_breakloop).
void SetGracefulInterrupts(void (*notify)());

// Whether a graceful interrupt was requested.
bool InterruptRequested();

// Waits until `fd` has data (or end of file) to read, or until a graceful
// interrupt is requested: returns false then. For blocking reads from a pipe,
// a terminal or a socket, which a signal would otherwise not end. Without
// installed handlers it returns true at once.
bool WaitReadable(int fd);

// Temporary files removed by the handler. Register returns a handle for
// Unregister (-1 if the path could not be stored: the file is then not
// removed on a signal, nothing else changes). Not thread-safe: bbprof's
// writers run on the main thread.
int RegisterTempFile(const std::string& path);
void UnregisterTempFile(int handle);

}  // namespace bbprof

#endif  // BBPROF_BASE_INTERRUPT_H_
