package disttrain

import (
	"fmt"
	"os"
	"testing"
)

// roleEnv selects, in a process started by dtrun from TestDistSyncPushPull,
// the worker body instead of the test suite.
const roleEnv = "DISTTRAIN_GO_TEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "dist_sync_worker" {
		if err := distSyncWorker(); err != nil {
			fmt.Fprintf(os.Stderr, "dist_sync worker: FAIL: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
