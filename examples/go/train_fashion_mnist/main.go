// train_fashion_mnist trains LeNet (or an MLP) on Fashion-MNIST through the
// Go binding, the way MXNet Gluon users do with gluon.Trainer and
// kv.create().
//
//	train_fashion_mnist [--model lenet|mlp] [--epochs N] [--batch-size N]
//	                    [--lr X] [--momentum X] [--kvstore TYPE|none]
//	                    [--data DIR] [--seed N] [--threads N]
//	                    [--min-accuracy X]
//	                    [--gpus LIST | --cpus N] [--precision fp32|fp16|bf16]
//
// Prints per-epoch progress; the last line is test_accuracy=<fraction>.
//
// --gpus 0,1 trains one replica on each listed GPU (0,0: two on GPU 0;
// local: the GPU of this process's local rank), the trainer splitting every
// batch of --batch-size across them as Gluon's split_and_load does, and
// the kvstore defaulting to "device" when there are several; no --gpus is
// the CPU, --cpus N replicas there. A GPU the machine lacks, or fp16/bf16
// on the CPU, exits with status 2 before anything trains.
//
// With --kvstore dist_sync or dist_async this process is one worker of a
// parameter-server job described by the DMLC_* environment (start it with
// dtrun -n 2 -s 2 -- train_fashion_mnist --kvstore dist_sync): each worker
// trains on its rank-th part of the training set with --batch-size samples
// per step, and only rank 0 evaluates and prints.
//
// --lr is the rate single-machine training would use for the job's global
// batch. As in MXNet, every worker rescales its gradient by 1/its batch and
// dist_sync servers sum the workers' gradients, so with dist_sync the
// trainer gets lr / num_workers; with dist_async every push is its own
// update and the rate stays as given.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	disttrain "github.com/disttrain/disttrain/bindings/go"
	"github.com/disttrain/disttrain/bindings/go/examples/devices"
)

type options struct {
	model       string
	epochs      int
	batchSize   int64
	lr          float64
	momentum    float64
	kvstore     string
	data        string
	seed        uint64
	threads     int
	minAccuracy float64
	placement   devices.Placement
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.model, "model", "lenet", "network: lenet or mlp")
	flag.IntVar(&o.epochs, "epochs", 5, "epochs to train")
	flag.Int64Var(&o.batchSize, "batch-size", 64, "samples per batch and worker")
	flag.Float64Var(&o.lr, "lr", 0.02, "SGD learning rate for the global batch")
	flag.Float64Var(&o.momentum, "momentum", 0.9, "SGD momentum")
	flag.StringVar(&o.kvstore, "kvstore", "local", "kvstore type: local, dist_sync, dist_async, ... or none")
	flag.StringVar(&o.data, "data", "", "Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed for initialisation and shuffling")
	flag.IntVar(&o.threads, "threads", 0, "CPU threads (0: OMP_NUM_THREADS or all)")
	flag.Float64Var(&o.minAccuracy, "min-accuracy", 0, "exit with status 1 when rank 0's test accuracy is below this")
	deviceFlags := devices.Register(flag.CommandLine)
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "error: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	if o.model != "lenet" && o.model != "mlp" {
		fmt.Fprintln(os.Stderr, "error: --model must be lenet or mlp")
		os.Exit(2)
	}
	if o.epochs < 0 || o.batchSize <= 0 || o.threads < 0 {
		fmt.Fprintln(os.Stderr, "error: --epochs and --threads must not be negative, --batch-size must be positive")
		os.Exit(2)
	}
	var err error
	if o.placement, err = deviceFlags.Placement(flag.CommandLine); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(devices.ExitStatus(err))
	}
	o.kvstore = o.placement.KVStore(o.kvstore, devices.Given(flag.CommandLine, "kvstore"), "local")
	return o
}

func main() {
	o := parseFlags()
	if o.kvstore != "none" {
		// Launchers (dtrun, MXNet's launch.py) start this same program as
		// the scheduler and the servers too, with DMLC_ROLE saying which:
		// such a process serves its part until the job ends, as MXNet's
		// programs do on `import mxnet`.
		role, err := disttrain.NodeRole()
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
			os.Exit(1)
		}
		if role != disttrain.RoleWorker {
			if err := disttrain.RunNode(nil); err != nil {
				fmt.Fprintf(os.Stderr, "error: %v\n", err)
				os.Exit(1)
			}
			return
		}
	}
	// Every GPU asked for must exist before anything trains.
	err := o.placement.CheckMachine()
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(devices.ExitStatus(err))
	}
}

// closer collects handles to close in reverse order of creation.
type closer []interface{ Close() error }

func (c *closer) add(h interface{ Close() error }) { *c = append(*c, h) }

func (c *closer) closeAll() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i].Close()
	}
}

func run(o options) error {
	// A distributed KVStore must be closed to leave its job cleanly (its
	// peers would see this worker as lost otherwise), so every path closes.
	var handles closer
	defer handles.closeAll() // pointer receiver: sees the handles added later

	// The net lives on the first context; the trainer replicates it onto
	// the others and splits every batch across all of them.
	contexts, err := o.placement.Open(o.threads)
	if err != nil {
		return err
	}
	for _, ctx := range contexts {
		handles.add(ctx)
	}
	net, err := disttrain.NewNet(contexts[0], o.model, "")
	if err != nil {
		return err
	}
	handles.add(net)
	if err := net.Initialize(o.seed); err != nil {
		return err
	}
	if err := net.SetComputeDType(o.placement.Precision); err != nil {
		return err
	}

	var kv *disttrain.KVStore
	rank, workers := 0, 1
	if o.kvstore != "none" {
		if kv, err = disttrain.NewKVStore(o.kvstore, nil); err != nil {
			return err
		}
		handles.add(kv)
		if rank, err = kv.Rank(); err != nil {
			return err
		}
		if workers, err = kv.NumWorkers(); err != nil {
			return err
		}
	}
	lr := o.lr
	if o.kvstore == "dist_sync" {
		lr /= float64(workers)
	}
	opt, err := disttrain.NewOptimizer("sgd")
	if err != nil {
		return err
	}
	handles.add(opt)
	if err := opt.SetFloat("learning_rate", lr); err != nil {
		return err
	}
	if err := opt.SetFloat("momentum", o.momentum); err != nil {
		return err
	}

	loaderOpts, err := disttrain.DefaultDataLoaderOptions()
	if err != nil {
		return err
	}
	loaderOpts.BatchSize = o.batchSize
	loaderOpts.Seed = o.seed
	// Split sampler: every worker trains on its own part of the data.
	loaderOpts.NumParts = workers
	loaderOpts.PartIndex = rank
	train, err := disttrain.NewMNISTLoader(o.data, "train", &loaderOpts)
	if err != nil {
		return err
	}
	handles.add(train)
	testOpts := loaderOpts
	testOpts.Shuffle = false
	testOpts.BatchSize = 1000
	testOpts.NumParts = 1
	testOpts.PartIndex = 0
	test, err := disttrain.NewMNISTLoader(o.data, "t10k", &testOpts)
	if err != nil {
		return err
	}
	handles.add(test)

	trainer, err := disttrain.NewTrainer(net, opt, kv, &disttrain.TrainerOptions{ExtraContexts: contexts[1:]})
	if err != nil {
		return err
	}
	handles.add(trainer)

	if rank == 0 {
		fmt.Printf("training %s on Fashion-MNIST: %d epochs, %d worker(s) x batch %d, SGD lr %g momentum %g, kvstore %s, "+
			"contexts %s, precision %s\n", o.model, o.epochs, workers, o.batchSize, lr, o.momentum, o.kvstore,
			o.placement, o.placement.PrecisionName)
	}
	for epoch := 0; epoch < o.epochs; epoch++ {
		start := time.Now()
		loss, accuracy, images, err := trainEpoch(trainer, train, epoch)
		if err != nil {
			return err
		}
		if rank != 0 {
			continue // rank 0 speaks for the job
		}
		testAccuracy, _, err := trainer.Evaluate(test)
		if err != nil {
			return err
		}
		seconds := time.Since(start).Seconds()
		fmt.Printf("epoch %d/%d: loss %.4f train_accuracy %.4f test_accuracy %.4f (%.1f s, %.0f images/s)\n",
			epoch+1, o.epochs, loss, accuracy, testAccuracy, seconds, float64(images)/seconds)
	}
	if rank == 0 {
		testAccuracy, _, err := trainer.Evaluate(test)
		if err != nil {
			return err
		}
		fmt.Printf("test_accuracy=%.4f\n", testAccuracy)
		if testAccuracy < o.minAccuracy {
			return fmt.Errorf("test accuracy %.4f is below --min-accuracy %.4f", testAccuracy, o.minAccuracy)
		}
	}
	return nil
}

// trainEpoch runs one epoch of this worker's part and returns the mean
// loss, the training accuracy and the number of images.
func trainEpoch(trainer *disttrain.Trainer, loader *disttrain.DataLoader, epoch int) (float64, float64, int64, error) {
	if err := loader.StartEpoch(epoch); err != nil {
		return 0, 0, 0, err
	}
	var lossSum float64
	var correct, images int64
	for {
		data, labels, ok, err := loader.Next()
		if err != nil {
			return 0, 0, 0, err
		}
		if !ok {
			break
		}
		shape, err := labels.Shape()
		if err == nil {
			var loss float64
			var c int64
			loss, c, err = trainer.TrainBatch(data, labels)
			lossSum += loss * float64(shape[0])
			correct += c
			images += shape[0]
		}
		data.Close()
		labels.Close()
		if err != nil {
			return 0, 0, 0, err
		}
	}
	if images == 0 {
		return 0, 0, 0, fmt.Errorf("epoch %d had no batches", epoch)
	}
	return lossSum / float64(images), float64(correct) / float64(images), images, nil
}
