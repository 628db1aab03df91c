#pragma once
// Seconds of a projected step split by what bounds them, and the bytes a rank sends.

namespace minictx {

enum class Bound { compute, intra, inter, memory };
const char* to_string(Bound);

struct Cost {
  double compute = 0;                       // kernels at their FLOP rate, and transfers hidden under them
  double memory = 0;                        // element-wise kernels at the device-memory bandwidth
  double intra = 0;                         // time an intra-node transfer is the critical path
  double inter = 0;                         // the same for inter-node transfers
  double bytes_intra = 0, bytes_inter = 0;  // sent per rank (mean over ranks), minictx's count
  double all_to_all =
      0;  // of the seconds above: head exchanges and all-gathers (a tally, for the phase split)

  double seconds() const { return compute + memory + intra + inter; }
  Bound bound() const;
  Cost& operator+=(const Cost& o);
  Cost times(double k) const;
};

// `seconds` of work bounded by `by`.
Cost cost_of(Bound by, double seconds);

// A kernel and a transfer posted before it, of which the fraction `overlap` can move while
// the kernel runs: the longer of the kernel and that part, counted against whichever it
// was, then the rest of the transfer, counted against the link (overlap 1: the longer of
// the two; 0: one after the other).
Cost overlapped(double compute_s, double transfer_s, Bound link, double overlap);

}  // namespace minictx
