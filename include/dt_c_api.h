/*
 * dt_c_api.h - the one public header of disttrain.
 *
 * Pure C99, self-contained. Everything the library exports is declared here
 * and named dt_* / DT_*. This header is the single source of the version.
 *
 * Conventions (see STYLE.md):
 *  - Every fallible call returns dt_status. On a non-OK return the calling
 *    thread's dt_last_error() holds a message naming the call and the cause;
 *    out-parameters are left untouched.
 *  - Out-parameters come first, then the object, then inputs. Arrays are
 *    pointer + count.
 *  - dt_X_create()/dt_X_free() pair up; free accepts NULL. A second free of
 *    the same handle, or any use of a freed handle, is detected: calls return
 *    DT_ERR_INVALID_HANDLE, and free ignores it and records the message in
 *    dt_last_error().
 *  - A child keeps its parent alive: freeing a context while arrays on it
 *    live only defers its destruction until the last array is freed.
 *  - Ownership passes into a call only when it returns DT_OK.
 *  - Handles may be used from any thread; one array must not be written by
 *    two threads at once (as with any C object).
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
  DT_ERR_PEER_LOST = 19        /* a node of the job died or stopped        */
} dt_status;

/* Static text naming a status ("invalid argument", ...). Never NULL. */
DT_API const char *dt_status_string(dt_status status);

/* Message of the most recent non-OK return on the calling thread; "" if
 * none yet. Never NULL. Valid until the next disttrain call on this thread. */
DT_API const char *dt_last_error(void);

/* ------------------------------------------------------------------------ */
/* Version and build information                                            */
/* ------------------------------------------------------------------------ */

/* DT_VERSION_NUMBER of the library actually loaded (compare with the
 * header's to detect a mismatch at run time). */
DT_API uint32_t dt_version(void);
/* "MAJOR.MINOR.PATCH", static text. */
DT_API const char *dt_version_string(void);

typedef struct dt_build_info {
  size_t struct_size;    /* set by the caller: sizeof(dt_build_info)       */
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

/* Sets struct_size; other fields zero. */
DT_API void dt_build_info_init(dt_build_info *info);
/* Fills the fields that fit in info->struct_size (older callers pass a
 * smaller struct). */
DT_API dt_status dt_build_info_get(dt_build_info *info);

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
 * nearest; out-of-range integers are DT_ERR_INVALID_ARGUMENT). */
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DT_C_API_H */
