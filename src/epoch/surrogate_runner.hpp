// The whole-region search's nulls on more than one core: surrogate i's score is computed by
// whichever thread takes index i, and consumed by the calling thread in index order, so the
// sequential stops (region_search.cpp) see exactly the scores, in exactly the order, of one
// thread: the same p-values and answer on any machine. Threads beyond the caller are taken
// only while cores are idle: a search running while others run (serve under load, watch's
// analysis threads) gets fewer helpers, down to none, so nothing is oversubscribed.
#pragma once

#include <cstddef>
#include <functional>

namespace epochcast::detail {

// Computes score(worker, i) for i = 0, 1, ... < count and calls consume(i, score) for each i in
// order on the calling thread until it returns false (the rest are not consumed; at most a few
// in flight are computed and dropped). `worker` is 0 for the caller and 1..helpers for the
// helper threads: per-worker scratch (a surrogate generator, buffers) is indexed by it, and
// prepare(helpers) is called before any score so that it can make that many more.
// score must not throw. Returns the helpers used.
std::size_t run_ordered(std::size_t count, const std::function<void(std::size_t helpers)>& prepare,
                        const std::function<double(std::size_t worker, std::size_t i)>& score,
                        const std::function<bool(std::size_t i, double score)>& consume);

// Helper threads a search may take beyond its caller: the idle cores (the hardware's threads,
// or this setting plus one when larger, less the threads of the searches running now, this
// one's included), at most this setting. 0 runs every search on its caller's thread alone.
// Default: $EPOCHCAST_SURROGATE_HELPERS (0 to 1024; anything else is Error(kInvalidArgument)
// naming it at the first search), else the hardware's threads less one. Returns the previous
// setting. Guarded by
// SurrogateRunner.* (surrogate_runner_test).
std::size_t set_max_surrogate_helpers(std::size_t helpers);

}  // namespace epochcast::detail
