package disttrain

import (
	"fmt"
	"os"
	"testing"
)

// roleEnv selects, in a process started by dtrun from a test (runJob), the
// worker body instead of the test suite.
const roleEnv = "DISTTRAIN_GO_TEST_ROLE"

func TestMain(m *testing.M) {
	workers := map[string]func() error{
		"dist_sync_worker":        distSyncWorker,
		"allreduce_rejoin_worker": allreduceRejoinWorker,
		"log_handler_scheduler":   logHandlerScheduler,
	}
	if role := os.Getenv(roleEnv); role != "" {
		body, known := workers[role]
		if !known {
			fmt.Fprintf(os.Stderr, "%s=%q is no worker of these tests\n", roleEnv, role)
			os.Exit(2)
		}
		if err := body(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: FAIL: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
