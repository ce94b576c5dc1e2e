// The deadlines and bounds of a job's nodes from the environment, read the
// same way by every process that joins a job (dt-node, a program that serves
// as scheduler or server because DMLC_ROLE says so, every worker), so that a
// job configured once, e.g. through dtrun --env, behaves the same
// everywhere:
//   DT_STARTUP_TIMEOUT_S, DT_REQUEST_TIMEOUT_S, DT_HEARTBEAT_INTERVAL_S,
//   DT_HEARTBEAT_TIMEOUT_S, DT_SHUTDOWN_TIMEOUT_S    seconds, > 0
//   DT_BIGARRAY_BOUND_BYTES                          bytes, > 0
//   MXNET_KVSTORE_BIGARRAY_BOUND                     elements, > 0, as MXNet
//                                                    (x 4 bytes; the byte
//                                                    variable wins if both)
//   PS_VERBOSE                                       ps-lite's log level: 1
//                                                    connections and the
//                                                    node table, 2 also every
//                                                    message (ps_verbose)
//   PS_RESEND, PS_RESEND_TIMEOUT                     ps-lite's resend: 1 and
//                                                    milliseconds (default
//                                                    1000): resend_timeout_s
//   DT_WORKER_LOSS                                   fail (default) or
//                                                    continue: worker_loss
//   DT_SERVER_REPLICATION                            0 (default) or 1:
//                                                    server_replicas
//   MXNET_KVSTORE_REDUCTION_NTHREADS                 1 to 256 (default 4):
//                                                    reduction_threads
// MXNet variables that mean nothing here are refused (the parameter
// table's Support::kRefused): set, each is named in a warning saying why
// (mxnet_knob_notes), never silently accepted.
#pragma once

#include <string>
#include <vector>

#include "ps/job/job_config.h"

namespace dt::ps {

// defaults with the variables above applied. Error(kInvalidArgument) naming
// the variable and its text for a value that is not a positive number (or
// more than 256 reduction threads), or a PS_VERBOSE that is not a level (refused with the options, before any node
// starts).
PsOptions ps_options_from_environment(const EnvLookup& env, PsOptions defaults = {});
PsOptions ps_options_from_environment();

// One line per refused variable that is set, and why (e.g.
// "MXNET_UPDATE_ON_KVSTORE=0: refused, not honoured here: ..."). Empty when
// none is set.
std::vector<std::string> mxnet_knob_notes(const EnvLookup& env);
// Logs mxnet_knob_notes() of this process (core::log, warning), once per process.
void log_mxnet_knob_notes_once();

// PS_VERBOSE: 0 when unset or empty, else an integer >= 0 (levels above 2
// log as 2). Error(kInvalidArgument) naming the variable otherwise.
int ps_verbose_level(const EnvLookup& env);
// The log channel's level (core/log.h) in PS_VERBOSE's terms: 2 at trace,
// 1 at debug, else 0. PS_VERBOSE itself feeds that level.
int ps_verbose();
// core::log at debug (level 1) or trace (2); line is "<facility>: <text>"
// and comes out on stderr as "disttrain[PS_VERBOSE]: <line>", as always.
void verbose_log(int level, const std::string& line);

}  // namespace dt::ps
