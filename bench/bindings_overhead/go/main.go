// bindings_overhead (Go): the time of one small dt_kvstore_pushpull (one
// key, `elements` float32 values, a "local" kvstore) called through the Go
// binding, next to the same call from C (../bindings_overhead.c), which it
// runs for the baseline with the same options.
//
//	bindings_overhead_go [--elements N] [--iterations N] [--repeats N]
//	                     [--c-bench PATH | --c-ns X]
//
// Prints the best (lowest) ns per call over the repeats, the C figure and
// their ratio, as text and as one JSON line:
//
//	{"bench":"bindings_overhead","lang":"go","op":"kvstore_pushpull",
//	 "elements":256,...,"ns_per_call":...,"c_ns_per_call":...,"ratio_vs_c":...}
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	disttrain "github.com/disttrain/disttrain/bindings/go"
)

type result struct {
	Bench      string  `json:"bench"`
	Lang       string  `json:"lang"`
	Op         string  `json:"op"`
	Elements   int     `json:"elements"`
	Iterations int     `json:"iterations"`
	Repeats    int     `json:"repeats"`
	NsPerCall  float64 `json:"ns_per_call"`
	CNsPerCall float64 `json:"c_ns_per_call,omitempty"`
	RatioVsC   float64 `json:"ratio_vs_c,omitempty"`
}

func main() {
	elements := flag.Int("elements", 256, "float32 values in the key")
	iterations := flag.Int("iterations", 200000, "pushpull calls per repeat")
	repeats := flag.Int("repeats", 5, "timed repeats; the best is reported")
	cBench := flag.String("c-bench", "", "the C benchmark for the baseline (default: bindings_overhead beside this program)")
	cNs := flag.Float64("c-ns", 0, "the C figure in ns per call, instead of running the C benchmark")
	flag.Parse()
	if *elements <= 0 || *iterations <= 0 || *repeats <= 0 {
		fmt.Fprintln(os.Stderr, "error: --elements, --iterations and --repeats must be positive")
		os.Exit(2)
	}
	best, err := measure(*elements, *iterations, *repeats)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	r := result{Bench: "bindings_overhead", Lang: "go", Op: "kvstore_pushpull",
		Elements: *elements, Iterations: *iterations, Repeats: *repeats, NsPerCall: round1(best)}
	fmt.Printf("go: kvstore_pushpull of %d float32: %.1f ns per call (best of %d x %d)\n",
		*elements, best, *repeats, *iterations)

	c := *cNs
	if c == 0 {
		path := *cBench
		if path == "" {
			if self, err := os.Executable(); err == nil {
				path = filepath.Join(filepath.Dir(self), "bindings_overhead")
			}
		}
		args := []string{"--elements", strconv.Itoa(*elements), "--iterations", strconv.Itoa(*iterations),
			"--repeats", strconv.Itoa(*repeats)}
		if c, err = runC(path, args); err != nil {
			fmt.Fprintf(os.Stderr, "warning: no C baseline: %v\n", err)
		}
	}
	if c > 0 {
		r.CNsPerCall = round1(c)
		r.RatioVsC = float64(int64(best/c*1000+0.5)) / 1000
		fmt.Printf("go/c: %.2fx (%.1f ns vs %.1f ns per call)\n", best/c, best, c)
	}
	line, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(string(line))
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// measure times pushpull of one key from a value array into an out array,
// as the C benchmark does, and returns the best ns per call.
func measure(elements, iterations, repeats int) (float64, error) {
	ctx, err := disttrain.CPU()
	if err != nil {
		return 0, err
	}
	defer ctx.Close()
	kv, err := disttrain.NewKVStore("local", nil)
	if err != nil {
		return 0, err
	}
	defer kv.Close()
	shape := []int64{int64(elements)}
	value, err := disttrain.NewNDArray(ctx, disttrain.Float32, shape)
	if err != nil {
		return 0, err
	}
	defer value.Close()
	out, err := disttrain.NewNDArray(ctx, disttrain.Float32, shape)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	if err := value.Fill(1); err != nil {
		return 0, err
	}
	keys := []uint64{3}
	values, outs := []*disttrain.NDArray{value}, []*disttrain.NDArray{out}
	if err := kv.Init(keys, values); err != nil {
		return 0, err
	}
	// Warm-up: caches, allocator, the store's first-use paths.
	for i := 0; i < iterations/10+1; i++ {
		if err := kv.PushPull(keys, values, outs, 0); err != nil {
			return 0, err
		}
	}
	best := -1.0
	for r := 0; r < repeats; r++ {
		start := time.Now()
		for i := 0; i < iterations; i++ {
			if err := kv.PushPull(keys, values, outs, 0); err != nil {
				return 0, err
			}
		}
		perCall := float64(time.Since(start).Nanoseconds()) / float64(iterations)
		if best < 0 || perCall < best {
			best = perCall
		}
	}
	return best, nil
}

// runC runs the C benchmark and reads "ns_per_call" from its JSON line.
func runC(path string, args []string) (float64, error) {
	cmd := exec.Command(path, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var killed atomic.Bool
	timer := time.AfterFunc(10*time.Minute, func() {
		killed.Store(true)
		cmd.Process.Kill()
	})
	err := cmd.Wait()
	timer.Stop()
	if killed.Load() {
		return 0, fmt.Errorf("%s did not finish within 10 minutes", path)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	out := stdout.String()
	for _, line := range strings.Split(out, "\n") {
		var m struct {
			Lang      string   `json:"lang"`
			NsPerCall *float64 `json:"ns_per_call"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(line)), &m) == nil && m.NsPerCall != nil {
			return *m.NsPerCall, nil
		}
	}
	return 0, fmt.Errorf("no \"ns_per_call\" JSON line in the output of %s", path)
}
