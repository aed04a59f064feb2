#pragma once
/// @file interrupt.hpp
/// SIGTERM / SIGINT during the moments: the first signal only sets a flag, which the
/// moments loop reads after every sweep to write a checkpoint and stop cleanly; a second
/// signal restores the default action and re-raises it (the process dies at once).

namespace topokpm::app {

/// Installs the handlers for its lifetime and restores the previous ones afterwards.
class SignalCatcher {
public:
    SignalCatcher();
    ~SignalCatcher();
    SignalCatcher(const SignalCatcher&) = delete;
    SignalCatcher& operator=(const SignalCatcher&) = delete;

    /// The signal received (SIGTERM or SIGINT), 0 if none.
    static int pending();
};

/// "SIGTERM", "SIGINT" or "signal N".
const char* signal_name(int signal);

}  // namespace topokpm::app
