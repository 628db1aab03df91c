#pragma once
#include <string>

// The limit on how long a rank may wait in one communication call before it aborts the
// job (DESIGN: "a watchdog turns a stuck collective into an abort that says which rank
// waited on what"). Process-wide, like the signal handlers: the comm layer sits below the
// point being run, and the backends between them must not carry it.
namespace minictx::watchdog {

// run.watchdog_seconds: > 0 a fixed limit, 0 off, -1 automatic (ten times the slowest
// step completed so far, at least kMinAutomaticSeconds).
void configure(double seconds);
// Names the point being run in the abort line.
void set_point(const std::string& what);
// A training or attention step of `seconds` finished (raises the automatic limit).
void step_completed(double seconds);

// The limit now, in seconds; 0 = off.
double limit_seconds();
// "run.watchdog_seconds = 5" or how the automatic limit came about.
std::string limit_description();
const std::string& point();

constexpr double kMinAutomaticSeconds = 300;

}  // namespace minictx::watchdog
