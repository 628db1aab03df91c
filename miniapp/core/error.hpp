#pragma once
#include <stdexcept>
#include <string>

namespace minictx {

// Every failure minictx reports is one of these; main() turns it into one line and a
// non-zero exit on every rank.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input: a deck, an override, a command line. Found before any allocation.
class InputError : public Error {
 public:
  using Error::Error;
};

// A point that cannot give a result, found while it runs from facts every rank holds
// alike (the summed gradients of a step): every rank throws it at the same place, so the
// point ends in one line on every rank (a recorded skip inside a sweep) without an abort.
class PointRefused : public Error {
 public:
  using Error::Error;
};

[[noreturn]] inline void fail(const std::string& what) { throw Error(what); }
[[noreturn]] inline void input_error(const std::string& what) { throw InputError(what); }

inline void require(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

}  // namespace minictx
