package disttrain

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// logHandlerScheduler is the process TestSetLogHandler starts: a scheduler
// of a job whose nodes never come, with a Go handler. The job's lines (its
// layout, the warning that it has no secret) come once per process, hence a
// process of its own. It prints what the handler got, one line each.
func logHandlerScheduler() error {
	var mu sync.Mutex
	var got []string
	if err := SetLogHandler(LogInfo, func(level LogLevel, facility, message string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s|%s|%s", level, facility, message))
	}); err != nil {
		return err
	}
	role := RoleScheduler
	opts := KVStoreOptions{StartupTimeout: 300 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond,
		HeartbeatTimeout: 300 * time.Millisecond, ShutdownTimeout: 300 * time.Millisecond,
		Role: &role, NumServers: 1, NumWorkers: 1, SchedulerHost: "127.0.0.1"}
	if err := RunNode(&opts); err == nil {
		return fmt.Errorf("a scheduler without nodes returned no error")
	}
	if err := SetLogHandler(LogInfo, nil); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, line := range got {
		fmt.Println("LOG " + line)
	}
	return nil
}

func TestSetLogHandler(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=log_handler_scheduler", "DMLC_PS_ROOT_PORT=0",
		"DMLC_ROLE=", "DT_JOB_SECRET=", "DT_JOB_SECRET_FILE=", "DT_LOG_LEVEL=", "PS_VERBOSE=")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the scheduler process: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the scheduler process did not end within 60 s")
	}
	out := stdout.String()
	for _, want := range []string{"LOG warning||no job secret", "LOG info||job layout"} {
		if !strings.Contains(out, want) {
			t.Errorf("the handler got no line %q:\n%s", want, out)
		}
	}
	if strings.Contains(stderr.String(), "no job secret") {
		t.Errorf("a line went to stderr despite the handler:\n%s", &stderr)
	}
}

func TestSetLogHandlerRefusesAnUnknownLevel(t *testing.T) {
	wantStatus(t, "level 9", SetLogHandler(9, nil), StatusInvalidArgument)
	wantStatus(t, "level -1", SetLogHandler(-1, func(LogLevel, string, string) {}), StatusInvalidArgument)
	if err := SetLogHandler(LogInfo, nil); err != nil {
		t.Fatal(err)
	}
}
