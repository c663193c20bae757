// build/micsim: the command-line entry point (cli/run.cpp does the work; see it for exit statuses).
#include "cli/commands.hpp"

int main(int argc, char** argv) { return micsim::cli::run(argc, argv); }
