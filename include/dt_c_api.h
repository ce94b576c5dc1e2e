/*
 * dt_c_api.h - the one public header of disttrain.
 *
 * Pure C99, self-contained. Everything the library exports is declared here
 * and named dt_* / DT_*. This header is the single source of the version.
 *
 * Conventions:
 *  - Every fallible call returns dt_status. On a non-OK return the calling
 *    thread's dt_last_error() holds a message naming the call and the cause;
 *    out-parameters are left untouched.
 *  - Out-parameters come first, then the object, then inputs. Arrays are
 *    pointer + count.
 *  - dt_X_create()/dt_X_free() pair up; free accepts NULL. A second free of
 *    the same handle, or any use of a freed handle, is detected: calls return
 *    DT_ERR_INVALID_HANDLE, and free ignores it and records the message in
 *    dt_last_error(). This holds for good: a handle is an opaque value, not
 *    the address of the object, and the library never hands the same value
 *    out twice, so a freed handle never comes to name a newer object (even
 *    one the allocator put at the old one's address). Handles are only
 *    passed back and compared for equality; they cannot be dereferenced.
 *  - A child keeps its parent alive: freeing a context while arrays on it
 *    live only defers its destruction until the last array is freed.
 *  - Ownership passes into a call only when it returns DT_OK.
 *  - Threads: a handle may be created on one thread and used or freed on
 *    another. Calls that take a handle as const may run on several threads
 *    at once; a call that changes a handle must not overlap another call
 *    on it (as with any C object), with one exception: a kvstore may be
 *    pushed and pulled from several threads at once (it serialises its
 *    keys itself). So a net, a trainer (with the net and loaders it is
 *    driving) and a data loader are used from one thread at a time, while
 *    different ones may run on different threads.
 *  - Option and info structs (dt_*_options, dt_build_info) follow the one
 *    rule below, "Option and info structs".
 */
#ifndef DT_C_API_H
#define DT_C_API_H

#include <stddef.h>
#include <stdint.h>

#define DT_VERSION_MAJOR 0
#define DT_VERSION_MINOR 1
#define DT_VERSION_PATCH 0
/* One number for comparisons: major * 10000 + minor * 100 + patch. */
#define DT_VERSION_NUMBER \
  (DT_VERSION_MAJOR * 10000 + DT_VERSION_MINOR * 100 + DT_VERSION_PATCH)

#if defined(_WIN32)
#  define DT_API __declspec(dllexport)
#elif defined(__GNUC__)
#  define DT_API __attribute__((visibility("default")))
#else
#  define DT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status and errors                                                        */
/* ------------------------------------------------------------------------ */

/* Append-only: values are part of the ABI and never renumbered. */
typedef enum dt_status {
  DT_OK = 0,
  DT_ERR_INVALID_ARGUMENT = 1, /* NULL pointer, bad value, bad option      */
  DT_ERR_OUT_OF_MEMORY = 2,    /* host or device allocation failed         */
  DT_ERR_NOT_SUPPORTED = 3,    /* not supported in this build or for dtype */
  DT_ERR_BAD_STATE = 4,        /* object not in a state that allows this   */
  DT_ERR_TIMED_OUT = 5,        /* a deadline passed                        */
  DT_ERR_CLOSED = 6,           /* the object or connection was shut down   */
  DT_ERR_NETWORK = 7,          /* socket-level failure                     */
  DT_ERR_REMOTE = 8,           /* a peer answered with an error            */
  DT_ERR_PROTOCOL = 9,         /* malformed message or version mismatch    */
  DT_ERR_CUDA = 10,            /* CUDA runtime/driver failure              */
  DT_ERR_NCCL = 11,            /* NCCL failure                             */
  DT_ERR_IO = 12,              /* file system failure or malformed file    */
  DT_ERR_INTERNAL = 13,        /* a bug in disttrain: please report it     */
  DT_ERR_INVALID_HANDLE = 14,  /* handle freed, or not of the right kind   */
  DT_ERR_SHAPE_MISMATCH = 15,  /* shapes or sizes do not agree             */
  DT_ERR_DTYPE_MISMATCH = 16,  /* element types do not agree               */
  DT_ERR_NO_DEVICE = 17,       /* the requested GPU is absent              */
  DT_ERR_NOT_FOUND = 18,       /* a named entry, key or file is missing    */
  DT_ERR_PEER_LOST = 19,       /* a node of the job died or stopped        */
  DT_ERR_UNAUTHENTICATED = 20  /* a peer lacks the job's secret (DT_JOB_SECRET) */
} dt_status;

/* Static text naming a status ("invalid argument", ...). Never NULL. */
DT_API const char *dt_status_string(dt_status status);

/* Message of the most recent non-OK return on the calling thread; "" if
 * none yet. Never NULL. Valid until the next disttrain call on this thread. */
DT_API const char *dt_last_error(void);

/* ------------------------------------------------------------------------ */
/* Option and info structs: the one rule                                    */
/* ------------------------------------------------------------------------ */

/* Every struct that carries options into a call (dt_*_options) or
 * information out of one (dt_build_info) starts with size_t struct_size,
 * has an _init function, and is used the same way:
 *
 *   dt_fit_options o;
 *   dt_fit_options_init(&o, sizeof o);    then set the fields you want
 *   dt_trainer_fit(trainer, train, test, &o);
 *
 *  - dt_X_init(s, sizeof *s) writes exactly sizeof *s bytes: struct_size,
 *    the library's default for each field this library knows and zero for
 *    the rest. The size is taken in the caller's compilation unit, so a
 *    program built against an older, shorter header is never written past
 *    its struct, while the defaults stay the library's (some come from the
 *    environment). This is libgit2's versioned _init with the size as the
 *    version; a static inline function or an initializer macro would
 *    freeze this release's defaults into the program, and a macro is out
 *    of the bindings' reach.
 *    A NULL struct, or a size that no struct has (below sizeof(size_t)
 *    or not a multiple of its alignment), is DT_ERR_INVALID_ARGUMENT, here
 *    and in every call that takes a struct.
 *  - A call that reads a struct takes the caller's fields up to its
 *    struct_size. A shorter struct (an older header) gets the defaults for
 *    the fields it lacks. A longer one (a newer header) is accepted when
 *    every byte past this library's sizeof is zero, and is
 *    DT_ERR_NOT_SUPPORTED naming the first one that is not: the caller set
 *    an option this library does not have, and ignoring it would change the
 *    run silently (the rule of Linux's clone3 and openat2). Padding is
 *    never read: a copy of a struct need not keep it.
 *  - A call that fills a struct writes only the bytes below struct_size.
 *  - Hence struct_size must be what _init wrote: create every struct
 *    through its _init, then set fields.
 *  - Structs only grow: fields are appended past the previous release's
 *    sizeof (never into its tail padding), never moved or removed, and a
 *    field added after the first release takes 0 as its default (the
 *    behaviour before it existed), so that the zeros of an older _init and
 *    a newer caller's zero tail both mean "not set".
 *  - A NULL options pointer means all defaults where a call says so. */

/* ------------------------------------------------------------------------ */
/* Version and build information                                            */
/* ------------------------------------------------------------------------ */

/* DT_VERSION_NUMBER of the library actually loaded (compare with the
 * header's to detect a mismatch at run time). */
DT_API uint32_t dt_version(void);
/* "MAJOR.MINOR.PATCH", static text. */
DT_API const char *dt_version_string(void);

typedef struct dt_build_info {
  size_t struct_size;    /* see "Option and info structs"                  */
  int32_t version_major; /* of the loaded library                          */
  int32_t version_minor;
  int32_t version_patch;
  int32_t with_cuda;     /* 1 if compiled in, else 0                       */
  int32_t with_cudnn;
  int32_t with_nccl;
  int32_t with_onednn;
  int32_t cuda_runtime_version; /* e.g. 13000; 0 when not compiled in      */
  int32_t cudnn_version;        /* as cudnnGetVersion(); 0 when absent     */
  int32_t nccl_version;         /* as ncclGetVersion(); 0 when absent      */
  int32_t onednn_version;       /* major*10000+minor*100+patch; 0 absent   */
  int32_t gpu_count;            /* GPUs visible now; 0 without CUDA        */
} dt_build_info;

/* Sets struct_size; every other field zero. */
DT_API dt_status dt_build_info_init(dt_build_info *info, size_t struct_size);
/* Fills the fields that fit in info->struct_size. */
DT_API dt_status dt_build_info_get(dt_build_info *info);

/* ------------------------------------------------------------------------ */
/* Logging                                                                  */
/* ------------------------------------------------------------------------ */

/* The library writes its lines (a worker joined, a server was lost, the
 * job's layout, PS_VERBOSE detail) through one channel. Without a handler
 * they go to stderr as "disttrain <facility>: <message>"; the level comes
 * from DT_LOG_LEVEL (a name below in lower case, "warn", or the number;
 * default info) and PS_VERBOSE=1/2 raises it to debug/trace. Append-only. */
typedef enum dt_log_level {
  DT_LOG_NONE = 0,    /* nothing                                           */
  DT_LOG_ERROR = 1,   /* the library cannot do what was asked              */
  DT_LOG_WARNING = 2, /* it goes on, but something needs a look            */
  DT_LOG_INFO = 3,    /* what a user wants to see: joins, losses, layout   */
  DT_LOG_DEBUG = 4,   /* connections, node tables (PS_VERBOSE=1)           */
  DT_LOG_TRACE = 5    /* every message, every slice (PS_VERBOSE=2)         */
} dt_log_level;

/* Receives one line: level, facility (the part of the library speaking,
 * with its rank where it has one: "scheduler", "server 1", "worker 0",
 * "allreduce", "trainer"; "" for the job as a whole) and the message, with
 * no trailing newline. Both strings are the library's and valid only during
 * the call. It may be called from any thread the library runs, one line at
 * a time (calls never overlap), and must not call into the library. */
typedef void (*dt_log_handler)(dt_log_level level, const char *facility,
                               const char *message, void *user);

/* Sets the process-wide handler and the most verbose level passed on
 * (DT_LOG_NONE: nothing), replacing DT_LOG_LEVEL and PS_VERBOSE. A NULL
 * handler sends lines to stderr again, at max_level. user is passed back to
 * every call of handler and stays the caller's. When this returns, calls of
 * the previous handler in flight on other threads have ended and it is
 * never called again, so its user data may be freed. Any thread may call
 * it; a level outside DT_LOG_NONE..DT_LOG_TRACE is DT_ERR_INVALID_ARGUMENT. */
DT_API dt_status dt_log_set_handler(dt_log_level max_level,
                                    dt_log_handler handler, void *user);

/* ------------------------------------------------------------------------ */
/* Profiler: the process's timeline                                         */
/* ------------------------------------------------------------------------ */

/* The process records spans of what its threads do (a trainer's data wait,
 * forward, backward, optimizer and wait; each key part's push and pull; a
 * server's rounds; the scheduler's barriers) into a ring of
 * DT_TIMELINE_EVENTS events, the oldest dropped (and counted) when full.
 * MXNet's profiler.set_state('run'), set_state('stop') and dump(). The
 * timeline is process-wide, as the log handler is; DT_TIMELINE=FILE starts
 * it at the first span and writes it at the end (docs/profiling.md). Any
 * thread may call these. */

/* Starts recording (again; what was recorded stays). DT_ERR_OUT_OF_MEMORY
 * when the ring cannot be allocated (its first start). */
DT_API dt_status dt_profiler_start(void);

/* Stops recording; what was recorded stays until the process ends. */
DT_API dt_status dt_profiler_stop(void);

/* Writes what was recorded so far to path as Chrome trace-event JSON
 * (Perfetto and chrome://tracing open it), replacing the file at once when
 * complete. path stays the caller's. DT_ERR_INVALID_ARGUMENT for a NULL or
 * empty path, DT_ERR_IO when the file cannot be written. */
DT_API dt_status dt_profiler_dump(const char *path);

/* ------------------------------------------------------------------------ */
/* Context: a device                                                        */
/* ------------------------------------------------------------------------ */

typedef enum dt_device_type {
  DT_DEVICE_CPU = 1,
  DT_DEVICE_GPU = 2
} dt_device_type;

typedef struct dt_context dt_context;

/* Number of GPUs visible to this process; 0 in a build without CUDA or on a
 * machine without a usable driver. */
DT_API dt_status dt_gpu_count(int32_t *out_count);

/* Creates a context for a device: (DT_DEVICE_CPU, 0) or (DT_DEVICE_GPU, n).
 * A GPU that is absent gives DT_ERR_NO_DEVICE; a GPU in a build without
 * CUDA gives DT_ERR_NOT_SUPPORTED. The caller owns *out. */
DT_API dt_status dt_context_create(dt_context **out, dt_device_type type,
                                   int32_t device_id);
/* Releases the caller's reference; arrays on the context keep it alive. */
DT_API void dt_context_free(dt_context *ctx);
DT_API dt_status dt_context_device_type(dt_device_type *out,
                                        const dt_context *ctx);
DT_API dt_status dt_context_device_id(int32_t *out, const dt_context *ctx);

/* The memory a context's allocator holds, from the allocator's own counts
 * (what torch.cuda.memory_allocated, max_memory_allocated and
 * memory_reserved report in PyTorch). Sizes are what the allocator reserved
 * for each request: rounded up (64 bytes on the CPU; on a GPU 512 bytes
 * below 1 MiB, else 2 MiB). Each context has its own allocator: two
 * contexts of one GPU count apart, and memory that libraries take for
 * themselves (cuDNN and cuBLAS handles, NCCL buffers) is not counted. An
 * info struct (see "Option and info structs"). */
typedef struct dt_memory_stats {
  size_t struct_size;   /* see "Option and info structs"                    */
  size_t in_use_bytes;  /* in arrays and scratch space now                  */
  size_t peak_bytes;    /* the most in_use_bytes has been since the context
                           was made or dt_context_reset_peak_memory         */
  size_t cached_bytes;  /* freed blocks kept for reuse (GPU); 0 on the CPU,
                           whose freed memory goes straight back            */
  size_t allocations;   /* allocations served since the context was made   */
} dt_memory_stats;

/* Sets struct_size; every other field zero. */
DT_API dt_status dt_memory_stats_init(dt_memory_stats *stats,
                                      size_t struct_size);
/* Fills the fields that fit in out->struct_size. The figures are the
 * device object's, shared by every handle to it (dt_ndarray_context gives
 * another handle to the same one). */
DT_API dt_status dt_context_memory_stats(dt_memory_stats *out,
                                         const dt_context *ctx);
/* Lowers peak_bytes to what is in use now, so that the next reading is the
 * peak of the work done in between (torch.cuda.reset_peak_memory_stats). */
DT_API dt_status dt_context_reset_peak_memory(dt_context *ctx);

/* ------------------------------------------------------------------------ */
/* NDArray: an n-dimensional, dense, row-major tensor                       */
/* ------------------------------------------------------------------------ */

/* Append-only; the names match safetensors' dtype strings. */
typedef enum dt_dtype {
  DT_FLOAT32 = 0,  /* F32  */
  DT_FLOAT16 = 1,  /* F16  */
  DT_BFLOAT16 = 2, /* BF16 */
  DT_FLOAT64 = 3,  /* F64  */
  DT_INT32 = 4,    /* I32  */
  DT_INT64 = 5,    /* I64  */
  DT_UINT8 = 6     /* U8   */
} dt_dtype;

#define DT_MAX_NDIM 8

/* Bytes per element. */
DT_API dt_status dt_dtype_size(size_t *out, dt_dtype dtype);
/* Static safetensors name ("F32", ...), or "?" for an unknown value. */
DT_API const char *dt_dtype_name(dt_dtype dtype);

typedef struct dt_ndarray dt_ndarray;

/* Creates a zero-filled array of `ndim` (0..DT_MAX_NDIM) dims on ctx.
 * dims may be NULL when ndim is 0 (a scalar: one element). Dims must be
 * >= 0; the element and byte counts are checked for overflow. The array
 * keeps ctx alive. CPU storage is 64-byte aligned. */
DT_API dt_status dt_ndarray_create(dt_ndarray **out, const dt_context *ctx,
                                   dt_dtype dtype, const int64_t *dims,
                                   size_t ndim);
/* Releases this handle. Views (reshape, slice) share storage: the storage
 * lives until its last view is freed. */
DT_API void dt_ndarray_free(dt_ndarray *arr);

DT_API dt_status dt_ndarray_ndim(size_t *out, const dt_ndarray *arr);
/* Writes ndim dims to out_dims; capacity must be >= ndim. */
DT_API dt_status dt_ndarray_shape(int64_t *out_dims, size_t capacity,
                                  const dt_ndarray *arr);
DT_API dt_status dt_ndarray_dtype(dt_dtype *out, const dt_ndarray *arr);
/* Number of elements (1 for a scalar). */
DT_API dt_status dt_ndarray_size(size_t *out, const dt_ndarray *arr);
/* size * dtype size. */
DT_API dt_status dt_ndarray_nbytes(size_t *out, const dt_ndarray *arr);
/* A new handle to the array's context; the caller frees it. */
DT_API dt_status dt_ndarray_context(dt_context **out, const dt_ndarray *arr);

/* Copies nbytes from host memory into arr; nbytes must equal the array's
 * byte size. Returns when the copy is complete. */
DT_API dt_status dt_ndarray_copy_from_host(dt_ndarray *arr, const void *src,
                                           size_t nbytes);
/* Copies the array into host memory of nbytes (must equal its byte size).
 * Returns when the data is in dst. */
DT_API dt_status dt_ndarray_copy_to_host(void *dst, size_t nbytes,
                                         const dt_ndarray *arr);
/* dst = src: same dtype and shape; the two may be on different devices. */
DT_API dt_status dt_ndarray_copy(dt_ndarray *dst, const dt_ndarray *src);

/* Sets every element to value (converted to the array's dtype, rounding to
 * nearest). A value out of the dtype's range is DT_ERR_INVALID_ARGUMENT and
 * leaves the array unchanged: an integer past its bounds or NaN for an
 * integer dtype, and a finite value that would round to infinity for a
 * floating one (1e300 into float32); infinities and NaN fill floating
 * arrays as they are. */
DT_API dt_status dt_ndarray_fill(dt_ndarray *arr, double value);

/* A view with a new shape and the same storage. One dim may be -1 and is
 * inferred; the element count must not change. */
DT_API dt_status dt_ndarray_reshape(dt_ndarray **out, const dt_ndarray *arr,
                                    const int64_t *dims, size_t ndim);
/* A view of rows [begin, end) along the first axis; 0 <= begin <= end <=
 * dim 0. The array must have at least one dim. */
DT_API dt_status dt_ndarray_slice(dt_ndarray **out, const dt_ndarray *arr,
                                  int64_t begin, int64_t end);

/* Element-wise arithmetic on floating-point arrays (float32, float16,
 * bfloat16, float64) of one dtype and shape, on the same context. float16
 * and bfloat16 compute in float32. Outputs may alias inputs. */
/* out = a + b */
DT_API dt_status dt_ndarray_add(dt_ndarray *out, const dt_ndarray *a,
                                const dt_ndarray *b);
/* arr = alpha * arr */
DT_API dt_status dt_ndarray_scale(dt_ndarray *arr, double alpha);
/* y = y + alpha * x */
DT_API dt_status dt_ndarray_axpy(dt_ndarray *y, double alpha,
                                 const dt_ndarray *x);
/* dst = src converted to dst's dtype (same shape, same context). Any pair of
 * dtypes; float to integer truncates toward zero. */
DT_API dt_status dt_ndarray_cast(dt_ndarray *dst, const dt_ndarray *src);

/* ------------------------------------------------------------------------ */
/* Named arrays in safetensors files                                        */
/* ------------------------------------------------------------------------ */

/* Writes count arrays under unique, non-empty names to path in the
 * safetensors format (8-byte little-endian header length, JSON header with
 * dtype/shape/data_offsets, raw little-endian data). The file is written
 * to a temporary name and renamed, so a failure (e.g. full disk) leaves no
 * partial file behind and reports DT_ERR_IO. */
DT_API dt_status dt_ndarray_save(const char *path,
                                 const char *const *names,
                                 const dt_ndarray *const *arrays,
                                 size_t count);

/* The arrays of one safetensors file, in the file's header order. */
typedef struct dt_named_arrays dt_named_arrays;

/* Reads and validates a safetensors file, placing the arrays on ctx. A
 * malformed file is DT_ERR_IO with the reason; a missing one
 * DT_ERR_NOT_FOUND. */
DT_API dt_status dt_named_arrays_load(dt_named_arrays **out,
                                      const dt_context *ctx,
                                      const char *path);
DT_API void dt_named_arrays_free(dt_named_arrays *list);
DT_API dt_status dt_named_arrays_count(size_t *out,
                                       const dt_named_arrays *list);
/* The name of entry index; the text lives as long as the list. */
DT_API dt_status dt_named_arrays_name(const char **out,
                                      const dt_named_arrays *list,
                                      size_t index);
/* A new handle to entry index (sharing its storage); the caller frees it. */
DT_API dt_status dt_named_arrays_get(dt_ndarray **out,
                                     const dt_named_arrays *list,
                                     size_t index);
/* Like dt_named_arrays_get by name; DT_ERR_NOT_FOUND if absent. */
DT_API dt_status dt_named_arrays_find(dt_ndarray **out,
                                      const dt_named_arrays *list,
                                      const char *name);

/* ------------------------------------------------------------------------ */
/* Net: a network of layers with parameters, forward and backward           */
/* ------------------------------------------------------------------------ */

typedef struct dt_net dt_net;

/* What backward does with a parameter's gradient (MXNet's grad_req). */
typedef enum dt_grad_req {
  DT_GRAD_NULL = 0,  /* no gradient                                    */
  DT_GRAD_WRITE = 1, /* backward overwrites the gradient (default)     */
  DT_GRAD_ADD = 2    /* backward adds to it (gradient accumulation)    */
} dt_grad_req;

/* Sets the number of CPU threads kernels on ctx use (0: OMP_NUM_THREADS if
 * set, else all CPUs this process may use). Applies to nets created on ctx
 * afterwards. */
DT_API dt_status dt_context_set_num_threads(dt_context *ctx, int32_t num_threads);
DT_API dt_status dt_context_num_threads(int32_t *out, const dt_context *ctx);

/* Builds a model by name on ctx: "mlp", "lenet", "resnet18",
 * "resnet18_imagenet", "vgg11".
 * options_json is NULL or a JSON object, e.g.
 *   lenet:    {"input_shape": [1, 28, 28], "classes": 10}
 *   mlp:      {"input_shape": [1, 28, 28], "hidden": [256, 128], "classes": 10}
 *   resnet18: {"input_shape": [3, 32, 32], "classes": 10} (d2l's CIFAR
 *             ResNet-18: 3x3 stem, no max pool)
 *   resnet18_imagenet: {"input_shape": [3, 224, 224], "classes": 1000}
 *             (torchvision's resnet18: 7x7 stride-2 stem, 3x3 max pool)
 *   vgg11:    {"input_shape": [3, 32, 32], "classes": 10} (with BatchNorm)
 * Parameters are allocated (zeros) but not initialised: call
 * dt_net_initialize or dt_net_load_params. The net keeps ctx alive.
 * On a GPU context the layers run on that GPU (Dropout draws the same
 * mask as on the CPU); a layer without a GPU kernel (Conv2D in a build
 * without cuDNN) makes dt_net_forward fail with DT_ERR_NOT_SUPPORTED
 * naming the layer. */
DT_API dt_status dt_net_create(dt_net **out, const dt_context *ctx,
                               const char *builder, const char *options_json);
/* Builds a net from its JSON description (the format dt_net_to_json
 * writes; see docs/net-json.md). */
DT_API dt_status dt_net_create_from_json(dt_net **out, const dt_context *ctx,
                                         const char *description_json);
DT_API void dt_net_free(dt_net *net);
/* Writes the JSON description, NUL-terminated, to buf. *out_length receives
 * the bytes needed including the NUL; with buf NULL (and capacity 0) only
 * the length is returned. A buffer too small is DT_ERR_INVALID_ARGUMENT. */
DT_API dt_status dt_net_to_json(char *buf, size_t capacity, size_t *out_length,
                                const dt_net *net);

/* Fills every parameter by its layer's initialiser, reproducibly from seed:
 * the same values on a CPU and a GPU context. */
DT_API dt_status dt_net_initialize(dt_net *net, uint64_t seed);

/* Parameters, in a fixed order (the order of the layers): learnable
 * weights and auxiliary states (e.g. BatchNorm running statistics). */
DT_API dt_status dt_net_num_params(size_t *out, const dt_net *net);
/* Name such as "conv1.weight"; valid as long as the net. */
DT_API dt_status dt_net_param_name(const char **out, const dt_net *net,
                                   size_t index);
/* 1 for an auxiliary state (no gradient, not synchronised), else 0. */
DT_API dt_status dt_net_param_is_auxiliary(int32_t *out, const dt_net *net,
                                           size_t index);
/* DT_ERR_NOT_FOUND for an unknown name. */
DT_API dt_status dt_net_find_param(size_t *out_index, const dt_net *net,
                                   const char *name);
/* New handles sharing the parameter's (or its gradient's) storage; the
 * caller frees them. An auxiliary state has no gradient (DT_ERR_NOT_FOUND). */
DT_API dt_status dt_net_param(dt_ndarray **out, const dt_net *net,
                              size_t index);
DT_API dt_status dt_net_grad(dt_ndarray **out, const dt_net *net,
                             size_t index);
/* grad_req of one parameter by name, or of all learnable ones (name NULL). */
DT_API dt_status dt_net_set_grad_req(dt_net *net, const char *name,
                                     dt_grad_req req);

/* Runs the net on a batch: inputs[i] has the shape of input i with a
 * leading batch dim (e.g. (64, 1, 28, 28)), float32, on the net's context
 * (or on the CPU for a GPU net: they are copied to the device).
 * train_mode 1: BatchNorm uses batch statistics and updates its running
 * ones, Dropout drops; 0: inference. */
DT_API dt_status dt_net_forward(dt_net *net, const dt_ndarray *const *inputs,
                                size_t num_inputs, int32_t train_mode);
/* After a forward: computes the loss of the outputs against integer labels
 * (int32 or int64, shape (batch,), on the net's context or the CPU) and
 * the gradients of every parameter by its grad_req. *out_loss receives
 * the loss (mean over the batch unless the net's loss says "sum").
 * out_loss may be NULL. */
DT_API dt_status dt_net_backward(double *out_loss, dt_net *net,
                                 const dt_ndarray *labels);
DT_API dt_status dt_net_num_outputs(size_t *out, const dt_net *net);
/* A new handle to output index of the last forward (e.g. logits (batch,
 * classes)); it shares storage that the next forward overwrites. */
DT_API dt_status dt_net_output(dt_ndarray **out, const dt_net *net,
                               size_t index);

/* Parameters (weights and auxiliary states) as a safetensors file, names as
 * keys. Loading requires every parameter of the net, each with its shape
 * and dtype (DT_ERR_NOT_FOUND / DT_ERR_SHAPE_MISMATCH naming it); entries the
 * net does not have are ignored. */
DT_API dt_status dt_net_save_params(const dt_net *net, const char *path);
DT_API dt_status dt_net_load_params(dt_net *net, const char *path);

/* Mixed precision, a GPU feature. The dtype the net computes in:
 * DT_FLOAT32 (default), DT_FLOAT16 or DT_BFLOAT16. In 16 bits, activations,
 * working copies of the weights (cast from the float32 parameters at
 * every forward, so weights written through any handle are seen) and
 * their gradients use that
 * dtype, with float32 accumulation, while everything outside the net stays
 * float32: the parameters and gradients of dt_net_param / dt_net_grad
 * (master weights), outputs, the loss (computed in float32), checkpoints,
 * optimizers and kvstores. DT_FLOAT16 turns on dynamic loss scaling as
 * PyTorch's GradScaler does (initial scale 65536, doubled after 2000 steps
 * without overflow, halved on an overflow): the loss gradient is scaled and
 * dt_net_backward's gradients come back unscaled, possibly inf/NaN after an
 * overflow, which dt_trainer steps then skip. DT_BFLOAT16 needs no scaling.
 * Call before the first dt_net_forward (DT_ERR_BAD_STATE after); float16 or
 * bfloat16 on a CPU context is DT_ERR_NOT_SUPPORTED; other dtypes
 * DT_ERR_INVALID_ARGUMENT. Only the workers can skip an overflowed step:
 * with DT_FLOAT16 a trainer's update_on_kvstore = -1 updates on the
 * workers, and 1 makes its first step DT_ERR_NOT_SUPPORTED. Trainer
 * checkpoints carry the loss scale, so a resumed run goes on with it. */
DT_API dt_status dt_net_set_compute_dtype(dt_net *net, dt_dtype dtype);
DT_API dt_status dt_net_compute_dtype(dt_dtype *out, const dt_net *net);
/* The loss scale the next dt_net_backward multiplies the loss gradient by
 * (1.0 without loss scaling). */
DT_API dt_status dt_net_loss_scale(double *out, const dt_net *net);

/* Dynamic loss scaling, PyTorch GradScaler's and MXNet AMP's knobs: the
 * scale starts at init_scale, is multiplied by backoff_factor on a step
 * whose gradients overflow (that step's update is skipped) and by
 * growth_factor after growth_interval steps in a row without an overflow;
 * it stays within [2^-24, 2^100]. */
typedef struct dt_loss_scaling_options {
  size_t struct_size;       /* see "Option and info structs"              */
  int32_t enabled;          /* default 1; 0: no scaling (scale 1), and the
                               fields below are ignored                   */
  double init_scale;        /* finite, in [2^-24, 2^100]; default 65536   */
  double growth_factor;     /* > 1; default 2                             */
  double backoff_factor;    /* in (0, 1); default 0.5                     */
  int64_t growth_interval;  /* >= 1 steps; default 2000                   */
} dt_loss_scaling_options;

DT_API dt_status dt_loss_scaling_options_init(dt_loss_scaling_options *options,
                                              size_t struct_size);
/* Replaces the net's loss scaler, for a DT_FLOAT16 net (e.g. other factors,
 * or enabled 0 to train without scaling) or a DT_BFLOAT16 one (enabled 1
 * turns scaling on). The scale restarts at init_scale and the count of
 * skipped steps (dt_trainer_skipped_steps) at 0. dt_net_set_compute_dtype
 * resets the scaler to its dtype's default, so call this after it; a
 * trainer built on the net follows the net's scaler, but one whose
 * update_on_kvstore is 1, or that already updated on the kvstore, refuses
 * to step with scaling enabled (DT_ERR_NOT_SUPPORTED, see
 * dt_net_set_compute_dtype). A loaded trainer checkpoint's loss scale
 * replaces init_scale at the trainer's first step.
 * Enabled on a DT_FLOAT32 net is DT_ERR_INVALID_ARGUMENT (disabled there is
 * a no-op); options NULL or an out-of-range field is
 * DT_ERR_INVALID_ARGUMENT naming the field. On error nothing changes. */
DT_API dt_status dt_net_set_loss_scaling(dt_net *net,
                                         const dt_loss_scaling_options *options);
/* The options of the net's current loss scaler into *out (initialised by
 * dt_loss_scaling_options_init): enabled 0 and the defaults without
 * scaling. The current scale is dt_net_loss_scale. */
DT_API dt_status dt_net_loss_scaling(dt_loss_scaling_options *out,
                                     const dt_net *net);

/* ------------------------------------------------------------------------ */
/* Optimizer: a declarative description (a name and typed hyper-parameters) */
/* ------------------------------------------------------------------------ */

/* The description travels as text (JSON) to wherever updates run: the
 * trainer, a local kvstore, or parameter servers. It holds no state.
 * Names: "sgd" (learning_rate, momentum, wd, nesterov, rescale_grad,
 * clip_gradient, multi_precision), "nag", "adam" / "adamw" (learning_rate,
 * beta1, beta2, epsilon, wd, ...), plus learning-rate schedules
 * ("lr_scheduler": "none" | "factor" | "multifactor" | "cosine" | "poly"
 * with their keys, and "warmup_steps", "warmup_begin_lr"). Every key, its
 * range and default: docs/optimizers.md. */
typedef struct dt_optimizer dt_optimizer;

/* Unknown names are DT_ERR_INVALID_ARGUMENT listing the known ones. */
DT_API dt_status dt_optimizer_create(dt_optimizer **out, const char *name);
/* From the JSON dt_optimizer_to_json writes:
 * {"optimizer": "sgd", "learning_rate": 0.05, "momentum": 0.9}. */
DT_API dt_status dt_optimizer_create_from_json(dt_optimizer **out,
                                               const char *json);
DT_API void dt_optimizer_free(dt_optimizer *opt);
/* Typed setters; each checks the key and value for this optimizer at once
 * (unknown key, wrong type, out of range: DT_ERR_INVALID_ARGUMENT) and leaves
 * the description unchanged on error. Rules that span keys (a schedule's
 * required keys, e.g. "step" for "factor") are checked when the description
 * is used (dt_trainer_create, dt_kvstore_set_optimizer), so keys may be set
 * in any order. */
DT_API dt_status dt_optimizer_set_double(dt_optimizer *opt, const char *key,
                                         double value);
DT_API dt_status dt_optimizer_set_int(dt_optimizer *opt, const char *key,
                                      int64_t value);
DT_API dt_status dt_optimizer_set_bool(dt_optimizer *opt, const char *key,
                                       int32_t value);
DT_API dt_status dt_optimizer_set_string(dt_optimizer *opt, const char *key,
                                         const char *value);
DT_API dt_status dt_optimizer_set_int_list(dt_optimizer *opt, const char *key,
                                           const int64_t *values,
                                           size_t count);
/* Same buffer protocol as dt_net_to_json. */
DT_API dt_status dt_optimizer_to_json(char *buf, size_t capacity,
                                      size_t *out_length,
                                      const dt_optimizer *opt);

/* ------------------------------------------------------------------------ */
/* KVStore: keyed tensors, summed on push and broadcast on pull             */
/* ------------------------------------------------------------------------ */

typedef struct dt_kvstore dt_kvstore;

/* type: "local" (reduce on the CPU), "device" (reduce on a GPU:
 * DT_ERR_NO_DEVICE without one; a key whose values live on several GPUs is
 * reduced with NCCL where it is built in), "nccl" (as "device", always
 * through NCCL: DT_ERR_NOT_SUPPORTED in a build without NCCL), "dist_sync"
 * and "dist_async" (join a parameter-server job; see dt_kvstore_create_ex),
 * "dist_sync_device" and "dist_async_device" (the same, but a worker's
 * values of a key are summed on its GPU 0 and pulled values broadcast from
 * there), "dist_nccl" (join a job as a worker and all-reduce with NCCL
 * across its workers, one GPU each; the store runs no optimizer:
 * dt_kvstore_set_optimizer is DT_ERR_NOT_SUPPORTED and trainers update on
 * the workers; DT_ALLREDUCE_DTYPE=float16 all-reduces float32 values as
 * float16, DT_ALLREDUCE_DEVICE picks the GPU), "allreduce" (join a job
 * as a worker and all-reduce in host memory, worker to worker, with no
 * parameter servers: `dtrun -n N -s 0`; ring or recursive doubling by
 * size, sums bit-identical on every worker; no optimizer, as dist_nccl;
 * arrays on a GPU go through host memory; under DT_WORKER_LOSS=continue
 * the workers that remain after a loss regroup and go on, while dist_nccl
 * refuses that policy with DT_ERR_NOT_SUPPORTED). A GPU type without a GPU is
 * DT_ERR_NO_DEVICE, a type not built in is DT_ERR_NOT_SUPPORTED, each
 * naming the type to use instead. Names are case-insensitive and MXNet's
 * are accepted: "dist" (dist_sync), "dist_device_sync", "dist_device_async",
 * "local_update_cpu", "local_allreduce_cpu" (local), "local_allreduce_device"
 * (device), "horovod" (allreduce); dt_kvstore_type reports the canonical name. An unknown name is
 * DT_ERR_INVALID_ARGUMENT listing the known ones. Semantics as MXNet's
 * KVStore: values pushed under one key in one call are summed; pull copies
 * a key's value into every output listed under it. The same as
 * dt_kvstore_create_ex(out, type, NULL): the distributed types take their
 * deadlines, bounds and DT_WORKER_LOSS from the environment, as dtrun sets
 * it. */
DT_API dt_status dt_kvstore_create(dt_kvstore **out, const char *type);
DT_API void dt_kvstore_free(dt_kvstore *kv);
/* Static text, valid as long as the store. */
DT_API dt_status dt_kvstore_type(const char **out, const dt_kvstore *kv);
DT_API dt_status dt_kvstore_rank(int32_t *out, const dt_kvstore *kv);
DT_API dt_status dt_kvstore_num_workers(int32_t *out, const dt_kvstore *kv);
/* Whether this worker joined a running job in the place of one the job lost
 * (DT_WORKER_LOSS=continue, e.g. started again by `dtrun --worker-loss
 * continue --max-restarts N`; docs/fault-tolerance.md), and how many
 * dist_sync rounds the job had done on every key before it joined: its
 * pushes count from round *out_rounds_before + 1, so a training loop of its
 * own goes on from that step (dt_trainer_fit does). 0 and 0 for a worker
 * that started with the job and for the other stores. */
DT_API dt_status dt_kvstore_joined_running_job(int32_t *out_joined, int64_t *out_rounds_before, const dt_kvstore *kv);
/* Letting a worker into a job without servers from a training loop of
 * one's own (the "allreduce" store under DT_WORKER_LOSS=continue, where
 * the workers hold the weights; dt_trainer_admit_joining_workers does all
 * of it for a trainer's loop). Every worker in the job calls
 * dt_kvstore_admit_joining_workers at the same point of its loop, before
 * each step: about every 0.1 s of steps the call is one small all-reduce
 * (a vote), else it returns at once. *out_admitted is 1, alike on every
 * worker, when a worker that joined in a departed one's place
 * (dt_kvstore_joined_running_job) was let in just now; then each calls
 * dt_kvstore_hand_over_state with its state, as bytes of its own making
 * (e.g. its weights and step), before its next push: a push or pull
 * first is DT_ERR_BAD_STATE and fails the store (the joined worker waits in
 * the hand-over). 0 otherwise, always on the other stores. */
DT_API dt_status dt_kvstore_admit_joining_workers(int32_t *out_admitted, dt_kvstore *kv);
/* The hand-over, a collective of the workers in the job and the joined
 * ones. A worker in the job passes its state (src, nbytes; the sizes may
 * differ) and gets *out_length 0. A joined worker calls it once, before
 * anything else that communicates (src NULL, nbytes 0 is fine): it waits
 * until the job lets it in, then gets *out_length, the size of the state the
 * first worker in the job sent; dt_kvstore_handed_state copies it out. A
 * worker lost during the hand-over makes the next one that holds the state
 * send it. Errors: DT_ERR_NOT_SUPPORTED on the stores that let nobody in
 * this way; DT_ERR_BAD_STATE on a worker in the job when nobody was let in
 * (the store goes on); on a joined worker DT_ERR_TIMED_OUT after its deadline
 * (DT_STARTUP_TIMEOUT_S + DT_REQUEST_TIMEOUT_S), DT_ERR_CLOSED when the job
 * ended first, DT_ERR_PEER_LOST when every worker that held the state was
 * lost. */
DT_API dt_status dt_kvstore_hand_over_state(size_t *out_length, dt_kvstore *kv, const void *src, size_t nbytes);
/* The bytes the last dt_kvstore_hand_over_state received (none on a worker
 * that held the state), with the buffer protocol of dt_net_to_json except
 * that the bytes have no NUL: *out_length is their count, and buf NULL with
 * capacity 0 asks only that. Kept until the next hand-over. */
DT_API dt_status dt_kvstore_handed_state(char *buf, size_t capacity, size_t *out_length, const dt_kvstore *kv);
/* Bytes this process's store has sent and received over the network since
 * it was created, as whole messages (the parameter servers' requests and
 * replies; the all-reduce store's worker-to-worker traffic): what
 * compression saves. 0 and 0 for the in-process stores. */
DT_API dt_status dt_kvstore_traffic(int64_t *out_bytes_sent,
                                    int64_t *out_bytes_received,
                                    const dt_kvstore *kv);

/* Integer keys must be below 2^63 (the upper half is where string keys
 * live). keys[i] goes with values[i] / outs[i]. */
DT_API dt_status dt_kvstore_init(dt_kvstore *kv, const uint64_t *keys,
                                 const dt_ndarray *const *values,
                                 size_t count);
/* priority: higher goes first where transfers queue (e.g. the last layers'
 * gradients, which are ready first); ignored by in-process stores. */
DT_API dt_status dt_kvstore_push(dt_kvstore *kv, const uint64_t *keys,
                                 const dt_ndarray *const *values,
                                 size_t count, int32_t priority);
DT_API dt_status dt_kvstore_pull(dt_kvstore *kv, const uint64_t *keys,
                                 dt_ndarray *const *outs, size_t count,
                                 int32_t priority);
/* push(keys, values) then pull(keys, outs); values and outs may be the
 * same arrays. */
DT_API dt_status dt_kvstore_pushpull(dt_kvstore *kv, const uint64_t *keys,
                                     const dt_ndarray *const *values,
                                     dt_ndarray *const *outs, size_t count,
                                     int32_t priority);
/* init from the first value of each key, then pull into outs. */
DT_API dt_status dt_kvstore_broadcast(dt_kvstore *kv, const uint64_t *keys,
                                      const dt_ndarray *const *values,
                                      dt_ndarray *const *outs, size_t count);

/* String-keyed variants: each name maps to one 64-bit key in the upper
 * half, the same in every process. */
DT_API dt_status dt_kvstore_init_str(dt_kvstore *kv, const char *const *keys,
                                     const dt_ndarray *const *values,
                                     size_t count);
DT_API dt_status dt_kvstore_push_str(dt_kvstore *kv, const char *const *keys,
                                     const dt_ndarray *const *values,
                                     size_t count, int32_t priority);
DT_API dt_status dt_kvstore_pull_str(dt_kvstore *kv, const char *const *keys,
                                     dt_ndarray *const *outs, size_t count,
                                     int32_t priority);
DT_API dt_status dt_kvstore_pushpull_str(dt_kvstore *kv,
                                         const char *const *keys,
                                         const dt_ndarray *const *values,
                                         dt_ndarray *const *outs,
                                         size_t count, int32_t priority);

/* From now on pushes are gradients that the store applies with this
 * optimizer (update on kvstore). The description is copied. For the dist
 * types every worker calls it with the same description: worker 0's is the
 * one the servers apply, and another worker's call returns once worker 0's
 * has arrived (DT_ERR_INVALID_ARGUMENT naming both when they differ).
 * Learning-rate changes of a dist store (dt_trainer_set_learning_rate) are
 * sent by worker 0 alone, as the owner of the servers' optimizer; on the
 * other workers they change only the local record. */
DT_API dt_status dt_kvstore_set_optimizer(dt_kvstore *kv,
                                          const dt_optimizer *opt);
/* MXNet's kv.set_gradient_compression, as text:
 *   mode[:field=value{,field=value}]
 * mode: "none", "fp16", "bf16", "2bit", "1bit" (field threshold, default
 * 0.5), "topk" (field fraction in (0, 1], required), "threshold" (field
 * threshold, required); field error_feedback=on|off (on by default for
 * every lossy mode: what was not sent is added to the next push of the same
 * key part, per worker). E.g. "2bit:threshold=0.5", "topk:fraction=0.01".
 * The threshold of 2bit, 1bit and threshold is compared with the pushed
 * values times gradient_scale (field gradient_scale=S, S > 0; 1bit sends
 * threshold / S): without the field, with the raw values. 2bit's elements
 * that cross the threshold decode to +-the mean |value| of those that
 * crossed in their key part (field magnitude=mean, the default; sent as one
 * float32 per part), or to +-threshold / S as in MXNet (magnitude=threshold).
 * A trainer (dt_trainer_create) pushes the sums of its batch's B
 * per-sample gradients and, unless the text names gradient_scale, sets it to
 * 1/sqrt(B) before its first push, which puts the threshold on the scale of
 * one sample's gradient, where MXNet's default 0.5 learns at batch 32 and 64
 * (README; a threshold on the raw sums far below them leaves training at
 * chance). A program that pushes its own gradients names the scale:
 * gradient_scale=1/sqrt(B) for sums of B samples' gradients, sqrt(B) for
 * their means (e.g. "2bit:gradient_scale=0.125" for sums over batches of 64).
 * When a 1bit or magnitude=threshold 2bit residual keeps growing (a threshold
 * far below the gradients), the library logs one warning at warning level
 * (facility "compression") naming a threshold that fits. From then on the
 * float32 values this worker pushes travel encoded (2bit: its magnitude, then
 * 16 values per 32-bit word; topk and threshold: (index, value) pairs) and
 * the servers decode them before summing, in worker-rank order as always.
 * Pulls: when the workers run the optimizer (no dt_kvstore_set_optimizer,
 * a trainer's update_on_kvstore 0), a "dist_sync" server encodes each
 * round's sum once with the same mode, adding what its earlier rounds did
 * not send (its own residual per key part, when error feedback is on), and
 * every worker gets the same bytes, so replicas stay identical; the
 * worker decodes them into the float32 outputs. Weights travel in full:
 * the values set by init, and everything pulled from servers that run the
 * optimizer, so they are never lossy. (Sending compressed weight updates
 * with a server-side residual instead would leave every worker's weights
 * off the servers' by that residual, and right only for a worker that
 * decoded every update since init; full weights are exact after any pull.)
 * "dist_async" pulls travel in full too: without rounds there is no one
 * encoding that every worker gets. Call it on every worker with the same
 * text, before the first push: another worker's different text, or a call
 * after a push, is refused (DT_ERR_INVALID_ARGUMENT / DT_ERR_BAD_STATE
 * naming both).
 * The parameter-server types ("dist_sync", "dist_async", their "_device"
 * forms), "allreduce" and "dist_nccl" take every mode. On "dist_nccl",
 * "fp16" and "bf16" are a cast on the GPU around the NCCL all-reduce (with
 * error feedback unless error_feedback=off); "2bit", "1bit", "topk" and
 * "threshold" encode each float32 key in host memory and all-gather the
 * encodings over NCCL (each worker decodes and adds them in rank order),
 * as "allreduce" does. The workers of the all-reduce stores compare their
 * texts when they set it, so all of them must call it at the same point.
 * The in-process stores are DT_ERR_NOT_SUPPORTED. A malformed text is
 * DT_ERR_INVALID_ARGUMENT naming the field. */
DT_API dt_status dt_kvstore_set_gradient_compression(dt_kvstore *kv,
                                                     const char *spec);
/* Returns when every worker has reached the barrier. */
DT_API dt_status dt_kvstore_barrier(dt_kvstore *kv);

/* ------------------------------------------------------------------------ */
/* Data loader: MNIST (IDX), CIFAR, image folders and RecordIO in batches   */
/* ------------------------------------------------------------------------ */

typedef struct dt_data_loader dt_data_loader;

typedef enum dt_last_batch {
  DT_LAST_BATCH_KEEP = 0,    /* a smaller last batch                     */
  DT_LAST_BATCH_DISCARD = 1, /* drop the incomplete last batch           */
  DT_LAST_BATCH_ROLLOVER = 2 /* carry the leftovers into the next epoch  */
} dt_last_batch;

typedef struct dt_data_loader_options {
  size_t struct_size;        /* see "Option and info structs"            */
  int64_t batch_size;        /* default 64                               */
  dt_last_batch last_batch;  /* default DT_LAST_BATCH_KEEP               */
  int32_t shuffle;           /* default 1: a new order every epoch       */
  uint64_t seed;             /* default 0: the order depends on it only  */
  int32_t num_parts;         /* default 1: split the data into parts     */
  int32_t part_index;        /* default 0: this worker's part            */
  int32_t prefetch;          /* batches prepared ahead (>= 1); default 2 */
  float mean;                /* normalisation (x/255 - mean) / std;      */
  float std;                 /* defaults: Fashion-MNIST's 0.2860, 0.3530 */
  /* Augmentation on the loader's threads, before normalisation. The draws
   * of a sample depend only on (seed + part_index, epoch, its position in
   * the epoch), so every run with the same options yields the same
   * batches, and the workers of a job given one seed draw differently. */
  int64_t random_crop_padding; /* default 0: none. p > 0: pad every side
                                * with p zero pixels, crop back to H x W at
                                * a uniform offset (4 for CIFAR); p <= H, W */
  int32_t random_flip;         /* default 0; 1: mirror left-right with
                                * probability 1/2                         */
  /* Per-channel normalisation (x/255 - channel_mean[c]) / channel_std[c],
   * num_channel_stats entries each, which must be the dataset's channels
   * (1 for MNIST, 3 (R, G, B) for CIFAR); read during the create call only.
   * NULL/0 (default): the dataset's standard statistics, which are mean and
   * std above for MNIST and CIFAR-10's training set for CIFAR
   * (0.4914, 0.4822, 0.4465 / 0.2470, 0.2435, 0.2616). */
  const float *channel_mean;
  const float *channel_std;
  size_t num_channel_stats;
  /* Random resized crop (torchvision's RandomResizedCrop), image folders
   * and RecordIO sets only (DT_ERR_INVALID_ARGUMENT on MNIST and CIFAR): a
   * box covering a uniformly drawn fraction of the source image's area, in
   * [min_scale, max_scale], with a width / height ratio drawn log-uniformly
   * from [min_ratio, max_ratio], placed uniformly, resized to H x W (after
   * 10 boxes that do not fit, the largest centred box with a ratio in
   * range). It comes before the padded crop and the flip, and leaves their
   * draws as they were; it repeats with the seed as they do. */
  int32_t random_resized_crop;         /* default 0: none; 1: on      */
  float random_resized_crop_min_scale; /* 0 (default): 0.08; 0 < min  */
  float random_resized_crop_max_scale; /* 0 (default): 1; min <= max <= 1 */
  float random_resized_crop_min_ratio; /* 0 (default): 3/4            */
  float random_resized_crop_max_ratio; /* 0 (default): 4/3; min <= max */
  /* Threads that read, decode and augment batches, each a whole batch at a
   * time; up to max(prefetch, num_workers) batches are in preparation or
   * ready. The batches do not depend on it. 0 (default): half the CPUs
   * this process may use, at least 1 and at most 4, leaving the rest to
   * the training step's kernels; otherwise 1 to 256. */
  int64_t num_workers;
} dt_data_loader_options;

DT_API dt_status dt_data_loader_options_init(dt_data_loader_options *options,
                                             size_t struct_size);

/* Loads an IDX image file and its label file (plain or gzip). Missing
 * files are DT_ERR_NOT_FOUND; malformed ones (bad magic, truncated, counts
 * that differ) DT_ERR_IO naming the file. options may be NULL (defaults). */
DT_API dt_status dt_data_loader_create(dt_data_loader **out,
                                       const char *images_path,
                                       const char *labels_path,
                                       const dt_data_loader_options *options);
/* The standard MNIST/Fashion-MNIST file names in dir: split "train" or
 * "t10k" (test). dir NULL: /usr/share/datasets/fashion-mnist. */
DT_API dt_status dt_data_loader_create_mnist(dt_data_loader **out,
                                             const char *dir,
                                             const char *split,
                                             const dt_data_loader_options *options);
/* The CIFAR binary format in dir (or in the folder its archive unpacks to
 * there: cifar-10-batches-bin, cifar-100-binary). variant 10: split
 * "train" reads data_batch_1.bin ... data_batch_5.bin, "test"
 * test_batch.bin; variant 100: train.bin or test.bin, and the fine label
 * (0-99) is the class. Batches are float32 (B, 3, 32, 32). The mean and std
 * fields do not apply: without channel statistics the images are
 * normalised with CIFAR-10's (see dt_data_loader_options). A missing file
 * is DT_ERR_NOT_FOUND naming it; a file whose size is not a whole number of
 * records, or a label out of range, DT_ERR_IO naming the file and the byte
 * offset. A NULL dir, another split or variant: DT_ERR_INVALID_ARGUMENT.
 * options may be NULL (defaults). */
DT_API dt_status dt_data_loader_create_cifar(dt_data_loader **out,
                                             const char *dir,
                                             const char *split,
                                             int32_t variant,
                                             const dt_data_loader_options *options);
/* An image folder, torchvision's ImageFolder layout: dir/<class>/<images>.
 * The class folders sorted by name are labels 0..K-1; each one's files,
 * sorted by name, follow in turn. JPEG and PNG (chosen by content; grey
 * and alpha become RGB) are decoded on the loader's threads as batches are
 * prepared, and every image is resized (bilinear) to height x width:
 * batches are float32 (B, 3, height, width). The mean and std fields do not
 * apply: without channel statistics the images are normalised with
 * ImageNet's (0.485, 0.456, 0.406 / 0.229, 0.224, 0.225). Names starting
 * with '.' are skipped, and plain files directly in dir ignored. Here:
 * DT_ERR_NOT_FOUND for a missing dir; DT_ERR_IO naming the path for a dir
 * without class folders, a class folder without images, or a file whose
 * name does not end in .jpg, .jpeg or .png. Later, from
 * dt_data_loader_next: DT_ERR_IO naming the file (and, for JPEG, the byte
 * offset) for a corrupt, truncated or unrecognised image;
 * DT_ERR_NOT_SUPPORTED for a CMYK JPEG. A NULL dir, a height or width
 * outside [1, 65500]: DT_ERR_INVALID_ARGUMENT. options may be NULL. */
DT_API dt_status dt_data_loader_create_image_folder(dt_data_loader **out,
                                                    const char *dir,
                                                    int64_t height,
                                                    int64_t width,
                                                    const dt_data_loader_options *options);
/* An MXNet RecordIO image set, what ImageRecordIter reads: rec_path is
 * the .rec file im2rec writes (RecordIO framing, each record an image
 * record header and a JPEG or PNG image), idx_path its .idx (lines
 * "<key>\t<byte offset>"), whose lines in order are the samples. idx_path
 * NULL: the .idx beside rec_path (x.rec -> x.idx) when it exists, else the
 * .rec is walked once here to find its records; "" always walks it. The
 * label is the record's label, or the first of its label vector, which
 * must be a whole number >= 0. Images are decoded on the loader's threads
 * and resized as an image folder's (see dt_data_loader_create_image_folder,
 * whose statistics and random resized crop apply here too): batches are
 * float32 (B, 3, height, width). Sharding and shuffling are the options'
 * num_parts, part_index and shuffle, as for every loader. Here:
 * DT_ERR_NOT_FOUND for a missing file; DT_ERR_IO naming the file and the
 * byte offset (for the index, the line) for a malformed index or, when
 * walking, a malformed record (bad magic, a length past the end of the
 * file, a bad sequence of split-record parts), or a file without records.
 * Later, from dt_data_loader_next: DT_ERR_IO naming the file and the
 * record's byte offset for a malformed record, a header longer than its
 * record, a label that is not a class, or a corrupt image. A NULL
 * rec_path, a height or width outside [1, 65500]:
 * DT_ERR_INVALID_ARGUMENT. options may be NULL. */
DT_API dt_status dt_data_loader_create_recordio(dt_data_loader **out,
                                                const char *rec_path,
                                                const char *idx_path,
                                                int64_t height,
                                                int64_t width,
                                                const dt_data_loader_options *options);
DT_API void dt_data_loader_free(dt_data_loader *loader);
/* Samples in this loader's part, and batches per epoch. */
DT_API dt_status dt_data_loader_num_samples(size_t *out,
                                            const dt_data_loader *loader);
DT_API dt_status dt_data_loader_num_batches(size_t *out,
                                            const dt_data_loader *loader);
/* Starts epoch `epoch` (its order depends on seed and epoch only). */
DT_API dt_status dt_data_loader_start_epoch(dt_data_loader *loader,
                                            int32_t epoch);
/* The next batch of the epoch as new handles (float32 (B, C, H, W) data:
 * (B, 1, 28, 28) for MNIST, (B, 3, 32, 32) for CIFAR, (B, 3, height,
 * width) for an image folder or RecordIO; int32 (B) labels), or *out_has_batch = 0 at the end of the epoch (then
 * the data and label outs are left untouched). Before the first
 * dt_data_loader_start_epoch it is DT_ERR_BAD_STATE. */
DT_API dt_status dt_data_loader_next(dt_ndarray **out_data,
                                     dt_ndarray **out_labels,
                                     int32_t *out_has_batch,
                                     dt_data_loader *loader);

/* ------------------------------------------------------------------------ */
/* Trainer: net + optimizer + kvstore (Gluon's Trainer)                     */
/* ------------------------------------------------------------------------ */

typedef struct dt_trainer dt_trainer;

/* How a trainer's step keeps the workers of a distributed job together:
 * the four steps of SINGA's DistOpt (its method names in brackets).
 * Append-only values. */
typedef enum dt_sync_mode {
  /* [backward_and_update] The gradients are reduced in full through the
   * kvstore (MXNet's and Gluon's step). The default. */
  DT_SYNC_FULL = 0,
  /* [backward_and_update_half] The same, but every worker's float32
   * gradients travel as float16: the trainer sets the kvstore's gradient
   * compression to "fp16:error_feedback=off" (SINGA keeps no residual). */
  DT_SYNC_HALF = 1,
  /* [backward_and_partial_update] Every worker applies its own gradients
   * to its own weights (nothing is reduced); then one chunk of the
   * parameters is averaged across the workers: pushed and pulled through
   * the kvstore under the parameters' keys (which then carry weights) and
   * divided by the number of workers. The chunk rotates step by step, so
   * every parameter is averaged once every few steps. Chunks are SINGA's
   * partitions: the parameters in backward's order (the last layer's
   * first); one with more than partial_chunk_elements elements is a chunk
   * of its own, smaller ones gather until a chunk holds more than
   * partial_chunk_elements. Needs the update on the workers
   * (update_on_kvstore 1 is DT_ERR_INVALID_ARGUMENT; -1 picks the workers),
   * a store that sums across the workers ("allreduce", "dist_nccl",
   * "dist_sync", "dist_sync_device"; no kvstore is DT_ERR_INVALID_ARGUMENT,
   * the others, dist_async included, DT_ERR_NOT_SUPPORTED), no gradient
   * compression on it (DT_ERR_INVALID_ARGUMENT, at create or at the first
   * step), no extra contexts (DT_ERR_NOT_SUPPORTED) and a job that ends
   * at a worker loss (under DT_WORKER_LOSS=continue the sums count fewer
   * workers than the average divides by: DT_ERR_NOT_SUPPORTED). */
  DT_SYNC_PARTIAL = 2,
  /* [backward_and_sparse_update] The gradients are reduced, but each worker
   * sends only its significant elements: |g| >= sparse_value (SINGA's
   * topK=False), or with sparse_topk the sparse_value fraction of largest
   * |g| (topK=True); with accumulation (SINGA's corr=True) what was not
   * sent is added to the next step's gradient. The trainer sets the
   * kvstore's gradient compression to "threshold:threshold=V" or
   * "topk:fraction=V", with error_feedback on or off. */
  DT_SYNC_SPARSE = 3
} dt_sync_mode;

typedef struct dt_trainer_options {
  size_t struct_size;         /* see "Option and info structs"           */
  /* -1 (default): on the store when a kvstore that runs optimizers is
   * given (all but "dist_nccl" and "allreduce") and the net needs no loss scaling (see
   * dt_net_set_compute_dtype), else locally; 1: the kvstore runs the
   * optimizer; 0: workers do. */
  int32_t update_on_kvstore;
  /* Extra devices for data parallelism in this process: the net is
   * replicated onto each, and every batch is split across the net's own
   * context and these (like split_and_load). NULL/0: the net's only.
   * Without a kvstore, several contexts reduce through an internal one, as
   * Gluon's kvstore='device' default: "device" when all are GPUs, else
   * "local". */
  const dt_context *const *extra_contexts;
  size_t num_extra_contexts;
  /* The step's sync mode (see dt_sync_mode); default DT_SYNC_FULL. Half
   * and sparse set the kvstore's gradient compression during
   * dt_trainer_create, as dt_kvstore_set_gradient_compression would (so
   * every worker creates its trainer with the same mode): a kvstore that
   * already compresses otherwise is DT_ERR_INVALID_ARGUMENT naming both, a
   * store that does not compress ("local", "device") DT_ERR_NOT_SUPPORTED,
   * no kvstore
   * DT_ERR_INVALID_ARGUMENT. The fields
   * below belong to one mode each: setting one for another mode is
   * DT_ERR_INVALID_ARGUMENT naming it. */
  dt_sync_mode sync_mode;
  /* DT_SYNC_PARTIAL: the chunk size in elements; 0 (default): 2097152,
   * SINGA's threshold. */
  size_t partial_chunk_elements;
  /* DT_SYNC_SPARSE: 0 (default): sparse_value is the magnitude an element
   * must reach (> 0); 1: the fraction of each gradient sent, in (0, 1]. */
  int32_t sparse_topk;
  /* DT_SYNC_SPARSE: 0 (default): 0.05, SINGA's spars. */
  double sparse_value;
  /* DT_SYNC_SPARSE: 0 (default): accumulate what was not sent (error
   * feedback, SINGA's corr=True); 1: drop it (corr=False). */
  int32_t sparse_no_accumulation;
} dt_trainer_options;

DT_API dt_status dt_trainer_options_init(dt_trainer_options *options,
                                         size_t struct_size);

/* The trainer keeps net, kv and the contexts alive and copies opt.
 * kv NULL: no kvstore (single-device updates). The net's current weights
 * are the initial values everywhere (the kvstore is initialised from them
 * at the first step), so initialise or load them first.
 * The trainer switches the net's loss to sum reduction, for good: as with
 * Gluon's loss.backward(), gradients are those of the summed loss and
 * dt_trainer_step(batch_size) divides by batch_size; dt_net_backward on
 * the net then returns the summed loss. opt must be complete (e.g. a
 * schedule with its required keys): DT_ERR_INVALID_ARGUMENT otherwise.
 * options NULL: the defaults. */
DT_API dt_status dt_trainer_create(dt_trainer **out, dt_net *net,
                                   const dt_optimizer *opt, dt_kvstore *kv,
                                   const dt_trainer_options *options);
DT_API void dt_trainer_free(dt_trainer *trainer);

/* Gluon's step: after the caller ran dt_net_forward/dt_net_backward on the
 * net, reduces the gradients through the kvstore and updates the weights;
 * gradients are rescaled by 1/batch_size. (With extra contexts use
 * dt_trainer_train_batch, which runs the replicas.) */
DT_API dt_status dt_trainer_step(dt_trainer *trainer, int64_t batch_size);
/* One training step on a batch: splits it across the contexts, forward
 * and backward on each, then step. Outputs (each may be NULL): the mean
 * loss and the number of correctly classified samples. */
DT_API dt_status dt_trainer_train_batch(double *out_loss, int64_t *out_correct,
                                        dt_trainer *trainer,
                                        const dt_ndarray *data,
                                        const dt_ndarray *labels);
/* Accuracy and mean loss over one epoch of loader, in inference mode. */
DT_API dt_status dt_trainer_evaluate(double *out_accuracy, double *out_loss,
                                     dt_trainer *trainer,
                                     dt_data_loader *loader);
DT_API dt_status dt_trainer_set_learning_rate(dt_trainer *trainer, double lr);
DT_API dt_status dt_trainer_learning_rate(double *out,
                                          const dt_trainer *trainer);

/* Weights, optimizer state (momenta, moments, step counts) and progress
 * (epochs and steps done) in one safetensors file, so a resumed run
 * continues exactly where it stopped. Loading is allowed before the first
 * step only (DT_ERR_BAD_STATE after); the checkpoint's optimizer must be the
 * trainer's (DT_ERR_INVALID_ARGUMENT otherwise); a malformed file is
 * DT_ERR_IO and changes nothing. */
DT_API dt_status dt_trainer_save_checkpoint(const dt_trainer *trainer,
                                            const char *path);
DT_API dt_status dt_trainer_load_checkpoint(dt_trainer *trainer,
                                            const char *path);

typedef struct dt_fit_options {
  size_t struct_size;        /* see "Option and info structs"            */
  int32_t epochs;            /* default 5                                */
  const char *metrics_path;  /* JSON lines, one per epoch; NULL: none    */
  const char *checkpoint_path; /* written after every epoch; NULL: none  */
  /* -1 (default): a progress bar on a TTY, plain lines otherwise;
   * 0: plain lines; 1: always the bar; 2: silent. */
  int32_t progress;
  /* A job's checkpoint directory; NULL (default): none. Every worker
   * writes its checkpoint there after each epoch
   * (epoch-<E>/worker-<rank>.safetensors); once all have (a kvstore
   * barrier), worker 0 replaces MANIFEST.json naming the epoch, by a rename,
   * and removes older epochs. A trainer that has not stepped yet first
   * resumes from the manifest's epoch, each worker from its own file: the
   * same command restarts a stopped or killed job from the last epoch every
   * worker finished (bit-identical for dist_sync: the servers' optimizer
   * state travels in the workers' checkpoints). A manifest of a job with
   * another number of workers is DT_ERR_INVALID_ARGUMENT, a malformed one
   * DT_ERR_IO. */
  const char *checkpoint_dir;
} dt_fit_options;

DT_API dt_status dt_fit_options_init(dt_fit_options *options,
                                     size_t struct_size);

/* Trains from the trainer's current epoch (0, or where a loaded checkpoint
 * stopped) up to options->epochs, evaluating on test (may be NULL) after
 * every epoch (options NULL: the defaults). Per epoch it prints progress
 * and writes a metrics line:
 * {"epoch", "loss", "train_accuracy", "test_accuracy", "images_per_s",
 *  "seconds"}. A worker that joined a running dist_sync job
 * (dt_kvstore_joined_running_job) starts at the job's step instead: the
 * epoch and batch its rounds have reached, with the servers' weights
 * (DT_ERR_NOT_SUPPORTED when the workers run the optimizer). Under
 * DT_WORKER_LOSS=continue the workers of an "allreduce" job let a worker
 * that joined in a departed one's place in before a batch, and hand it
 * their weights, optimizer state and step: it goes on from there, its
 * replica the same as theirs (docs/fault-tolerance.md). */
DT_API dt_status dt_trainer_fit(dt_trainer *trainer, dt_data_loader *train,
                                dt_data_loader *test,
                                const dt_fit_options *options);
/* Epochs completed (after fit or a loaded checkpoint). */
DT_API dt_status dt_trainer_epoch(int32_t *out, const dt_trainer *trainer);
/* Steps taken (by fit, dt_trainer_step and dt_trainer_train_batch; those
 * a loaded checkpoint or a hand-over brought included). */
DT_API dt_status dt_trainer_steps(int64_t *out, const dt_trainer *trainer);
/* What dt_trainer_fit does before each batch, for a loop of one's own
 * (dt_trainer_train_batch or dt_trainer_step): letting a worker into an
 * "allreduce" job under DT_WORKER_LOSS=continue. Every worker calls it
 * before each batch. On a worker in the job, *out_admitted is 1, alike on
 * every one, when a worker that joined in a departed one's place was let
 * in just now: this trainer's weights, optimizer state, loss scaler, epoch
 * and steps were handed to it. On the joined worker
 * (dt_kvstore_joined_running_job) the first call waits to be let in, takes
 * that state and sets *out_admitted to 1: its loop goes on from
 * dt_trainer_steps, with replicas the same as the others'. 0 otherwise:
 * before the first step (on every worker alike), and with the stores that
 * let nobody in this way (with servers, a joined worker's first step pulls
 * their weights). Errors as dt_kvstore_hand_over_state's. */
DT_API dt_status dt_trainer_admit_joining_workers(int32_t *out_admitted, dt_trainer *trainer);
/* Steps whose update was skipped because the gradients overflowed (float16
 * loss scaling, see dt_net_set_compute_dtype); 0 without loss scaling. */
DT_API dt_status dt_trainer_skipped_steps(int64_t *out,
                                          const dt_trainer *trainer);

/* ------------------------------------------------------------------------ */
/* Distributed kvstores and nodes (parameter server)                        */
/* ------------------------------------------------------------------------ */

/* Deadlines and bounds for the distributed kvstore types and for nodes.
 * Environment variables supply the defaults where noted (MXNet-compatible
 * DMLC_* for the job layout); a value set here wins. Times in seconds;
 * every wait has one, none is infinite. */
typedef struct dt_kvstore_options {
  size_t struct_size;           /* see "Option and info structs"               */
  double startup_timeout_s;     /* registering with the scheduler; default 60  */
  double request_timeout_s;     /* one push/pull/barrier; default 120          */
  double heartbeat_interval_s;  /* default 1                                   */
  double heartbeat_timeout_s;   /* a node silent this long is lost; default 5  */
  double shutdown_timeout_s;    /* dt_kvstore_free waiting for peers; default 10 */
  uint64_t bigarray_bound_bytes; /* larger tensors are split across all servers;
                                    default 4000000 (MXNet's 1e6 float32)       */
  /* The job layout, explicitly. Each field set here wins over every
   * environment source (DMLC_*, MX_CONFIG, RANK/WORLD_SIZE, OMPI_*, PMI_*,
   * SLURM_*, in that order; docs/launching.md). The defaults leave it to
   * the environment. */
  int32_t role;                 /* a dt_role, or -1 (default): environment     */
  int32_t worker_id;            /* >= 0, or -1 (default): environment/assigned */
  int32_t num_servers;          /* > 0, or 0 (default): environment            */
  int32_t num_workers;          /* > 0, or 0 (default): environment            */
  const char *scheduler_host;   /* IP or host name; NULL (default): environment */
  int32_t scheduler_port;       /* 1..65535, or 0 (default): environment       */
  /* TLS for the job's tcp connections (docs/security.md, "TLS"): PEM files
   * of this node's certificate, its unencrypted private key, and the CA
   * certificate every peer's certificate must chain to. All three or none
   * (DT_ERR_INVALID_ARGUMENT naming the missing field, or a file that is
   * missing, unreadable or malformed). NULL (default): DT_TLS_CERT_FILE,
   * DT_TLS_KEY_FILE, DT_TLS_CA_FILE; set here, the three replace those.
   * With TLS every tcp connection is tls+tcp with both ends' certificates
   * checked (a node without one from the CA cannot connect; no server name
   * is checked: use a CA for this job alone); ipc and inproc stay as they
   * are. Every node of a job needs TLS or none does. The strings are read
   * during the call only. */
  const char *tls_cert_file;
  const char *tls_key_file;
  const char *tls_ca_file;
} dt_kvstore_options;

DT_API dt_status dt_kvstore_options_init(dt_kvstore_options *options,
                                         size_t struct_size);
/* dt_kvstore_create with options (NULL: defaults). Distributed types
 * ("dist_sync", "dist_async", their "_device" forms, "dist_nccl",
 * "allreduce") join
 * the job described by DMLC_ROLE=worker,
 * DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER, DMLC_NUM_WORKER
 * (DMLC_WORKER_ID, DMLC_INTERFACE, DMLC_NODE_HOST when set): the call
 * returns once the scheduler has published the node table, or
 * DT_ERR_TIMED_OUT after startup_timeout_s. When a node of the job dies,
 * pending and later calls return DT_ERR_PEER_LOST naming it. */
DT_API dt_status dt_kvstore_create_ex(dt_kvstore **out, const char *type,
                                      const dt_kvstore_options *options);

typedef enum dt_role {
  DT_ROLE_WORKER = 0,
  DT_ROLE_SERVER = 1,
  DT_ROLE_SCHEDULER = 2
} dt_role;

/* This process's role from the environment, by the order of
 * dt_kvstore_options (DMLC_ROLE first; worker when no source names one); an
 * unknown value is DT_ERR_INVALID_ARGUMENT. */
DT_API dt_status dt_node_role(dt_role *out);
/* This worker's place among the worker processes of its host: *local_rank
 * in 0 .. *local_size - 1, the GPU a program that trains on one GPU per
 * worker uses (torchrun's LOCAL_RANK). From the launcher's environment, the
 * first set of: DT_LOCAL_RANK/DT_LOCAL_SIZE (dtrun, every launcher),
 * LOCAL_RANK/LOCAL_WORLD_SIZE (torchrun), OMPI_COMM_WORLD_LOCAL_RANK/
 * _LOCAL_SIZE (Open MPI), MPI_LOCALRANKID/MPI_LOCALNRANKS (MPICH),
 * SLURM_LOCALID (srun; *local_size 0: not said). mpirun and srun count
 * every process they started on the host, servers included. Nothing set:
 * 0 of 1. A malformed value is DT_ERR_INVALID_ARGUMENT naming the variable.
 * Either pointer may be NULL. Any thread. */
DT_API dt_status dt_node_local_rank(int32_t *local_rank, int32_t *local_size);
/* Runs this process as the scheduler or a server of the job described by
 * options' layout fields (options NULL: the defaults) and the environment (DMLC_* and the others named
 * at dt_kvstore_options), until the job shuts down (DT_OK) or fails (e.g.
 * DT_ERR_PEER_LOST naming the lost node, DT_ERR_TIMED_OUT at start-up,
 * DT_ERR_NETWORK for a port in use). A worker's role is
 * DT_ERR_INVALID_ARGUMENT: workers create a dist kvstore instead. This is
 * what MXNet programs started with DMLC_ROLE=server do on import. */
DT_API dt_status dt_node_run(const dt_kvstore_options *options);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DT_C_API_H */
