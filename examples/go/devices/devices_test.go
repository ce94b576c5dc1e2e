package devices

import (
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"

	disttrain "github.com/disttrain/disttrain/bindings/go"
)

// parse runs the flags of args through Register and Parse, with local rank 1.
func parse(t *testing.T, args ...string) (Placement, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return f.Parse(Given(fs, "cpus"), func() (int, error) { return 1, nil })
}

func wantUsageError(t *testing.T, err error, contains string) {
	t.Helper()
	var usage *UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), contains) {
		t.Fatalf("want a *UsageError containing %q, got %v", contains, err)
	}
}

func TestGPUListsAreParsedStrictly(t *testing.T) {
	for text, want := range map[string][]int{"0": {0}, "0,1": {0, 1}, "0,0": {0, 0}, "3,1,3": {3, 1, 3}, "007": {7}} {
		got, err := ParseGPUList(text)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseGPUList(%q) = %v, %v; want %v", text, got, err, want)
		}
	}
	for _, bad := range []string{"x", "0,", ",0", "0,,1", "-1", "-0", "+1", " 0", "0 ,1", "1.5", "0x1", "99999999999", "gpu0"} {
		_, err := ParseGPUList(bad)
		wantUsageError(t, err, "--gpus takes GPU ids")
	}
}

func TestFlagsGiveThePlacement(t *testing.T) {
	cases := []struct {
		args    []string
		want    string
		replica int
	}{
		{nil, "cpu(0)", 1},
		{[]string{"--gpus", ""}, "cpu(0)", 1},
		{[]string{"--cpus", "3"}, "cpu(0),cpu(0),cpu(0)", 3},
		{[]string{"--gpus", "0,0"}, "gpu(0),gpu(0)", 2},
		{[]string{"--gpus", "2,0", "--precision", "bf16"}, "gpu(2),gpu(0)", 2},
		{[]string{"--gpus", "local"}, "gpu(1)", 1},
	}
	for _, c := range cases {
		p, err := parse(t, c.args...)
		if err != nil || p.String() != c.want || len(p.IDs) != c.replica {
			t.Errorf("%v: got %q (%d replicas), %v; want %q", c.args, p.String(), len(p.IDs), err, c.want)
		}
	}
	p, err := parse(t, "--gpus", "0", "--precision", "fp16")
	if err != nil || p.Precision != disttrain.Float16 || p.PrecisionName != "fp16" {
		t.Errorf("--precision fp16: got %v %q, %v", p.Precision, p.PrecisionName, err)
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	_, err := parse(t, "--cpus", "0")
	wantUsageError(t, err, "--cpus must be at least 1")
	_, err = parse(t, "--gpus", "0", "--cpus", "2")
	wantUsageError(t, err, "--cpus and --gpus exclude each other")
	_, err = parse(t, "--precision", "fp8")
	wantUsageError(t, err, "--precision must be fp32, fp16 or bf16")
	_, err = parse(t, "--precision", "fp16")
	wantUsageError(t, err, "the CPU computes in fp32 only")
	_, err = parse(t, "--gpus", "0;1")
	wantUsageError(t, err, "--gpus takes GPU ids")

	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := Register(fs)
	noErr(t, fs.Parse([]string{"--gpus", "local"}))
	_, err = f.Parse(false, func() (int, error) { return 0, errors.New("DT_LOCAL_RANK is not a number") })
	wantUsageError(t, err, "--gpus local: DT_LOCAL_RANK is not a number")
}

func TestMissingGPUsAreNamedWithTheCount(t *testing.T) {
	p, err := parse(t, "--gpus", "0,3,1")
	noErr(t, err)
	noErr(t, p.Check(4))
	wantUsageError(t, p.Check(2), "--gpus: GPU 3 was asked for, but this machine has 2 GPU(s)")
	wantUsageError(t, p.Check(0), "--gpus: GPU 0 was asked for, but this machine has 0 GPU(s)")
	cpu, err := parse(t, "--cpus", "2")
	noErr(t, err)
	noErr(t, cpu.Check(0))
}

func TestTheKVStoreDefaultsToDeviceOnSeveralGPUs(t *testing.T) {
	several, _ := parse(t, "--gpus", "0,0")
	one, _ := parse(t, "--gpus", "0")
	cpus, _ := parse(t, "--cpus", "2")
	for _, c := range []struct {
		p     Placement
		given string
		set   bool
		want  string
	}{
		{several, "local", false, "device"},
		{several, "dist_sync", true, "dist_sync"},
		{one, "local", false, "local"},
		{cpus, "local", false, "local"},
		{cpus, "none", true, "none"},
	} {
		if got := c.p.KVStore(c.given, c.set, "local"); got != c.want {
			t.Errorf("%s with --kvstore %q (given %v): %q, want %q", c.p, c.given, c.set, got, c.want)
		}
	}
}

// Two CPU replicas open as two contexts with the thread count set.
func TestOpenCreatesOneContextPerReplica(t *testing.T) {
	p, err := parse(t, "--cpus", "2")
	noErr(t, err)
	contexts, err := p.Open(1)
	noErr(t, err)
	defer func() {
		for _, c := range contexts {
			c.Close()
		}
	}()
	if len(contexts) != 2 {
		t.Fatalf("%d contexts, want 2", len(contexts))
	}
	for _, c := range contexts {
		n, err := c.NumThreads()
		if err != nil || n != 1 {
			t.Errorf("NumThreads() = %d, %v; want 1", n, err)
		}
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
