package disttrain

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// A Go loop of its own over the "allreduce" store lets a worker started in
// a lost one's place into the job: AdmitJoiningWorkers before each round,
// and the state (the next round and the weights) through HandOverState.
// Every worker pushes rank+1 into every element each round and subtracts
// the sum from its weights, so after R rounds, of which worker 1 took part
// in K, every weight is rejoinInit - 3 K - (R - K) exactly.
const (
	rejoinRounds = 100
	rejoinLeave  = 5 // worker 1's rounds before its first process dies
	rejoinElems  = 1000
	rejoinInit   = 100
)

func encodeRejoinState(round int, weights []float32) []byte {
	state := binary.LittleEndian.AppendUint32(nil, uint32(round))
	for _, w := range weights {
		state = binary.LittleEndian.AppendUint32(state, math.Float32bits(w))
	}
	return state
}

func decodeRejoinState(state []byte, weights []float32) (int, error) {
	if len(state) != 4*(1+len(weights)) {
		return 0, fmt.Errorf("handed %d bytes, want %d", len(state), 4*(1+len(weights)))
	}
	for i := range weights {
		weights[i] = math.Float32frombits(binary.LittleEndian.Uint32(state[4*(i+1):]))
	}
	return int(binary.LittleEndian.Uint32(state)), nil
}

// allreduceRejoinWorker is one worker of TestAllreduceWorkerRejoins' job.
func allreduceRejoinWorker() error {
	kv, err := NewKVStore("allreduce", nil)
	if err != nil {
		return err
	}
	defer kv.Close()
	rank, err := kv.Rank()
	if err != nil {
		return err
	}
	joined, _, err := kv.JoinedRunningJob()
	if err != nil {
		return err
	}
	ctx, err := CPU()
	if err != nil {
		return err
	}
	defer ctx.Close()
	dims := []int64{rejoinElems}
	mine := make([]float32, rejoinElems)
	weights := make([]float32, rejoinElems)
	for i := range mine {
		mine[i] = float32(rank + 1)
		weights[i] = rejoinInit
	}
	pushed, err := FromFloat32(ctx, dims, mine)
	if err != nil {
		return err
	}
	defer pushed.Close()
	out, err := NewNDArray(ctx, Float32, dims)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := kv.Init([]uint64{0, 1}, []*NDArray{out, out}); err != nil {
		return err
	}
	first := 1
	if joined {
		state, err := kv.HandOverState(nil)
		if err != nil {
			return err
		}
		if first, err = decodeRejoinState(state, weights); err != nil {
			return err
		}
		fmt.Printf("allreduce worker rank %d joined before round %d\n", rank, first)
	}
	for round := first; round <= rejoinRounds; round++ {
		if round > first || !joined {
			admitted, err := kv.AdmitJoiningWorkers()
			if err != nil {
				return err
			}
			if admitted {
				handed, err := kv.HandOverState(encodeRejoinState(round, weights))
				if err != nil {
					return err
				}
				if len(handed) != 0 {
					return fmt.Errorf("a worker that held the state was handed %d bytes", len(handed))
				}
			}
		}
		if err := kv.PushPull([]uint64{0}, []*NDArray{pushed}, []*NDArray{out}, 0); err != nil {
			return err
		}
		sums, err := out.Float32s()
		if err != nil {
			return err
		}
		for i, s := range sums {
			weights[i] -= s
		}
		if rank == 1 && !joined && round == rejoinLeave {
			fmt.Printf("allreduce worker rank 1 dies after round %d\n", round)
			os.Exit(3) // no goodbye: the job has lost it, and dtrun starts it again
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Both hold the same weights: their sum is twice each one's.
	held, err := FromFloat32(ctx, dims, weights)
	if err != nil {
		return err
	}
	defer held.Close()
	if err := kv.PushPull([]uint64{1}, []*NDArray{held}, []*NDArray{out}, 0); err != nil {
		return err
	}
	sums, err := out.Float32s()
	if err != nil {
		return err
	}
	for i, s := range sums {
		if s != 2*weights[i] {
			return fmt.Errorf("rank %d: weight %d is %v here, and the two sum to %v", rank, i, weights[i], s)
		}
	}
	fmt.Printf("allreduce worker rank %d: weights %v after round %d\n", rank, weights[0], rejoinRounds)
	return kv.Barrier()
}

// Worker 1's first process dies after rejoinLeave rounds; dtrun starts it
// again, and the one in the job lets it in and hands it the round and the
// weights: both end with the exact weights of the rounds each took part in.
func TestAllreduceWorkerRejoins(t *testing.T) {
	out := runJob(t, "allreduce_rejoin_worker", "-n", "2", "-s", "0", "--worker-loss", "continue",
		"--max-restarts", "1", "--env", "DT_HEARTBEAT_INTERVAL_S=0.2")
	joinedAt := regexp.MustCompile(`rank 1 joined before round (\d+)`).FindStringSubmatch(out)
	if joinedAt == nil {
		t.Fatal("worker 1 did not join again")
	}
	first, _ := strconv.Atoi(joinedAt[1])
	if first <= rejoinLeave || first > rejoinRounds {
		t.Fatalf("worker 1 joined before round %d, want one in (%d, %d]", first, rejoinLeave, rejoinRounds)
	}
	rounds := rejoinLeave + (rejoinRounds - first + 1)
	want := float64(rejoinInit - 3*rounds - (rejoinRounds - rounds))
	for rank := 0; rank < 2; rank++ {
		m := regexp.MustCompile(fmt.Sprintf(`rank %d: weights (\S+) after round`, rank)).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("worker %d did not finish", rank)
		}
		if got, err := strconv.ParseFloat(m[1], 32); err != nil || got != want {
			t.Fatalf("worker %d: weights %s, want %v (worker 1 in %d of %d rounds)", rank, m[1], want, rounds, rejoinRounds)
		}
	}
}
