package disttrain

/*
#cgo pkg-config: disttrain
#include <stdlib.h>
#include <string.h>
#include "dt_c_api.h"

// log_export.go's Go function (its file may hold no C definitions).
extern void dtgoLogLine(int level, char *facility, char *message);

static void dtgo_forward(dt_log_level level, const char *facility, const char *message, void *user) {
	(void)user;
	dtgoLogLine((int)level, (char *)facility, (char *)message);
}

// Sets the Go handler (on != 0) or stderr back; a failure's message is
// copied in the same call, since it is the calling thread's.
static dt_status dtgo_log_set(int level, int on, char **message) {
	dt_status status = dt_log_set_handler((dt_log_level)level, on ? dtgo_forward : NULL, NULL);
	*message = status == DT_OK ? NULL : strdup(dt_last_error());
	return status;
}
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// LogLevel is how much the library says, as dt_log_level.
type LogLevel int32

// The levels, most severe first; each includes the ones before it.
const (
	LogNone    LogLevel = 0
	LogError   LogLevel = 1
	LogWarning LogLevel = 2
	LogInfo    LogLevel = 3 // joins, losses, the job's layout (the default)
	LogDebug   LogLevel = 4 // connections, node tables (PS_VERBOSE=1)
	LogTrace   LogLevel = 5 // every message (PS_VERBOSE=2)
)

func (l LogLevel) String() string {
	switch l {
	case LogNone:
		return "none"
	case LogError:
		return "error"
	case LogWarning:
		return "warning"
	case LogInfo:
		return "info"
	case LogDebug:
		return "debug"
	case LogTrace:
		return "trace"
	}
	return "unknown log level"
}

// LogHandler receives one line of the library's log: its level, facility
// (who speaks: "scheduler", "server 1", "worker 0", "allreduce", "trainer";
// "" for the job as a whole) and message. It runs on the library's threads,
// one line at a time, and must not call into disttrain.
type LogHandler func(level LogLevel, facility, message string)

// handlerBox lets an atomic.Value hold a nil handler.
type handlerBox struct{ handler LogHandler }

var (
	logHandler atomic.Value // handlerBox
	logSetting sync.Mutex   // one SetLogHandler at a time
)

// SetLogHandler routes the library's log lines up to maxLevel to handler,
// for the whole process (they go to stderr otherwise, at the level
// DT_LOG_LEVEL or PS_VERBOSE set). A nil handler sends them to stderr
// again, at maxLevel. When it returns, the previous handler is not running
// and is never called again. For the standard library's log/slog:
//
//	disttrain.SetLogHandler(disttrain.LogInfo, func(l disttrain.LogLevel, f, m string) {
//		slog.Info(m, "facility", f, "level", l.String())
//	})
func SetLogHandler(maxLevel LogLevel, handler LogHandler) error {
	if err := CheckVersion(); err != nil {
		return err
	}
	logSetting.Lock()
	defer logSetting.Unlock()
	previous, _ := logHandler.Load().(handlerBox)
	on := C.int(0)
	if handler != nil {
		on = 1
		logHandler.Store(handlerBox{handler})
	}
	var message *C.char
	if status := C.dtgo_log_set(C.int(maxLevel), on, &message); status != C.DT_OK {
		logHandler.Store(previous)
		text := "out of memory copying the error message"
		if message != nil {
			text = C.GoString(message)
			C.free(unsafe.Pointer(message))
		}
		return &Error{Status: Status(status), Message: text}
	}
	if handler == nil {
		logHandler.Store(handlerBox{})
	}
	return nil
}

// deliverLogLine runs on the library's thread for each line.
func deliverLogLine(level LogLevel, facility, message string) {
	if box, _ := logHandler.Load().(handlerBox); box.handler != nil {
		box.handler(level, facility, message)
	}
}
