// Limits both ends of the data plane agree on: a worker keeps its windows
// within what a server accepts from one connection. Here, below the roles,
// so that the worker side need not include a server header for them.
#pragma once

namespace dt::ps {

// Messages a worker keeps in flight to one server in each of its two lanes
// (pushes; pulls): enough to pipeline 4 MiB parts.
constexpr int kLaneWindow = 4;

// Requests one worker may have in the server's hands at once: both lanes'
// windows, a command, and room for an init batch. More on one connection is
// refused (a dist_sync pull holds its place until its round completes, so a
// peer holding more could starve the others).
constexpr int kRequestsPerWorker = 2 * kLaneWindow + 4;

}  // namespace dt::ps
