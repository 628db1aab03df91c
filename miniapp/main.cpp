#include "app/cli.hpp"

int main(int argc, char** argv) { return minictx::cli_main(argc, argv); }
