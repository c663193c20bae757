#pragma once
// Every file micsim writes, and standard output, goes through here.
//
//  * A regular file (or a path that does not exist yet) is written whole or not at all: a temporary
//    in the same directory, fsync, rename over the destination. A failed or interrupted run never
//    leaves half a file, and the temporary is removed on SIGINT/SIGTERM/SIGHUP (a temporary left by
//    kill -9 is removed by the next write to the same path).
//  * Anything else at the path (a character device such as /dev/null, a FIFO) is written through,
//    never replaced: as root, renaming over /dev/null would replace the machine's /dev/null.
//  * A symbolic link is followed: its target is written (by the rules above), the link stays.
//  * Every output of a run is checked before the work starts (OutputPlan): two outputs naming the
//    same file, an output that is one of the run's inputs, a missing or unwritable directory.
// Failures are OutputError (exit 2) with the OS's reason, e.g. "No space left on device".
#include <string>
#include <vector>

#include "models/io/input_error.hpp"

namespace micsim {

class OutputError : public InputError {
 public:
  OutputError(const std::string& path, const std::string& message) : InputError({path, 0, 0}, "", message) {}
};

// The outputs (and inputs) of one run, checked together before any work is done.
class OutputPlan {
 public:
  // A file this run reads; no output may name it.
  void input(const std::string& path);
  // An output given with `flag` (e.g. "--json"); "" = not requested, "-" = standard output.
  // Throws OutputError when the path cannot be written or collides with an input or another output.
  void output(const std::string& flag, const std::string& path);
  // A file that is both read and rewritten by the run (a plan checkpoint): it must not collide with
  // anything else, but may exist.
  void read_write(const std::string& flag, const std::string& path);

 private:
  struct Entry {
    std::string flag, path, identity;
    bool is_input = false, through = false;
  };
  std::vector<Entry> entries_;
  void add(Entry e);
};

// Writes `content` to `path` ("-" = standard output) by the rules above.
void write_output_file(const std::string& path, const std::string& content);

// Ranks other than 0 of an MPI run compute but write nothing: every write above becomes a no-op.
void suppress_outputs(bool on);
bool outputs_suppressed();

// Writes to standard output now and reports a failed write (a full disk, a closed pipe) as OutputError.
void write_stdout(const std::string& text);

// Flushes standard output; throws OutputError if anything written to it was lost.
void finish_stdout();

// Installs the signal handlers that remove temporaries of interrupted writes (once per process).
void install_output_cleanup();

// In a forked child: forget the parent's temporaries and restore default signal handling.
void reset_output_cleanup_in_child();

}  // namespace micsim
