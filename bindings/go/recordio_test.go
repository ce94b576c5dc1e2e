package disttrain

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeRecordIO writes dir/set.rec of n solid-colour 4x4 PNG records in
// dmlc-core's framing (none holds the magic, so none is split), record i of
// class i%3 and red level 20*i; no index, so the loader walks the file.
func writeRecordIO(t *testing.T, n int) string {
	t.Helper()
	var rec bytes.Buffer
	for i := 0; i < n; i++ {
		img := image.NewRGBA(image.Rect(0, 0, 4, 4))
		for p := 0; p < 16; p++ {
			img.Set(p%4, p/4, color.RGBA{uint8(20 * i), 0, 0, 255})
		}
		var payload bytes.Buffer
		// MXNet's image record header: flag 0, the label, id, id2.
		noErr(t, binary.Write(&payload, binary.LittleEndian, []uint32{0, math.Float32bits(float32(i % 3)), uint32(i), 0, 0, 0}))
		noErr(t, png.Encode(&payload, img))
		noErr(t, binary.Write(&rec, binary.LittleEndian, []uint32{0xced7230a, uint32(payload.Len())}))
		rec.Write(payload.Bytes())
		rec.Write(make([]byte, (4-payload.Len()%4)%4))
	}
	path := filepath.Join(t.TempDir(), "set.rec")
	noErr(t, os.WriteFile(path, rec.Bytes(), 0o644))
	return path
}

func TestRecordIOLoader(t *testing.T) {
	path := writeRecordIO(t, 6)
	opts := get(DefaultDataLoaderOptions())(t)
	opts.BatchSize = 6
	opts.Shuffle = false
	loader := get(NewRecordIOLoader(path, "", 2, 3, &opts))(t)
	defer loader.Close()
	if n := get(loader.NumSamples())(t); n != 6 {
		t.Fatalf("samples %d, want 6", n)
	}
	noErr(t, loader.StartEpoch(0))
	data, labels, ok, err := loader.Next()
	if err != nil || !ok {
		t.Fatalf("first batch: ok=%v err=%v", ok, err)
	}
	defer data.Close()
	defer labels.Close()
	if shape := get(data.Shape())(t); !reflect.DeepEqual(shape, []int64{6, 3, 2, 3}) {
		t.Fatalf("batch shape %v, want [6 3 2 3]", shape)
	}
	if got := get(labels.Int32s())(t); !reflect.DeepEqual(got, []int32{0, 1, 2, 0, 1, 2}) {
		t.Fatalf("labels %v", got)
	}

	// A bad magic: StatusIO naming the file and the byte offset.
	noErr(t, os.WriteFile(path, []byte{1, 2, 3, 4, 0, 0, 0, 0}, 0o644))
	_, err = NewRecordIOLoader(path, "", 2, 3, nil)
	wantStatus(t, "a bad magic", err, StatusIO)
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "byte offset 0") {
		t.Fatalf("bad magic: %v", err)
	}
}
