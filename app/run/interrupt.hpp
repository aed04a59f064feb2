#pragma once
/// @file interrupt.hpp
/// SIGTERM / SIGINT / SIGUSR1 (what Slurm's --signal sends before the time limit) during
/// the moments: the first signal only sets a flag, which the moments loop reads between
/// sweeps (under mpirun the ranks agree on it every few sweeps) to write a checkpoint and
/// stop cleanly; a second signal restores the default action and re-raises it (the
/// process dies at once).

namespace topokpm::app {

/// Installs the handlers for its lifetime and restores the previous ones afterwards. A
/// catcher made while another is alive changes nothing (a signal caught by the outer one
/// stays pending): kpm-dos holds one for the whole run, so a signal during the set-up
/// stops the run at the first sweep instead of killing it.
class SignalCatcher {
public:
    SignalCatcher();
    ~SignalCatcher();
    SignalCatcher(const SignalCatcher&) = delete;
    SignalCatcher& operator=(const SignalCatcher&) = delete;

    /// The signal received (SIGTERM, SIGINT or SIGUSR1), 0 if none.
    static int pending();
};

/// For the whole process, before anything else: a run outlives the terminal or pipe that
/// shows its output. SIGHUP (terminal closed) and SIGPIPE (reader of stdout gone) are
/// ignored, so the run goes on and writes its result; writes to the lost stream fail
/// quietly. SIGXFSZ (file-size limit) is ignored, so an oversized write is an error
/// (EFBIG) reported like a full disk instead of killing the run. A signal the launcher
/// already set to be ignored stays ignored; nothing else changes.
void survive_lost_output();

/// "SIGTERM", "SIGINT", "SIGUSR1" or "a signal".
const char* signal_name(int signal);

}  // namespace topokpm::app
