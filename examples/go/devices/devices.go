// Package devices is the --gpus, --cpus and --precision flags of the Go
// training examples, with MXNet's meaning: --gpus 0,1 trains one replica on
// each listed GPU (ids may repeat: 0,0 is two replicas on GPU 0), the
// trainer splitting every batch across them as split_and_load does; no
// --gpus (or an empty list) is the CPU, --cpus N replicas there (MXNet's
// ctx=[mx.cpu(i) for i in range(N)], here N contexts on cpu(0), the only
// CPU context the library has); --gpus local is the GPU numbered by the
// process's local rank. --precision fp16|bf16 is mixed precision (fp16 with
// dynamic loss scaling), which the library runs on GPUs only.
//
// A problem with these flags is a *UsageError: the examples exit with
// status 2 on it, before anything trains.
package devices

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	disttrain "github.com/disttrain/disttrain/bindings/go"
)

// UsageError is a bad --gpus, --cpus or --precision: a mistake in the
// command line or a GPU the machine does not have, not a training failure.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, a ...interface{}) *UsageError {
	return &UsageError{msg: fmt.Sprintf(format, a...)}
}

// Flags holds the flags' values as given.
type Flags struct {
	gpus      string
	cpus      int
	precision string
}

// Register adds --gpus, --cpus and --precision to fs.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.gpus, "gpus", "", "GPU ids, one replica each, e.g. 0,1 or 0,0; local: the local rank's GPU; '': the CPU")
	fs.IntVar(&f.cpus, "cpus", 1, "replicas on the CPU (without --gpus)")
	fs.StringVar(&f.precision, "precision", "fp32", "fp32, fp16 (with loss scaling) or bf16: the net's compute dtype")
	return f
}

// Placement is where and in what precision the replicas train.
type Placement struct {
	Device disttrain.DeviceType
	// IDs is one device id per replica; GPU ids as given (unchecked until
	// Check), or zeros on the CPU.
	IDs []int
	// LocalRank says IDs came from --gpus local.
	LocalRank bool
	// Precision is the net's compute dtype; PrecisionName its flag value.
	Precision     disttrain.DType
	PrecisionName string
}

// Placement parses the flags of fs, which Register was given, with the
// local rank from the launcher's environment (disttrain.LocalRank).
func (f *Flags) Placement(fs *flag.FlagSet) (Placement, error) {
	return f.Parse(Given(fs, "cpus"), func() (int, error) {
		rank, _, err := disttrain.LocalRank()
		return rank, err
	})
}

// Parse reads the flags strictly. cpusGiven says --cpus was on the command
// line (fs.Visit knows); localRank is asked only for --gpus local.
func (f *Flags) Parse(cpusGiven bool, localRank func() (int, error)) (Placement, error) {
	p := Placement{PrecisionName: f.precision}
	switch f.precision {
	case "fp32":
		p.Precision = disttrain.Float32
	case "fp16":
		p.Precision = disttrain.Float16
	case "bf16":
		p.Precision = disttrain.BFloat16
	default:
		return Placement{}, usageErrorf("--precision must be fp32, fp16 or bf16, not %q", f.precision)
	}
	if f.gpus == "" {
		if f.cpus < 1 {
			return Placement{}, usageErrorf("--cpus must be at least 1, not %d", f.cpus)
		}
		p.Device = disttrain.DeviceCPU
		p.IDs = make([]int, f.cpus)
		if p.Precision != disttrain.Float32 {
			return Placement{}, usageErrorf("--precision %s: the CPU computes in fp32 only; fp16 and bf16 need --gpus",
				f.precision)
		}
		return p, nil
	}
	if cpusGiven {
		return Placement{}, usageErrorf("--cpus and --gpus exclude each other: replicas go on the CPU or on GPUs")
	}
	p.Device = disttrain.DeviceGPU
	if f.gpus == "local" {
		rank, err := localRank()
		if err != nil {
			return Placement{}, usageErrorf("--gpus local: %v", err)
		}
		p.IDs, p.LocalRank = []int{rank}, true
		return p, nil
	}
	ids, err := ParseGPUList(f.gpus)
	if err != nil {
		return Placement{}, err
	}
	p.IDs = ids
	return p, nil
}

// ParseGPUList reads "0", "0,1" or "0,0": non-negative decimal ids, no
// blanks, no empty items.
func ParseGPUList(text string) ([]int, error) {
	var ids []int
	for _, item := range strings.Split(text, ",") {
		// Digits only: ParseInt alone would take "+1" and "-0".
		digits := item != "" && strings.Trim(item, "0123456789") == ""
		id, err := strconv.ParseInt(item, 10, 32)
		if !digits || err != nil {
			return nil, usageErrorf("--gpus takes GPU ids such as 0,1 or 0,0 ('' for the CPU, local for the "+
				"local rank's GPU), not %q", text)
		}
		ids = append(ids, int(id))
	}
	return ids, nil
}

// Check fails with a *UsageError naming the first GPU the machine lacks;
// gpuCount is disttrain.GPUCount's (0 without CUDA).
func (p Placement) Check(gpuCount int) error {
	if p.Device != disttrain.DeviceGPU {
		return nil
	}
	for _, id := range p.IDs {
		if id >= gpuCount {
			where := ""
			if p.LocalRank {
				where = " (--gpus local: this process's local rank)"
			}
			return usageErrorf("--gpus: GPU %d was asked for, but this machine has %d GPU(s)%s", id, gpuCount, where)
		}
	}
	return nil
}

// CheckMachine is Check against the GPUs this process sees.
func (p Placement) CheckMachine() error {
	if p.Device != disttrain.DeviceGPU {
		return nil
	}
	count, err := disttrain.GPUCount()
	if err != nil {
		return err
	}
	return p.Check(count)
}

// ExitStatus is the examples' exit status for err: 2 for a *UsageError,
// 1 for any other failure.
func ExitStatus(err error) int {
	var usage *UsageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

// String names the replicas' contexts: "cpu(0)", "gpu(0),gpu(0)".
func (p Placement) String() string {
	names := make([]string, len(p.IDs))
	for i, id := range p.IDs {
		names[i] = fmt.Sprintf("%s(%d)", p.Device, id)
	}
	return strings.Join(names, ",")
}

// KVStore is the store to use: the one given with --kvstore, else with
// several replicas on GPUs "device" (Gluon's default there; the library's
// "device" store reduces on a GPU, so CPU replicas keep "local"), else
// fallback, the example's usual default.
func (p Placement) KVStore(given string, kvstoreGiven bool, fallback string) string {
	if kvstoreGiven {
		return given
	}
	if len(p.IDs) > 1 && p.Device == disttrain.DeviceGPU {
		return "device"
	}
	return fallback
}

// Open creates one context per replica, each with threads CPU threads for
// its kernels; the caller closes them.
func (p Placement) Open(threads int) ([]*disttrain.Context, error) {
	var contexts []*disttrain.Context
	for _, id := range p.IDs {
		ctx, err := disttrain.NewContext(p.Device, id)
		if err == nil {
			err = ctx.SetNumThreads(threads)
			contexts = append(contexts, ctx)
		}
		if err != nil {
			for _, c := range contexts {
				c.Close()
			}
			return nil, err
		}
	}
	return contexts, nil
}

// Given reports whether the flag called name was set on fs's command line.
func Given(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
