package disttrain

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"
)

// rssBytes reads the resident set size from /proc/self/statm (pages).
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := bytes.Fields(b)
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// settle collects garbage, runs pending finalizers and returns freed pages
// to the OS, so that RSS reflects live memory.
func settle() {
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	debug.FreeOSMemory()
}

// 10,000 arrays of 4 KiB created, written and closed must not grow the
// process: were the C side to keep them, RSS would grow by >= 40 MiB.
func TestCreateAndClose10000ArraysDoesNotGrowMemory(t *testing.T) {
	const n, elems = 10000, 1024
	const bound = 8 << 20 // bytes: allocator and runtime noise stay far below
	ctx := cpu(t)
	data := make([]float32, elems)
	round := func() {
		for i := 0; i < n; i++ {
			a, err := NewNDArray(ctx, Float32, []int64{elems})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.CopyFromFloat32(data); err != nil {
				t.Fatal(err)
			}
			a.Close()
		}
	}
	leaked := LeakedHandles()
	round() // warm-up: allocator arenas, handle registry, runtime caches
	settle()
	before := rssBytes(t)
	round()
	settle()
	after := rssBytes(t)
	t.Logf("RSS before %d KiB, after %d KiB (bound %d KiB growth)", before>>10, after>>10, bound>>10)
	if after-before > bound {
		t.Fatalf("RSS grew by %d KiB over %d create/close cycles", (after-before)>>10, n)
	}
	if LeakedHandles() != leaked {
		t.Fatalf("%d handles reached the finalizer", LeakedHandles()-leaked)
	}
}

// An array dropped without Close is freed by the finalizer, which counts it.
func TestFinalizerFreesAnUnclosedArray(t *testing.T) {
	ctx := cpu(t)
	before := LeakedHandles()
	func() {
		if _, err := NewNDArray(ctx, Float32, []int64{16}); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for LeakedHandles() == before {
		if time.Now().After(deadline) {
			t.Fatal("the unclosed array was not finalized within 10 s")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
