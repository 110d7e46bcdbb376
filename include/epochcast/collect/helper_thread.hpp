// Threads the collector starts for itself (flushing, status, PCIe polling, /metrics) leave the
// process's stop signals to the sampling thread: a SIGINT/SIGTERM then interrupts its sleep
// at once instead of landing on a helper and waiting for the next tick.
#pragma once

#include <signal.h>

#include <thread>
#include <utility>

namespace epochcast::detail {

template <typename F>
std::thread helper_thread(F&& body) {
  return std::thread([body = std::forward<F>(body)]() mutable {
    sigset_t stop;
    sigemptyset(&stop);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&stop, sig);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    body();
  });
}

}  // namespace epochcast::detail
