/* Go typemaps for disttrain.i (SWIG -go -cgo -intgosize 64).
 *
 * The generated package (github.com/disttrain/disttrain/bindings/go/internal/capi) is the low-level layer
 * that the idiomatic package disttrain sits on. Its shape:
 *
 *  - dt_status returns become *Failure: nil on DT_OK, else the status and
 *    dt_last_error() copied inside the same C call. A goroutine may move to
 *    another OS thread between two cgo calls, and the message is
 *    thread-local, so reading it in a second call could return another
 *    call's message.
 *  - Handles travel as uintptr; out-handles (dt_X **) as *uintptr; arrays
 *    of handles, keys and dims as a pointer to a Go slice's first element
 *    (the caller passes the count, as in C). C reads or writes Go memory
 *    only during the call and keeps no pointer to it (cgo pointer rules):
 *    no Go memory passed here holds Go pointers.
 *  - Bulk data (copy_from_host / copy_to_host) is an unsafe.Pointer to the
 *    first element of a Go slice; the idiomatic layer checks the byte count.
 *  - String lists (the *_str kvstore keys, dt_ndarray_save names) travel as
 *    one Go string of NUL-terminated names, because a []string holds Go
 *    pointers and may not be passed to C. The wrapper splits it into a
 *    temporary char*[] that it frees before returning.
 *  - const char ** outs become *string, copied into Go memory before the
 *    call returns to Go code.
 */

%{
#include <stdlib.h>
#include <string.h>
%}

/* The cgo flags come from pkg-config (disttrain.pc): an installed library,
 * or the build tree's uninstalled .pc that CMake writes for in-tree tests. */
%insert(cgo_comment) %{
#cgo pkg-config: disttrain
%}

/* ---- status -> *Failure, built in the failing call ---- */

%fragment("DtGoFailure", "header") %{
/* Encodes a non-OK status and this thread's last error as one Go string:
 * 4 bytes of status (little-endian, independent of the host's order), then
 * the message. DT_OK is the empty string. Without memory for the copy the
 * status alone travels as a negative length, -(status + 1), with no bytes. */
static _gostring_ dt_go_failure(dt_status status) {
  _gostring_ r;
  const char *msg;
  size_t len;
  char *buf;
  r.p = NULL;
  r.n = 0;
  if (status == DT_OK) return r;
  msg = dt_last_error();
  len = strlen(msg);
  buf = (char *)malloc(len + 4);
  if (buf == NULL) {
    r.n = -((intgo)status + 1);
    return r;
  }
  buf[0] = (char)((unsigned)status & 0xffu);
  buf[1] = (char)(((unsigned)status >> 8) & 0xffu);
  buf[2] = (char)(((unsigned)status >> 16) & 0xffu);
  buf[3] = (char)(((unsigned)status >> 24) & 0xffu);
  memcpy(buf + 4, msg, len);
  r.p = buf;
  r.n = (intgo)(len + 4);
  return r;
}
%}

%typemap(gotype) dt_status "*Failure"
%typemap(imtype) dt_status "string"
%typemap(ctype) dt_status "_gostring_"
%typemap(out, fragment="DtGoFailure") dt_status %{ $result = dt_go_failure($1); %}
%typemap(goout) dt_status %{ $result = newFailure($1) %}

/* dt_status as an input (dt_status_string) stays a plain number. */
%typemap(gotype) dt_status status "int32"
%typemap(imtype) dt_status status "int32"
%typemap(ctype) dt_status status "int32_t"
%typemap(in) dt_status status %{ $1 = (dt_status)$input; %}

%insert(go_wrapper) %{
// Failure is a non-OK dt_status with the message dt_last_error() held when
// the failing call returned, read in that same C call.
type Failure struct {
	Status  int32
	Message string
}

// failureText is the layout of a Go string header, with the data pointer
// typed so that reading the C bytes needs no uintptr round trip.
type failureText struct {
	p unsafe.Pointer
	n int
}

func newFailure(s string) *Failure {
	t := *(*failureText)(unsafe.Pointer(&s))
	if t.n == 0 {
		return nil
	}
	if t.n < 0 {
		return &Failure{Status: int32(-t.n - 1), Message: "out of memory while copying the error message"}
	}
	b := unsafe.Slice((*byte)(t.p), t.n)
	f := &Failure{
		Status:  int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24),
		Message: string(b[4:]),
	}
	Swig_free(uintptr(t.p))
	return f
}
%}

/* ---- handles ---- */

%define DT_GO_HANDLE(TYPE)
%typemap(gotype) TYPE *, const TYPE * "uintptr"
%typemap(imtype) TYPE *, const TYPE * "uintptr"
%typemap(ctype) TYPE *, const TYPE * "uintptr_t"
%typemap(in) TYPE *, const TYPE * %{ $1 = ($1_ltype)$input; %}
%typemap(out) TYPE *, const TYPE * %{ $result = (uintptr_t)$1; %}

%typemap(gotype) TYPE ** "*uintptr"
%typemap(imtype) TYPE ** "*uintptr"
%typemap(ctype) TYPE ** "uintptr_t *"
%typemap(in) TYPE ** %{ $1 = ($1_ltype)$input; %}

/* Arrays of handles: a pointer to the first element of a []uintptr (nil
 * for none), read during the call only. A pointer rather than a slice:
 * cgo boxes a slice argument for its pointer check, one allocation per
 * argument and call. */
%typemap(gotype) const TYPE *const *, TYPE *const * "*uintptr"
%typemap(imtype) const TYPE *const *, TYPE *const * "*uintptr"
%typemap(ctype) const TYPE *const *, TYPE *const * "uintptr_t *"
%typemap(in) const TYPE *const *, TYPE *const *
%{ $1 = ($1_ltype)$input; %}
%enddef

DT_GO_HANDLE(dt_context)
DT_GO_HANDLE(dt_ndarray)
DT_GO_HANDLE(dt_named_arrays)
DT_GO_HANDLE(dt_net)
DT_GO_HANDLE(dt_optimizer)
DT_GO_HANDLE(dt_kvstore)
DT_GO_HANDLE(dt_data_loader)
DT_GO_HANDLE(dt_trainer)

/* ---- scalar out-parameters: Go pointers, written during the call ---- */

%define DT_GO_OUT(CTYPE, GOTYPE)
%typemap(gotype) CTYPE * "*" #GOTYPE
%typemap(imtype) CTYPE * "*" #GOTYPE
%typemap(ctype) CTYPE * "void *"
%typemap(in) CTYPE * %{ $1 = ($1_ltype)$input; %}
%enddef

DT_GO_OUT(int32_t, int32)
DT_GO_OUT(uint32_t, uint32)
DT_GO_OUT(size_t, uint64)
DT_GO_OUT(double, float64)
DT_GO_OUT(dt_device_type, int32)
DT_GO_OUT(dt_dtype, int32)
DT_GO_OUT(dt_role, int32)

/* int64_t and uint64_t arrays (dims, keys, the shape buffer, int lists and
 * the out_correct count): a pointer to the first element of a Go slice, nil
 * for none, for the same reason as the handle arrays. */
%define DT_GO_ARRAY(CTYPE, GOTYPE)
%typemap(gotype) CTYPE *, const CTYPE * "*" #GOTYPE
%typemap(imtype) CTYPE *, const CTYPE * "*" #GOTYPE
%typemap(ctype) CTYPE *, const CTYPE * "void *"
%typemap(in) CTYPE *, const CTYPE * %{ $1 = ($1_ltype)$input; %}
%enddef

DT_GO_ARRAY(int64_t, int64)
DT_GO_ARRAY(uint64_t, uint64)

/* The JSON buffer protocol (dt_net_to_json, dt_optimizer_to_json). */
%typemap(gotype) char *buf "[]byte"
%typemap(imtype) char *buf "[]byte"
%typemap(ctype) char *buf "_goslice_"
%typemap(in) char *buf %{ $1 = ($1_ltype)$input.array; %}
%typemap(freearg) char *buf ""

/* Bulk host data. */
%typemap(gotype) const void *src, void *dst "unsafe.Pointer"
%typemap(imtype) const void *src, void *dst "unsafe.Pointer"
%typemap(ctype) const void *src, void *dst "void *"
%typemap(in) const void *src, void *dst %{ $1 = ($1_ltype)$input; %}

/* Strings where C takes NULL for "none": the empty Go string. */
%typemap(in) const char *options_json, const char *dir, const char *name,
             const char *metrics_path, const char *checkpoint_path,
             const char *scheduler_host, const char *idx_path
%{
  if ($input.n == 0) {
    $1 = NULL;
  } else {
    $1 = ($1_ltype)malloc($input.n + 1);
    if ($1 == NULL) _swig_gopanic("disttrain: out of memory copying a string");
    memcpy($1, $input.p, $input.n);
    $1[$input.n] = '\0';
  }
%}

/* String lists as one string of NUL-terminated names. */
%typemap(gotype) const char *const *names "string"
%typemap(imtype) const char *const *names "string"
%typemap(ctype) const char *const *names "_gostring_"
%typemap(in) const char *const *names (char *names_text = NULL, char **names_list = NULL)
%{
  {
    intgo i, count = 0, at = 0;
    for (i = 0; i < $input.n; ++i) count += $input.p[i] == '\0';
    names_text = (char *)malloc($input.n + 1);
    names_list = (char **)malloc(sizeof(char *) * (size_t)(count + 1));
    if (names_text == NULL || names_list == NULL) {
      free(names_text);
      free(names_list);
      _swig_gopanic("disttrain: out of memory copying the names");
    }
    memcpy(names_text, $input.p, $input.n);
    names_text[$input.n] = '\0';
    for (i = 0; i < count; ++i) {
      names_list[i] = names_text + at;
      at += (intgo)strlen(names_text + at) + 1;
    }
    names_list[count] = NULL;
    $1 = ($1_ltype) names_list;
  }
%}
%typemap(freearg) const char *const *names
%{ free(names_text$argnum); free(names_list$argnum); %}
/* One typemap per pattern: SWIG declares a multi-pattern typemap's locals
 * for one of the patterns only. */
%apply const char *const *names { const char *const *keys };

/* Static or object-owned text out: copied into a Go string. */
%typemap(gotype) const char **out "*string"
%typemap(imtype) const char **out "*string"
%typemap(ctype) const char **out "_gostring_ *"
%typemap(in) const char **out (const char *text = NULL) %{ $1 = ($1_ltype) &text; %}
%typemap(argout, fragment="AllocateString") const char **out
%{
  if (text$argnum != NULL) {
    *$input = Swig_AllocateString(text$argnum, strlen(text$argnum));
  }
%}
%typemap(goargout, fragment="CopyString") const char **out
%{
  if len(*$input) > 0 {
    *$input = swigCopyString(*$input)
  }
%}

/* ---- option structs ---- */

/* The option structs are plain data allocated in C through the generated
 * New/Delete functions. Their pointer members would keep pointers that
 * outlive the call, so those are set through the helpers below instead,
 * which build or complete the struct inside the one C call that uses it. */
%ignore dt_fit_options::metrics_path;
%ignore dt_fit_options::checkpoint_path;
%ignore dt_trainer_options::extra_contexts;
%ignore dt_kvstore_options::scheduler_host;
/* Not offered in Go: C reads them only during the create call, but a Go
 * slice stored in C memory breaks cgo's pointer rules. */
%ignore dt_data_loader_options::channel_mean;
%ignore dt_data_loader_options::channel_std;

%{
/* dt_kvstore_create_ex and dt_node_run with the scheduler host set for the
 * duration of the call only: the text is this call's copy of a Go string. */
static dt_status dt_go_kvstore_create_ex(dt_kvstore **out, const char *type,
                                         dt_kvstore_options *options,
                                         const char *scheduler_host) {
  dt_status status;
  if (options == NULL) return dt_kvstore_create_ex(out, type, NULL);
  options->scheduler_host = scheduler_host;
  status = dt_kvstore_create_ex(out, type, options);
  options->scheduler_host = NULL;
  return status;
}

static dt_status dt_go_node_run(dt_kvstore_options *options,
                                const char *scheduler_host) {
  dt_status status;
  if (options == NULL) return dt_node_run(NULL);
  options->scheduler_host = scheduler_host;
  status = dt_node_run(options);
  options->scheduler_host = NULL;
  return status;
}

/* dt_trainer_create with its options built here, so that the array of
 * extra contexts (Go memory) is read during this call only. The sync fields
 * are dt_trainer_options's (0: the library's default). */
static dt_status dt_go_trainer_create(dt_trainer **out, dt_net *net,
                                      const dt_optimizer *opt, dt_kvstore *kv,
                                      int32_t update_on_kvstore,
                                      const dt_context *const *extra_contexts,
                                      size_t num_extra_contexts,
                                      int32_t sync_mode,
                                      size_t partial_chunk_elements,
                                      int32_t sparse_topk, double sparse_value,
                                      int32_t sparse_no_accumulation) {
  dt_trainer_options options;
  const dt_status init = dt_trainer_options_init(&options, sizeof options);
  if (init != DT_OK) return init;
  options.update_on_kvstore = update_on_kvstore;
  options.extra_contexts = num_extra_contexts > 0 ? extra_contexts : NULL;
  options.num_extra_contexts = num_extra_contexts;
  options.sync_mode = (dt_sync_mode)sync_mode;
  options.partial_chunk_elements = partial_chunk_elements;
  options.sparse_topk = sparse_topk;
  options.sparse_value = sparse_value;
  options.sparse_no_accumulation = sparse_no_accumulation;
  return dt_trainer_create(out, net, opt, kv, &options);
}

/* dt_trainer_fit with its options built here: the paths live in this
 * call's copies of the Go strings. epochs 0 keeps the library default. */
static dt_status dt_go_trainer_fit(dt_trainer *trainer, dt_data_loader *train,
                                   dt_data_loader *test, int32_t epochs,
                                   const char *metrics_path,
                                   const char *checkpoint_path,
                                   int32_t progress) {
  dt_fit_options options;
  const dt_status init = dt_fit_options_init(&options, sizeof options);
  if (init != DT_OK) return init;
  if (epochs > 0) options.epochs = epochs;
  options.metrics_path = metrics_path;
  options.checkpoint_path = checkpoint_path;
  options.progress = progress;
  return dt_trainer_fit(trainer, train, test, &options);
}
%}

%rename("%s") dt_go_kvstore_create_ex;
%rename("%s") dt_go_node_run;
%rename("%s") dt_go_trainer_create;
%rename("%s") dt_go_trainer_fit;
dt_status dt_go_kvstore_create_ex(dt_kvstore **out, const char *type,
                                  dt_kvstore_options *options,
                                  const char *scheduler_host);
dt_status dt_go_node_run(dt_kvstore_options *options,
                         const char *scheduler_host);
dt_status dt_go_trainer_create(dt_trainer **out, dt_net *net,
                               const dt_optimizer *opt, dt_kvstore *kv,
                               int32_t update_on_kvstore,
                               const dt_context *const *extra_contexts,
                               size_t num_extra_contexts, int32_t sync_mode,
                               size_t partial_chunk_elements,
                               int32_t sparse_topk, double sparse_value,
                               int32_t sparse_no_accumulation);
dt_status dt_go_trainer_fit(dt_trainer *trainer, dt_data_loader *train,
                            dt_data_loader *test, int32_t epochs,
                            const char *metrics_path,
                            const char *checkpoint_path, int32_t progress);
