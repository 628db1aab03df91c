#pragma once

namespace minictx {

// The whole command line (run, verify, report, list, --help, --version); returns the exit code.
int cli_main(int argc, char** argv);

}  // namespace minictx
