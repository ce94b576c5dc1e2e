package disttrain

// NDArrays, the local kvstore, and net and optimizer descriptions through the
// package. Handles and errors: disttrain_test.go.

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestNDArrayRoundTrip(t *testing.T) {
	ctx := cpu(t)
	in := []float32{1, 2, 3, 4, 5, 6}
	a := get(FromFloat32(ctx, []int64{2, 3}, in))(t)
	defer a.Close()
	if got := get(a.Float32s())(t); !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip: %v", got)
	}
	if s := get(a.Shape())(t); !reflect.DeepEqual(s, []int64{2, 3}) {
		t.Fatalf("shape %v", s)
	}
	if n := get(a.NBytes())(t); n != 24 {
		t.Fatalf("nbytes %d", n)
	}
	ac := get(a.Context())(t)
	if d := get(ac.DeviceType())(t); d != DeviceCPU {
		t.Fatalf("context %v", d)
	}
	ac.Close()

	// Views share storage.
	row := get(a.Slice(1, 2))(t)
	defer row.Close()
	if err := row.Fill(9); err != nil {
		t.Fatal(err)
	}
	flat := get(a.Reshape([]int64{-1}))(t)
	defer flat.Close()
	if got := get(flat.Float32s())(t); !reflect.DeepEqual(got, []float32{1, 2, 3, 9, 9, 9}) {
		t.Fatalf("after filling row 1: %v", got)
	}

	// Arithmetic: a = 2a + a; then a += 0.5 * ones.
	b := get(NewNDArray(ctx, Float32, []int64{2, 3}))(t)
	defer b.Close()
	if err := b.CopyFromArray(a); err != nil {
		t.Fatal(err)
	}
	if err := b.Scale(2); err != nil {
		t.Fatal(err)
	}
	if err := Add(a, a, b); err != nil {
		t.Fatal(err)
	}
	ones := get(NewNDArray(ctx, Float32, []int64{2, 3}))(t)
	defer ones.Close()
	ones.Fill(1)
	if err := a.Axpy(0.5, ones); err != nil {
		t.Fatal(err)
	}
	if got := get(a.Float32s())(t); !reflect.DeepEqual(got, []float32{3.5, 6.5, 9.5, 27.5, 27.5, 27.5}) {
		t.Fatalf("arithmetic: %v", got)
	}

	// int64 in and out, and a cast to int32.
	ints := []int64{-4, 0, 1 << 40}
	i64 := get(FromInt64(ctx, []int64{3}, ints))(t)
	defer i64.Close()
	out := make([]int64, 3)
	if err := i64.CopyToInt64(out); err != nil || !reflect.DeepEqual(out, ints) {
		t.Fatalf("int64 round trip: %v %v", out, err)
	}
	i32 := get(NewNDArray(ctx, Int32, []int64{2, 3}))(t)
	defer i32.Close()
	if err := i32.CastFrom(a); err != nil {
		t.Fatal(err)
	}
	if got := get(i32.Int32s())(t); !reflect.DeepEqual(got, []int32{3, 6, 9, 27, 27, 27}) {
		t.Fatalf("cast: %v", got)
	}

	// A scalar has no dims and one element.
	s := get(NewNDArray(ctx, Float64, nil))(t)
	defer s.Close()
	if n := get(s.Size())(t); n != 1 {
		t.Fatalf("scalar size %d", n)
	}
	if err := CopyFrom(s, []float64{2.5}); err != nil {
		t.Fatal(err)
	}
	if v := get(ToSlice[float64](s))(t); v[0] != 2.5 {
		t.Fatalf("scalar %v", v)
	}

	// Through a safetensors file and back.
	path := filepath.Join(t.TempDir(), "arrays.safetensors")
	if err := SaveArrays(path, []string{"a", "ints"}, []*NDArray{a, i64}); err != nil {
		t.Fatal(err)
	}
	list := get(LoadArrays(ctx, path))(t)
	defer list.Close()
	if name := get(list.Name(1))(t); name != "ints" {
		t.Fatalf("entry 1 is %q", name)
	}
	got := get(list.Find("ints"))(t)
	defer got.Close()
	if v := get(got.Int64s())(t); !reflect.DeepEqual(v, ints) {
		t.Fatalf("loaded %v", v)
	}
}

func TestKVStoreLocal(t *testing.T) {
	ctx := cpu(t)
	kv := get(NewKVStore("local", nil))(t)
	defer kv.Close()
	if typ := get(kv.Type())(t); typ != "local" {
		t.Fatalf("type %q", typ)
	}
	if r, n := get(kv.Rank())(t), get(kv.NumWorkers())(t); r != 0 || n != 1 {
		t.Fatalf("rank %d of %d", r, n)
	}
	if joined, before, err := kv.JoinedRunningJob(); err != nil || joined || before != 0 {
		t.Fatalf("joined %v after %d rounds, %v", joined, before, err)
	}
	// Only "allreduce" lets workers into a running job (rejoin_test.go).
	if admitted := get(kv.AdmitJoiningWorkers())(t); admitted {
		t.Fatal("a local store let a worker in")
	}
	_, err := kv.HandOverState([]byte{1, 2, 3})
	wantStatus(t, "HandOverState on a local store", err, StatusNotSupported)
	zero := get(NewNDArray(ctx, Float32, []int64{4}))(t)
	defer zero.Close()
	if err := kv.Init([]uint64{3}, []*NDArray{zero}); err != nil {
		t.Fatal(err)
	}
	x := get(FromFloat32(ctx, []int64{4}, []float32{1, 2, 3, 4}))(t)
	defer x.Close()
	y := get(FromFloat32(ctx, []int64{4}, []float32{10, 20, 30, 40}))(t)
	defer y.Close()
	out := get(NewNDArray(ctx, Float32, []int64{4}))(t)
	defer out.Close()
	// Values pushed under one key in one call are summed.
	if err := kv.PushPull([]uint64{3, 3}, []*NDArray{x, y}, []*NDArray{out, out}, 0); err != nil {
		t.Fatal(err)
	}
	if got := get(out.Float32s())(t); !reflect.DeepEqual(got, []float32{11, 22, 33, 44}) {
		t.Fatalf("pushpull: %v", got)
	}
	if err := kv.InitStr([]string{"fc1.weight"}, []*NDArray{x}); err != nil {
		t.Fatal(err)
	}
	if err := kv.PullStr([]string{"fc1.weight"}, []*NDArray{out}, 0); err != nil {
		t.Fatal(err)
	}
	if got := get(out.Float32s())(t); !reflect.DeepEqual(got, []float32{1, 2, 3, 4}) {
		t.Fatalf("string key: %v", got)
	}
	wantStatus(t, "a name with a NUL", kv.PushStr([]string{"a\x00b"}, []*NDArray{x}, 0), StatusInvalidArgument)
	if err := kv.Barrier(); err != nil {
		t.Fatal(err)
	}
}

func TestNetAndOptimizerDescriptions(t *testing.T) {
	ctx := cpu(t)
	net := get(NewNet(ctx, "lenet", ""))(t)
	defer net.Close()
	desc := get(net.JSON())(t)
	again := get(NewNetFromJSON(ctx, desc))(t)
	defer again.Close()
	if n, m := get(net.NumParams())(t), get(again.NumParams())(t); n == 0 || n != m {
		t.Fatalf("params %d and %d", n, m)
	}
	name := get(net.ParamName(0))(t)
	if i := get(net.FindParam(name))(t); i != 0 {
		t.Fatalf("FindParam(%q) = %d", name, i)
	}
	if aux := get(net.ParamIsAuxiliary(0))(t); aux {
		t.Fatalf("%s is auxiliary", name)
	}
	w := get(net.Param(0))(t)
	defer w.Close()
	if dt := get(w.DType())(t); dt != Float32 {
		t.Fatalf("dtype %v", dt)
	}

	opt := get(NewOptimizer("sgd"))(t)
	defer opt.Close()
	if err := opt.SetFloat("learning_rate", 0.125); err != nil {
		t.Fatal(err)
	}
	if err := opt.SetBool("nesterov", true); err != nil {
		t.Fatal(err)
	}
	js := get(opt.JSON())(t)
	if !strings.Contains(js, "0.125") || !strings.HasSuffix(js, "}") {
		t.Fatalf("optimizer JSON %q", js)
	}
	copied := get(NewOptimizerFromJSON(js))(t)
	defer copied.Close()
	if js2 := get(copied.JSON())(t); js2 != js {
		t.Fatalf("JSON round trip: %q vs %q", js2, js)
	}
}
