// An out-of-tree user of the installed Go module: one pushpull through a
// local kvstore, built with cgo flags from pkg-config (disttrain.pc).
package main

import (
	"fmt"
	"os"

	disttrain "github.com/disttrain/disttrain/bindings/go"
)

// pushPull pushes grad to a key initialised with init and returns what a
// pull gives back: without an optimizer the store keeps the pushed value.
func pushPull(init, grad []float32) ([]float32, error) {
	if err := disttrain.CheckVersion(); err != nil {
		return nil, err
	}
	ctx, err := disttrain.CPU()
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	dims := []int64{int64(len(init))}
	weight, err := disttrain.FromFloat32(ctx, dims, init)
	if err != nil {
		return nil, err
	}
	defer weight.Close()
	g, err := disttrain.FromFloat32(ctx, dims, grad)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	kv, err := disttrain.NewKVStore("local", nil)
	if err != nil {
		return nil, err
	}
	defer kv.Close()
	keys := []uint64{7}
	if err := kv.Init(keys, []*disttrain.NDArray{weight}); err != nil {
		return nil, err
	}
	if err := kv.PushPull(keys, []*disttrain.NDArray{g}, []*disttrain.NDArray{weight}, 0); err != nil {
		return nil, err
	}
	return weight.Float32s()
}

func main() {
	got, err := pushPull([]float32{1, 2, 3, 4}, []float32{0.5, -1, 2.5, 8})
	if err != nil {
		fmt.Fprintln(os.Stderr, "go consumer:", err)
		os.Exit(1)
	}
	fmt.Printf("go consumer OK: disttrain %s, pushpull gave %v\n", disttrain.Version(), got)
}
