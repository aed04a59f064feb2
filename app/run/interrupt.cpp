#include "app/run/interrupt.hpp"

#include <csignal>
#include <initializer_list>

namespace topokpm::app {
namespace {

volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_old_term, g_old_int, g_old_usr1;
int g_depth = 0;  // catchers alive (main thread only)

extern "C" void on_signal(int sig)
{
    if (g_signal != 0) {  // second signal: give up at once (async-signal-safe calls only)
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    g_signal = sig;
}

}  // namespace

SignalCatcher::SignalCatcher()
{
    if (g_depth++ > 0) return;  // nested: the outer catcher is in place and keeps its flag
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, &g_old_term);
    sigaction(SIGINT, &sa, &g_old_int);
    sigaction(SIGUSR1, &sa, &g_old_usr1);
}

SignalCatcher::~SignalCatcher()
{
    if (--g_depth > 0) return;
    sigaction(SIGTERM, &g_old_term, nullptr);
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGUSR1, &g_old_usr1, nullptr);
}

int SignalCatcher::pending() { return g_signal; }

void survive_lost_output()
{
    for (const int sig : {SIGHUP, SIGPIPE, SIGXFSZ}) std::signal(sig, SIG_IGN);
}

const char* signal_name(int signal)
{
    switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
    }
}

}  // namespace topokpm::app
