package disttrain

import "github.com/disttrain/disttrain/bindings/go/internal/capi"

// Role is a process's part in a parameter-server job.
type Role int32

// Roles, as dt_role.
const (
	RoleWorker    Role = 0
	RoleServer    Role = 1
	RoleScheduler Role = 2
)

func (r Role) String() string {
	switch r {
	case RoleWorker:
		return "worker"
	case RoleServer:
		return "server"
	case RoleScheduler:
		return "scheduler"
	}
	return "unknown role"
}

// NodeRole is this process's role from the environment (DMLC_ROLE first;
// worker when no source names one); an unknown value is
// StatusInvalidArgument.
func NodeRole() (Role, error) {
	if err := CheckVersion(); err != nil {
		return 0, err
	}
	var r int32
	if err := check(capi.Dt_node_role(&r)); err != nil {
		return 0, err
	}
	return Role(r), nil
}

// LocalRank is this worker's place among the worker processes of its host:
// the GPU a program that trains on one GPU per worker uses (torchrun's
// LOCAL_RANK). From DT_LOCAL_RANK / DT_LOCAL_SIZE (dtrun), LOCAL_RANK /
// LOCAL_WORLD_SIZE (torchrun), Open MPI's, MPICH's or srun's variables; 0 of
// 1 when none is set, a size of 0 when the launcher does not say (srun). A
// malformed variable is StatusInvalidArgument naming it.
func LocalRank() (rank, size int, err error) {
	if err := CheckVersion(); err != nil {
		return 0, 0, err
	}
	var r, s int32
	if err := check(capi.Dt_node_local_rank(&r, &s)); err != nil {
		return 0, 0, err
	}
	return int(r), int(s), nil
}

// RunNode runs this process as the scheduler or a server of the job that
// opts' layout fields and the environment (DMLC_* first) describe, until
// the job shuts down (nil) or fails. Workers get StatusInvalidArgument:
// they create a distributed KVStore instead.
func RunNode(opts *KVStoreOptions) error {
	if err := CheckVersion(); err != nil {
		return err
	}
	return withKVStoreOptions(opts, func(c capi.Dt_kvstore_options, host string) error {
		return check(capi.Dt_go_node_run(c, host))
	})
}
