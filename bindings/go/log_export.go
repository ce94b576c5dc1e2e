package disttrain

import "C"

// dtgoLogLine is the C handler's way into Go (log.go); cgo allows only
// declarations beside an export, so it lives in a file of its own.
//
//export dtgoLogLine
func dtgoLogLine(level C.int, facility, message *C.char) {
	deliverLogLine(LogLevel(level), C.GoString(facility), C.GoString(message))
}
