// train_image_classifier is examples/c/train_image_classifier.c through the
// Go binding: the seeds' image-classification walkthrough (the d2l
// multi-machine chapter, MXNet's image_classification.py). ResNet-18 or
// VGG-11 on a CIFAR-10 (or CIFAR-100) binary directory: SGD with momentum
// and weight decay, the rate cut by --lr-factor at the epochs listed in
// --lr-steps (or d2l's schedule: x --lr-decay every --lr-period epochs),
// random crop (padding 4) and horizontal flip on the training set, CIFAR's
// per-channel normalisation. d2l's own recipe is
// --model resnet18_d2l --lr-period 4 --lr-decay 0.9.
//
//	train_image_classifier --data DIR [--variant 10|100] [--model resnet18|resnet18_d2l|vgg11|vgg11_bn_cifar]
//	    [--epochs N] [--batch-size N] [--lr X] [--momentum X] [--wd X]
//	    [--lr-steps E1,E2,...] [--lr-factor X] [--lr-period E] [--lr-decay X]
//	    [--kvstore TYPE|none]
//	    [--threads N] [--loader-threads N] [--seed N] [--metrics FILE]
//	    [--no-augment] [--gpus LIST | --cpus N] [--precision fp32|fp16|bf16]
//
// --gpus 0,1 trains one replica on each listed GPU (0,0: two on GPU 0;
// local: the GPU of this process's local rank), every batch split across
// them as Gluon's split_and_load does and the kvstore defaulting to
// "device" when there are several; no --gpus is the CPU, --cpus N replicas
// there. --precision fp16 (with loss scaling) or bf16 is mixed precision,
// GPUs only. A GPU the machine lacks exits with status 2 before anything
// trains.
//
// DIR holds data_batch_1.bin ... data_batch_5.bin and test_batch.bin (or
// train.bin and test.bin for CIFAR-100), e.g. the cifar-10-batches-bin
// folder of https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz.
// Across machines, as parameter-server workers:
//
//	dtrun -n 2 -s 2 -H hosts --launcher ssh -- train_image_classifier_go --data DIR --kvstore dist_sync
//
// Each worker trains on its part of the data, --lr is the rate for the
// global batch (divided by the workers for the synchronous stores, which
// sum), and only rank 0 evaluates and prints test_accuracy=<fraction> last.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	disttrain "github.com/disttrain/disttrain/bindings/go"
	"github.com/disttrain/disttrain/bindings/go/examples/devices"
)

type options struct {
	data          string
	variant       int
	model         string
	epochs        int
	batchSize     int64
	lr            float64
	momentum      float64
	wd            float64
	lrSteps       []int64
	lrFactor      float64
	lrPeriod      int64
	lrDecay       float64
	kvstore       string
	threads       int
	loaderThreads int64
	seed          uint64
	metrics       string
	augment       bool
	placement     devices.Placement
}

// parseSteps reads "15,25": increasing positive epochs.
func parseSteps(text string) ([]int64, error) {
	var steps []int64
	for _, field := range strings.Split(text, ",") {
		v, err := strconv.ParseInt(field, 10, 64)
		if err != nil || v <= 0 || (len(steps) > 0 && v <= steps[len(steps)-1]) {
			return nil, fmt.Errorf("--lr-steps needs increasing positive epochs, e.g. 15,25, not %q", text)
		}
		steps = append(steps, v)
	}
	return steps, nil
}

func parseFlags() options {
	var o options
	var steps string
	var noAugment bool
	flag.StringVar(&o.data, "data", "", "CIFAR binary files (data_batch_*.bin, test_batch.bin); required")
	flag.IntVar(&o.variant, "variant", 10, "CIFAR-10 or CIFAR-100 (train.bin, test.bin)")
	flag.StringVar(&o.model, "model", "resnet18", "network: resnet18 (the CIFAR ResNet-18), resnet18_d2l (d2l's own), vgg11 (Gluon's model zoo) or vgg11_bn_cifar")
	flag.IntVar(&o.epochs, "epochs", 30, "epochs")
	flag.Int64Var(&o.batchSize, "batch-size", 128, "samples per batch per worker")
	flag.Float64Var(&o.lr, "lr", 0.1, "SGD rate for the global batch")
	flag.Float64Var(&o.momentum, "momentum", 0.9, "SGD momentum")
	flag.Float64Var(&o.wd, "wd", 5e-4, "weight decay")
	flag.StringVar(&steps, "lr-steps", "15,25", "epochs after which the rate is cut")
	flag.Float64Var(&o.lrFactor, "lr-factor", 0.1, "the cut")
	flag.Int64Var(&o.lrPeriod, "lr-period", 0, "d2l's schedule instead: the rate is multiplied by --lr-decay every E epochs (d2l: 4)")
	flag.Float64Var(&o.lrDecay, "lr-decay", 0.9, "with --lr-period (d2l's 0.9)")
	flag.StringVar(&o.kvstore, "kvstore", "local", "local, dist_sync, allreduce, ... or none")
	flag.IntVar(&o.threads, "threads", 0, "CPU threads (0: OMP_NUM_THREADS or all)")
	flag.Int64Var(&o.loaderThreads, "loader-threads", 0, "threads that decode and augment (0: the library's choice)")
	flag.Uint64Var(&o.seed, "seed", 1, "initialisation, shuffling, augmentation")
	flag.StringVar(&o.metrics, "metrics", "", "JSON-lines metrics log, one line per epoch")
	flag.BoolVar(&noAugment, "no-augment", false, "no random crop or flip")
	deviceFlags := devices.Register(flag.CommandLine)
	flag.Parse()
	fail := func(format string, a ...interface{}) {
		fmt.Fprintf(os.Stderr, "error: "+format+"\n", a...)
		flag.Usage()
		os.Exit(2)
	}
	if flag.NArg() != 0 {
		fail("unexpected argument %q", flag.Arg(0))
	}
	if o.data == "" {
		fail("--data DIR is required (a CIFAR binary directory)")
	}
	if o.variant != 10 && o.variant != 100 {
		fail("--variant must be 10 or 100")
	}
	if o.model != "resnet18" && o.model != "resnet18_d2l" && o.model != "vgg11" && o.model != "vgg11_bn_cifar" {
		fail("--model must be resnet18, resnet18_d2l, vgg11 or vgg11_bn_cifar")
	}
	if o.lrPeriod < 0 || o.lrDecay <= 0 || o.lrDecay > 1 {
		fail("--lr-period must not be negative, --lr-decay in (0, 1]")
	}
	if o.epochs < 0 || o.batchSize <= 0 || o.threads < 0 || o.loaderThreads < 0 || o.lrFactor <= 0 || o.lrFactor > 1 {
		fail("--epochs, --threads and --loader-threads must not be negative, --batch-size positive, --lr-factor in (0, 1]")
	}
	if steps != "" {
		var err error
		if o.lrSteps, err = parseSteps(steps); err != nil {
			fail("%v", err)
		}
	}
	o.augment = !noAugment
	var err error
	if o.placement, err = deviceFlags.Placement(flag.CommandLine); err != nil {
		fail("%v", err)
	}
	o.kvstore = o.placement.KVStore(o.kvstore, devices.Given(flag.CommandLine, "kvstore"), "local")
	return o
}

func main() {
	o := parseFlags()
	// As an MXNet program does on import: launched as the job's scheduler
	// or one of its servers, this process serves the job until it ends, so
	// launchers that run one command line for every role work unchanged.
	role, err := disttrain.NodeRole()
	if err == nil && role != disttrain.RoleWorker {
		err = disttrain.RunNode(nil)
	} else if err == nil {
		// Every GPU asked for must exist before anything trains.
		if err = o.placement.CheckMachine(); err == nil {
			err = run(o)
		}
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
	// A distributed KVStore must be closed to leave its job cleanly, so
	// every path closes.
	var handles closer
	defer handles.closeAll()

	// The net lives on the first context; the trainer replicates it onto
	// the others and splits every batch across all of them.
	contexts, err := o.placement.Open(o.threads)
	if err != nil {
		return err
	}
	for _, ctx := range contexts {
		handles.add(ctx)
	}
	net, err := disttrain.NewNet(contexts[0], o.model, fmt.Sprintf(`{"input_shape": [3, 32, 32], "classes": %d}`, o.variant))
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
	lr := o.lr
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
		kind, err := kv.Type()
		if err != nil {
			return err
		}
		// The synchronous distributed stores sum the workers' gradients.
		switch kind {
		case "dist_sync", "dist_sync_device", "allreduce", "dist_nccl":
			lr /= float64(workers)
		}
	}

	loaderOpts, err := disttrain.DefaultDataLoaderOptions()
	if err != nil {
		return err
	}
	loaderOpts.BatchSize = o.batchSize
	loaderOpts.Seed = o.seed
	loaderOpts.NumParts = workers
	loaderOpts.PartIndex = rank
	loaderOpts.NumWorkers = o.loaderThreads
	if o.augment {
		loaderOpts.RandomCropPadding = 4
		loaderOpts.RandomFlip = true
	}
	train, err := disttrain.NewCIFARLoader(o.data, "train", o.variant, &loaderOpts)
	if err != nil {
		return err
	}
	handles.add(train)
	testOpts := loaderOpts
	testOpts.Shuffle = false
	testOpts.NumParts = 1
	testOpts.PartIndex = 0
	testOpts.RandomCropPadding = 0
	testOpts.RandomFlip = false
	test, err := disttrain.NewCIFARLoader(o.data, "test", o.variant, &testOpts)
	if err != nil {
		return err
	}
	handles.add(test)

	// The rate drops by lr-factor after each listed epoch, or with
	// --lr-period by lr-decay every lr-period epochs (d2l's lr_period and
	// lr_decay, MXNet's FactorScheduler). The schedule counts updates, so
	// epochs become steps of this worker.
	batches, err := train.NumBatches()
	if err != nil {
		return err
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
	if err := opt.SetFloat("wd", o.wd); err != nil {
		return err
	}
	if o.lrPeriod > 0 {
		if err := opt.SetString("lr_scheduler", "factor"); err != nil {
			return err
		}
		if err := opt.SetInt("step", o.lrPeriod*int64(batches)); err != nil {
			return err
		}
		if err := opt.SetFloat("factor", o.lrDecay); err != nil {
			return err
		}
	} else if len(o.lrSteps) > 0 {
		steps := make([]int64, len(o.lrSteps))
		for i, epoch := range o.lrSteps {
			steps[i] = epoch * int64(batches)
		}
		if err := opt.SetString("lr_scheduler", "multifactor"); err != nil {
			return err
		}
		if err := opt.SetIntList("steps", steps); err != nil {
			return err
		}
		if err := opt.SetFloat("factor", o.lrFactor); err != nil {
			return err
		}
	}

	trainer, err := disttrain.NewTrainer(net, opt, kv, &disttrain.TrainerOptions{ExtraContexts: contexts[1:]})
	if err != nil {
		return err
	}
	handles.add(trainer)
	if rank == 0 {
		augment := ""
		if o.augment {
			augment = ", crop+flip"
		}
		fmt.Printf("training %s on CIFAR-%d: %d epochs, %d worker(s) x batch %d (%d steps each), SGD lr %g momentum %g "+
			"wd %g, kvstore %s, contexts %s, precision %s%s\n", o.model, o.variant, o.epochs, workers, o.batchSize,
			batches, lr, o.momentum, o.wd, o.kvstore, o.placement, o.placement.PrecisionName, augment)
	}
	fit := disttrain.FitOptions{Epochs: o.epochs}
	var evaluate *disttrain.DataLoader
	if rank == 0 {
		fit.MetricsPath = o.metrics
		evaluate = test
	} else {
		fit.Progress = disttrain.ProgressSilent // rank 0 speaks for the job
	}
	if err := trainer.Fit(train, evaluate, &fit); err != nil {
		return err
	}
	if rank == 0 {
		accuracy, _, err := trainer.Evaluate(test)
		if err != nil {
			return err
		}
		fmt.Printf("test_accuracy=%.4f\n", accuracy)
	}
	return nil
}
