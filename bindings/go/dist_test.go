package disttrain

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const distElems = 256

// distSyncWorker is one worker of the job TestDistSyncPushPull starts: it
// pushes (rank+1) everywhere under an integer and a string key and checks
// that the pull is the sum over all workers.
func distSyncWorker() error {
	opts := KVStoreOptions{StartupTimeout: 60 * time.Second, RequestTimeout: 60 * time.Second}
	kv, err := NewKVStore("dist_sync", &opts)
	if err != nil {
		return err
	}
	defer kv.Close()
	rank, err := kv.Rank()
	if err != nil {
		return err
	}
	workers, err := kv.NumWorkers()
	if err != nil {
		return err
	}
	ctx, err := CPU()
	if err != nil {
		return err
	}
	defer ctx.Close()
	zeros, err := NewNDArray(ctx, Float32, []int64{distElems})
	if err != nil {
		return err
	}
	defer zeros.Close()
	if err := kv.Init([]uint64{42}, []*NDArray{zeros}); err != nil {
		return err
	}
	if err := kv.InitStr([]string{"layer.weight"}, []*NDArray{zeros}); err != nil {
		return err
	}
	mine := make([]float32, distElems)
	for i := range mine {
		mine[i] = float32(rank+1) * float32(i%7+1)
	}
	val, err := FromFloat32(ctx, []int64{distElems}, mine)
	if err != nil {
		return err
	}
	defer val.Close()
	out, err := NewNDArray(ctx, Float32, []int64{distElems})
	if err != nil {
		return err
	}
	defer out.Close()
	sumRanks := float32(workers * (workers + 1) / 2)
	for round := 0; round < 3; round++ {
		if err := kv.PushPull([]uint64{42}, []*NDArray{val}, []*NDArray{out}, 0); err != nil {
			return err
		}
		got, err := out.Float32s()
		if err != nil {
			return err
		}
		for i, v := range got {
			if want := sumRanks * float32(i%7+1); v != want {
				return fmt.Errorf("rank %d round %d: element %d is %v, want %v", rank, round, i, v, want)
			}
		}
	}
	if err := kv.PushPullStr([]string{"layer.weight"}, []*NDArray{val}, []*NDArray{out}, 0); err != nil {
		return err
	}
	got, err := out.Float32s()
	if err != nil {
		return err
	}
	if want := sumRanks * 7; got[6] != want {
		return fmt.Errorf("rank %d string key: element 6 is %v, want %v", rank, got[6], want)
	}
	if err := kv.Barrier(); err != nil {
		return err
	}
	fmt.Printf("dist_sync worker rank %d of %d: pushpull sums ok\n", rank, workers)
	return nil
}

// Two Go worker processes, a scheduler and a server on loopback, started by
// dtrun: each worker checks that dist_sync pushpull sums both workers.
func TestDistSyncPushPull(t *testing.T) {
	out := runJob(t, "dist_sync_worker", "-n", "2", "-s", "1")
	for rank := 0; rank < 2; rank++ {
		line := fmt.Sprintf("dist_sync worker rank %d of 2: pushpull sums ok", rank)
		if !strings.Contains(out, line) {
			t.Fatalf("missing %q in the job's output", line)
		}
	}
}

// runJob runs this test binary as the workers of a dtrun job (dtrunArgs:
// its layout and options), with role selecting their body in TestMain, and
// returns the job's output once dtrun succeeded.
func runJob(t *testing.T, role string, dtrunArgs ...string) string {
	t.Helper()
	dtrun := os.Getenv("DISTTRAIN_DTRUN")
	if dtrun == "" {
		var err error
		if dtrun, err = exec.LookPath("dtrun"); err != nil {
			t.Fatal("dtrun not found: set DISTTRAIN_DTRUN (CTest does) or put dtrun in PATH")
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, dtrunArgs...), "--timeout", "120", "--", self, "-test.run", "^$")
	cmd := exec.Command(dtrun, args...)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(180 * time.Second):
		// dtrun's own --timeout should have fired; do not hang the suite.
		cmd.Process.Kill()
		<-done
		t.Fatalf("dtrun did not finish within 180 s:\n%s", out.String())
	}
	t.Logf("dtrun output:\n%s", out.String())
	if err != nil {
		t.Fatalf("dtrun: %v", err)
	}
	return out.String()
}

// Deadlines travel through KVStoreOptions: a worker whose scheduler never
// answers gives up after StartupTimeout with StatusTimedOut, and the layout
// fields (role, counts, scheduler address) reach the library.
func TestKVStoreStartupDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nobody listens there now
	for _, k := range []string{"DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	worker, id := RoleWorker, 0
	opts := KVStoreOptions{
		StartupTimeout: 1500 * time.Millisecond,
		Role:           &worker, WorkerID: &id, NumServers: 1, NumWorkers: 1,
		SchedulerHost: "127.0.0.1", SchedulerPort: port,
	}
	start := time.Now()
	_, err = NewKVStore("dist_sync", &opts)
	elapsed := time.Since(start)
	wantStatus(t, "dist_sync without a scheduler", err, StatusTimedOut)
	if elapsed < time.Second || elapsed > 30*time.Second {
		t.Fatalf("gave up after %v with a 1.5 s startup timeout", elapsed)
	}

	wantStatus(t, "RunNode with the worker role set in options", RunNode(&opts), StatusInvalidArgument)
}
