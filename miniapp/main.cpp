#include "app/cli.hpp"
#include "device/blas_kernels.hpp"

int main(int argc, char** argv) {
  minictx::choose_blas_kernels(argv);
  return minictx::cli_main(argc, argv);
}
