package disttrain

import "github.com/disttrain/disttrain/bindings/go/internal/capi"

// ProfilerStart starts recording the process's timeline (again; what was
// recorded stays): spans of a trainer's data wait, forward, backward,
// optimizer and wait, each key part's push and pull, a server's rounds, the
// scheduler's barriers. Process-wide, as MXNet's profiler is;
// DT_TIMELINE=FILE starts it without a call (docs/profiling.md).
func ProfilerStart() error { return check(capi.Dt_profiler_start()) }

// ProfilerStop stops recording; what was recorded stays.
func ProfilerStop() error { return check(capi.Dt_profiler_stop()) }

// ProfilerDump writes what was recorded so far to path as Chrome
// trace-event JSON (Perfetto and chrome://tracing open it).
func ProfilerDump(path string) error { return check(capi.Dt_profiler_dump(path)) }
