package disttrain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// dataWaits counts the "data wait" spans in a timeline file, which must be
// trace-event JSON.
func dataWaits(t *testing.T, path string) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Ph   string `json:"ph"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s is not trace-event JSON: %v", path, err)
	}
	n := 0
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" && e.Name == "data wait" {
			n++
		}
	}
	return n
}

// The timeline through the binding: a data loader's waits are recorded while
// the profiler runs, not after it stopped.
func TestProfilerRecordsDataWaits(t *testing.T) {
	opts := get(DefaultDataLoaderOptions())(t)
	opts.BatchSize = 100
	loader := get(NewMNISTLoader(fashionMNIST(t), "t10k", &opts))(t)
	defer loader.Close()
	if err := loader.StartEpoch(0); err != nil {
		t.Fatal(err)
	}
	next := func(batches int) {
		for i := 0; i < batches; i++ {
			data, labels, ok, err := loader.Next()
			if err != nil || !ok {
				t.Fatalf("Next: %v %v", ok, err)
			}
			data.Close()
			labels.Close()
		}
	}
	dir := t.TempDir()
	before := filepath.Join(dir, "before.json")
	if err := ProfilerDump(before); err != nil {
		t.Fatal(err)
	}
	already := dataWaits(t, before)
	if err := ProfilerStart(); err != nil {
		t.Fatal(err)
	}
	next(3)
	if err := ProfilerStop(); err != nil {
		t.Fatal(err)
	}
	next(2)
	after := filepath.Join(dir, "after.json")
	if err := ProfilerDump(after); err != nil {
		t.Fatal(err)
	}
	if got := dataWaits(t, after); got != already+3 {
		t.Fatalf("%d data waits recorded, want %d", got, already+3)
	}
	wantStatus(t, "ProfilerDump(\"\")", ProfilerDump(""), StatusInvalidArgument)
	wantStatus(t, "ProfilerDump into a missing directory", ProfilerDump(filepath.Join(dir, "no", "x.json")), StatusIO)
}
