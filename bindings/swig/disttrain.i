/* The one SWIG interface over include/dt_c_api.h, shared by every language.
 *
 * It wraps an explicit allowlist: everything is ignored first, then each
 * dt_* function and type that a binding may call is named below. A new C
 * function reaches a binding only when it is added here, on purpose.
 *
 * Language-specific typemaps (status -> exception/error, out-parameters,
 * bulk data) live beside this file and are included by language:
 *   java.i  (Java; Scala is a layer over the Java jar, SWIG has no Scala)
 *   go.i    (Go, through cgo)
 * Each typemap file must turn a non-OK dt_status into the language's error
 * inside the same native call, from that thread's dt_last_error().
 */
%module disttrain

%{
#include "dt_c_api.h"
%}

/* Ignore everything, then re-enable the allowlist (SWIG matches the most
 * specific %rename first). */
%rename("$ignore", %$isfunction) "";
%rename("$ignore", %$isclass) "";

#if defined(SWIGJAVA)
%include "java.i"
#elif defined(SWIGGO)
%include "go.i"
#else
#error "disttrain.i: no typemaps for this SWIG target"
#endif

/* ---- allowlist: functions ---- */
%rename("%s") dt_status_string;
%rename("%s") dt_last_error;
%rename("%s") dt_version;
%rename("%s") dt_version_string;
%rename("%s") dt_build_info_init;
%rename("%s") dt_build_info_get;
%rename("%s") dt_gpu_count;
%rename("%s") dt_context_create;
%rename("%s") dt_context_free;
%rename("%s") dt_context_device_type;
%rename("%s") dt_context_device_id;
%rename("%s") dt_memory_stats_init;
%rename("%s") dt_context_memory_stats;
%rename("%s") dt_context_reset_peak_memory;
%rename("%s") dt_dtype_size;
%rename("%s") dt_dtype_name;
%rename("%s") dt_ndarray_create;
%rename("%s") dt_ndarray_free;
%rename("%s") dt_ndarray_ndim;
%rename("%s") dt_ndarray_shape;
%rename("%s") dt_ndarray_dtype;
%rename("%s") dt_ndarray_size;
%rename("%s") dt_ndarray_nbytes;
%rename("%s") dt_ndarray_context;
%rename("%s") dt_ndarray_copy_from_host;
%rename("%s") dt_ndarray_copy_to_host;
%rename("%s") dt_ndarray_copy;
%rename("%s") dt_ndarray_fill;
%rename("%s") dt_ndarray_reshape;
%rename("%s") dt_ndarray_slice;
%rename("%s") dt_ndarray_add;
%rename("%s") dt_ndarray_scale;
%rename("%s") dt_ndarray_axpy;
%rename("%s") dt_ndarray_cast;
%rename("%s") dt_ndarray_save;
%rename("%s") dt_named_arrays_load;
%rename("%s") dt_named_arrays_free;
%rename("%s") dt_named_arrays_count;
%rename("%s") dt_named_arrays_name;
%rename("%s") dt_named_arrays_get;
%rename("%s") dt_named_arrays_find;
%rename("%s") dt_context_set_num_threads;
%rename("%s") dt_context_num_threads;
%rename("%s") dt_net_create;
%rename("%s") dt_net_create_from_json;
%rename("%s") dt_net_free;
%rename("%s") dt_net_to_json;
%rename("%s") dt_net_initialize;
%rename("%s") dt_net_num_params;
%rename("%s") dt_net_param_name;
%rename("%s") dt_net_param_is_auxiliary;
%rename("%s") dt_net_find_param;
%rename("%s") dt_net_param;
%rename("%s") dt_net_grad;
%rename("%s") dt_net_set_grad_req;
%rename("%s") dt_net_forward;
%rename("%s") dt_net_backward;
%rename("%s") dt_net_num_outputs;
%rename("%s") dt_net_output;
%rename("%s") dt_net_save_params;
%rename("%s") dt_net_load_params;
%rename("%s") dt_net_set_compute_dtype;
%rename("%s") dt_net_compute_dtype;
%rename("%s") dt_net_loss_scale;
%rename("%s") dt_loss_scaling_options_init;
%rename("%s") dt_net_set_loss_scaling;
%rename("%s") dt_net_loss_scaling;
%rename("%s") dt_optimizer_create;
%rename("%s") dt_optimizer_create_from_json;
%rename("%s") dt_optimizer_free;
%rename("%s") dt_optimizer_set_double;
%rename("%s") dt_optimizer_set_int;
%rename("%s") dt_optimizer_set_bool;
%rename("%s") dt_optimizer_set_string;
%rename("%s") dt_optimizer_set_int_list;
%rename("%s") dt_optimizer_to_json;
%rename("%s") dt_kvstore_create;
%rename("%s") dt_kvstore_free;
%rename("%s") dt_kvstore_type;
%rename("%s") dt_kvstore_rank;
%rename("%s") dt_kvstore_num_workers;
%rename("%s") dt_kvstore_traffic;
%rename("%s") dt_kvstore_joined_running_job;
%rename("%s") dt_kvstore_admit_joining_workers;
%rename("%s") dt_kvstore_hand_over_state;
%rename("%s") dt_kvstore_handed_state;
%rename("%s") dt_kvstore_init;
%rename("%s") dt_kvstore_push;
%rename("%s") dt_kvstore_pull;
%rename("%s") dt_kvstore_pushpull;
%rename("%s") dt_kvstore_broadcast;
%rename("%s") dt_kvstore_init_str;
%rename("%s") dt_kvstore_push_str;
%rename("%s") dt_kvstore_pull_str;
%rename("%s") dt_kvstore_pushpull_str;
%rename("%s") dt_kvstore_set_optimizer;
%rename("%s") dt_kvstore_set_gradient_compression;
%rename("%s") dt_kvstore_barrier;
%rename("%s") dt_data_loader_options_init;
%rename("%s") dt_data_loader_create;
%rename("%s") dt_data_loader_create_mnist;
%rename("%s") dt_data_loader_create_cifar;
%rename("%s") dt_data_loader_create_image_folder;
%rename("%s") dt_data_loader_create_recordio;
%rename("%s") dt_data_loader_free;
%rename("%s") dt_data_loader_num_samples;
%rename("%s") dt_data_loader_num_batches;
%rename("%s") dt_data_loader_start_epoch;
%rename("%s") dt_data_loader_next;
%rename("%s") dt_trainer_options_init;
%rename("%s") dt_trainer_create;
%rename("%s") dt_trainer_free;
%rename("%s") dt_trainer_step;
%rename("%s") dt_trainer_train_batch;
%rename("%s") dt_trainer_evaluate;
%rename("%s") dt_trainer_set_learning_rate;
%rename("%s") dt_trainer_learning_rate;
%rename("%s") dt_trainer_save_checkpoint;
%rename("%s") dt_trainer_load_checkpoint;
%rename("%s") dt_fit_options_init;
%rename("%s") dt_trainer_fit;
%rename("%s") dt_trainer_epoch;
%rename("%s") dt_trainer_steps;
%rename("%s") dt_trainer_admit_joining_workers;
%rename("%s") dt_trainer_skipped_steps;
%rename("%s") dt_kvstore_options_init;
%rename("%s") dt_kvstore_create_ex;
%rename("%s") dt_node_role;
%rename("%s") dt_node_local_rank;
%rename("%s") dt_node_run;
%rename("%s") dt_profiler_start;
%rename("%s") dt_profiler_stop;
%rename("%s") dt_profiler_dump;

/* dt_log_set_handler is not listed: a C function pointer has no value in
 * Java or Go. Each reaches it through its own glue, which installs a C
 * handler that calls into the language: java.i (disttrainJNI.logSetHandler,
 * Disttrain.setLogHandler) and the Go package's log.go (SetLogHandler). */

/* The _init functions of option and info structs take the size of the
 * caller's struct (dt_c_api.h, "Option and info structs"). The caller is this
 * wrapper, compiled against the header the binding was generated from, so the
 * size comes from here and bindings pass the struct alone. */
%typemap(in, numinputs=0) size_t struct_size %{ $1 = sizeof *arg1; %}

/* ---- allowlist: option and info structs (plain data) ---- */
%rename("%s") dt_build_info;
%rename("%s") dt_memory_stats;
%rename("%s") dt_data_loader_options;
%rename("%s") dt_trainer_options;
%rename("%s") dt_fit_options;
%rename("%s") dt_loss_scaling_options;
%rename("%s") dt_kvstore_options;

%include <stdint.i>
#define DT_API
%include "dt_c_api.h"
