package main

import "testing"

func TestPushPull(t *testing.T) {
	grad := []float32{0.5, -1, 2.5, 8}
	got, err := pushPull([]float32{1, 2, 3, 4}, grad)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(grad) {
		t.Fatalf("pulled %d values, want %d", len(got), len(grad))
	}
	for i := range grad {
		if got[i] != grad[i] {
			t.Fatalf("pulled %v, want the pushed %v", got, grad)
		}
	}
}
