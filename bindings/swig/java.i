/* Java typemaps for disttrain.i.
 *
 * The generated classes (disttrain, disttrainJNI, disttrainConstants and the
 * option-struct proxies) are package-private to org.disttrain: users see only
 * the idiomatic classes written by hand beside them (Context, NDArray, ...),
 * which own the handles and check what the C side cannot (e.g. that parallel
 * key/value arrays have one length).
 *
 * Mapping:
 *  - A non-OK dt_status throws org.disttrain.DtException from inside the
 *    same JNI call, with the message of this thread's dt_last_error(). The throw happens in the
 *    "ret" typemap, after every argument has been released, so no JNI call
 *    happens while a critical array region is held.
 *  - Handles (dt_X *) travel as long; out-handles (dt_X **out) and scalar
 *    out-parameters as one-element Java arrays.
 *  - Bulk data: (pointer, count) pairs come from the Java array or direct
 *    buffer itself, so the byte count C checks against the array is the
 *    real capacity of the Java memory. No pointer into Java memory outlives
 *    the call: arrays are released before the wrapper returns.
 */

%include "enumsimple.swg"
%javaconst(1);

%pragma(java) moduleclassmodifiers = "final class"
%pragma(java) jniclassclassmodifiers = "final class"
%typemap(javaclassmodifiers) SWIGTYPE "final class"
/* Option structs are used only inside one call by the hand-written classes,
 * which delete them explicitly; no finalizer. */
%typemap(javafinalize) SWIGTYPE ""

/* The native library is loaded, and its version checked, before the first
 * native method of the JNI class can run. */
%pragma(java) jniclasscode = %{
  static {
    NativeLibrary.load();
    NativeLibrary.checkVersion(disttrainConstants.DT_VERSION_NUMBER, dtj_binding_version(), dt_version());
  }

  /* dt_log_set_handler with LogDispatch.line as the handler (on), or stderr
   * (off); written by hand below, since a C function pointer has no Java
   * value. Callers serialise (Disttrain.setLogHandler is synchronized). */
  static native void logSetHandler(int maxLevel, boolean on);
%}

%{
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A failure found by the binding itself (not by libdisttrain) carries its
 * message here; dtj_throw prefers it to dt_last_error(). Thread-local like
 * dt_last_error(), and consumed by the throw. */
static __thread const char *dtj_binding_error = NULL;

static dt_status dtj_fail(dt_status status, const char *message) {
  dtj_binding_error = message;
  return status;
}

/* Throws org.disttrain.DtException(status, message) in jenv's thread. */
static void dtj_throw(JNIEnv *jenv, dt_status status) {
  const char *message = dtj_binding_error != NULL ? dtj_binding_error : dt_last_error();
  jclass cls;
  jmethodID ctor;
  jstring text;
  jobject exception;
  dtj_binding_error = NULL;
  cls = (*jenv)->FindClass(jenv, "org/disttrain/DtException");
  if (cls == NULL) return; /* NoClassDefFoundError is pending */
  ctor = (*jenv)->GetMethodID(jenv, cls, "<init>", "(ILjava/lang/String;)V");
  if (ctor == NULL) return;
  text = (*jenv)->NewStringUTF(jenv, message);
  if (text == NULL) return; /* OutOfMemoryError is pending */
  exception = (*jenv)->NewObject(jenv, cls, ctor, (jint)status, text);
  if (exception != NULL) (*jenv)->Throw(jenv, (jthrowable)exception);
}

static void dtj_throw_java(JNIEnv *jenv, const char *class_name, const char *message) {
  jclass cls = (*jenv)->FindClass(jenv, class_name);
  if (cls != NULL) (*jenv)->ThrowNew(jenv, cls, message);
}

/* ---- the log channel: library lines -> org.disttrain.LogDispatch.line ---- */

static JavaVM *dtj_log_vm = NULL;
static jclass dtj_log_class = NULL; /* a global reference, kept for good */
static jmethodID dtj_log_line = NULL;

/* Runs on whichever thread the library logs from, one line at a time. A
 * thread of the library's own is attached for the call and detached after,
 * so that no native thread ends while the JVM still counts it. */
static void dtj_log_forward(dt_log_level level, const char *facility, const char *message, void *user) {
  JNIEnv *env = NULL;
  int attached = 0;
  jstring jfacility;
  jstring jmessage;
  (void)user;
  if ((*dtj_log_vm)->GetEnv(dtj_log_vm, (void **)&env, JNI_VERSION_1_8) == JNI_EDETACHED) {
    if ((*dtj_log_vm)->AttachCurrentThreadAsDaemon(dtj_log_vm, (void **)&env, NULL) != JNI_OK) return;
    attached = 1;
  }
  if (env == NULL) return;
  jfacility = (*env)->NewStringUTF(env, facility);
  jmessage = jfacility == NULL ? NULL : (*env)->NewStringUTF(env, message);
  if (jmessage != NULL) {
    (*env)->CallStaticVoidMethod(env, dtj_log_class, dtj_log_line, (jint)level, jfacility, jmessage);
  }
  /* Nothing a handler throws may reach the library's caller. */
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  if (jfacility != NULL) (*env)->DeleteLocalRef(env, jfacility);
  if (jmessage != NULL) (*env)->DeleteLocalRef(env, jmessage);
  if (attached) (*dtj_log_vm)->DetachCurrentThread(dtj_log_vm);
}

SWIGEXPORT void JNICALL Java_org_disttrain_disttrainJNI_logSetHandler(JNIEnv *jenv, jclass jcls, jint max_level,
                                                                     jboolean on) {
  dt_status status;
  (void)jcls;
  if (on && dtj_log_class == NULL) {
    jclass local;
    if ((*jenv)->GetJavaVM(jenv, &dtj_log_vm) != JNI_OK) {
      dtj_throw_java(jenv, "java/lang/IllegalStateException", "disttrain: no JavaVM for the log handler");
      return;
    }
    local = (*jenv)->FindClass(jenv, "org/disttrain/LogDispatch");
    if (local == NULL) return; /* NoClassDefFoundError is pending */
    dtj_log_line = (*jenv)->GetStaticMethodID(jenv, local, "line", "(ILjava/lang/String;Ljava/lang/String;)V");
    if (dtj_log_line == NULL) return;
    dtj_log_class = (jclass)(*jenv)->NewGlobalRef(jenv, local);
    if (dtj_log_class == NULL) return;
  }
  status = dt_log_set_handler((dt_log_level)max_level, on ? dtj_log_forward : NULL, NULL);
  if (status != DT_OK) dtj_throw(jenv, status);
}

/* Java long[] of handles -> C array of pointers. Small lists (the common
 * single-key kvstore call) stay on the stack. */
#define DTJ_SMALL 8
typedef struct dtj_ptrs {
  void *small[DTJ_SMALL];
  void **items;
} dtj_ptrs;

static int dtj_ptrs_get(JNIEnv *jenv, jlongArray array, dtj_ptrs *out) {
  jsize n, i;
  jlong values[DTJ_SMALL];
  out->items = NULL;
  if (array == NULL) return 1;
  n = (*jenv)->GetArrayLength(jenv, array);
  out->items = n <= DTJ_SMALL ? out->small : (void **)malloc(sizeof(void *) * (size_t)n);
  if (out->items == NULL) {
    dtj_throw_java(jenv, "java/lang/OutOfMemoryError", "disttrain: handle list");
    return 0;
  }
  if (n <= DTJ_SMALL) {
    (*jenv)->GetLongArrayRegion(jenv, array, 0, n, values);
    for (i = 0; i < n; ++i) out->items[i] = (void *)(intptr_t)values[i];
  } else {
    jlong *all = (*jenv)->GetLongArrayElements(jenv, array, NULL);
    if (all == NULL) return 0;
    for (i = 0; i < n; ++i) out->items[i] = (void *)(intptr_t)all[i];
    (*jenv)->ReleaseLongArrayElements(jenv, array, all, JNI_ABORT);
  }
  return 1;
}

static void dtj_ptrs_release(dtj_ptrs *p) {
  if (p->items != NULL && p->items != p->small) free(p->items);
  p->items = NULL;
}

/* Java String[] -> C array of NUL-terminated UTF-8 strings. */
typedef struct dtj_strings {
  jobjectArray array;
  jsize count;
  const char **items;
  jstring *refs;
} dtj_strings;

static void dtj_strings_release(JNIEnv *jenv, dtj_strings *s) {
  jsize i;
  if (s->items != NULL) {
    for (i = 0; i < s->count; ++i) {
      if (s->items[i] != NULL) (*jenv)->ReleaseStringUTFChars(jenv, s->refs[i], s->items[i]);
      if (s->refs[i] != NULL) (*jenv)->DeleteLocalRef(jenv, s->refs[i]);
    }
  }
  free(s->items);
  free(s->refs);
  s->items = NULL;
  s->refs = NULL;
}

static int dtj_strings_get(JNIEnv *jenv, jobjectArray array, dtj_strings *s) {
  jsize i;
  s->array = array;
  s->count = 0;
  s->items = NULL;
  s->refs = NULL;
  if (array == NULL) return 1;
  s->count = (*jenv)->GetArrayLength(jenv, array);
  s->items = (const char **)calloc((size_t)s->count + 1, sizeof(char *));
  s->refs = (jstring *)calloc((size_t)s->count + 1, sizeof(jstring));
  if (s->items == NULL || s->refs == NULL) {
    dtj_throw_java(jenv, "java/lang/OutOfMemoryError", "disttrain: string list");
    dtj_strings_release(jenv, s);
    return 0;
  }
  for (i = 0; i < s->count; ++i) {
    s->refs[i] = (jstring)(*jenv)->GetObjectArrayElement(jenv, array, i);
    if (s->refs[i] == NULL) {
      dtj_throw_java(jenv, "java/lang/NullPointerException", "disttrain: null string in a key list");
      dtj_strings_release(jenv, s);
      return 0;
    }
    s->items[i] = (*jenv)->GetStringUTFChars(jenv, s->refs[i], NULL);
    if (s->items[i] == NULL) {
      dtj_strings_release(jenv, s);
      return 0;
    }
  }
  return 1;
}

/* Byte size of a direct buffer's memory, from its element type. */
static size_t dtj_buffer_element_size(JNIEnv *jenv, jobject buffer) {
  static const char *const names[] = {"java/nio/ByteBuffer", "java/nio/FloatBuffer",
                                      "java/nio/DoubleBuffer", "java/nio/IntBuffer",
                                      "java/nio/LongBuffer", "java/nio/ShortBuffer",
                                      "java/nio/CharBuffer"};
  static const size_t sizes[] = {1, 4, 8, 4, 8, 2, 2};
  size_t i;
  for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    jclass cls = (*jenv)->FindClass(jenv, names[i]);
    jboolean is = cls != NULL && (*jenv)->IsInstanceOf(jenv, buffer, cls);
    if (cls != NULL) (*jenv)->DeleteLocalRef(jenv, cls);
    if (is) return sizes[i];
  }
  return 0;
}

/* Address and byte capacity of a direct buffer; throws and returns 0 if it
 * is not one. */
static int dtj_buffer_get(JNIEnv *jenv, jobject buffer, void **address, size_t *nbytes) {
  jlong capacity;
  size_t element;
  if (buffer == NULL) {
    dtj_throw_java(jenv, "java/lang/NullPointerException", "disttrain: null buffer");
    return 0;
  }
  *address = (*jenv)->GetDirectBufferAddress(jenv, buffer);
  capacity = (*jenv)->GetDirectBufferCapacity(jenv, buffer);
  element = dtj_buffer_element_size(jenv, buffer);
  if (*address == NULL || capacity < 0 || element == 0) {
    dtj_throw_java(jenv, "java/lang/IllegalArgumentException",
                   "disttrain: the buffer must be a direct java.nio buffer");
    return 0;
  }
  *nbytes = (size_t)capacity * element;
  return 1;
}
%}

/* ---- status ----------------------------------------------------------
 * Low-level methods return the status as an int (the jstype also types the
 * DT_* constants, so it cannot be void); it is always DT_OK when they return,
 * because a non-OK status has thrown. */
%typemap(jni) dt_status "jint"
%typemap(jtype) dt_status "int"
%typemap(jstype) dt_status "int"
%typemap(out) dt_status %{ $result = (jint)$1; %}
%typemap(javaout) dt_status { return $jnicall; }
%typemap(ret) dt_status %{
  if ($1 != DT_OK) dtj_throw(jenv, $1);
%}

/* ---- 64-bit integers: Java long (keys and seeds are bit patterns). With
 * SWIGWORDSIZE64, stdint.i makes these C long, which SWIG's Java default maps
 * to a 32-bit int; state the mapping instead. ----------------------------- */
%typemap(jni) int64_t "jlong"
%typemap(jtype) int64_t "long"
%typemap(jstype) int64_t "long"
%typemap(in) int64_t %{ $1 = (int64_t)$input; %}
%typemap(out) int64_t %{ $result = (jlong)$1; %}
%typemap(javain) int64_t "$javainput"
%typemap(javaout) int64_t { return $jnicall; }
%typemap(jni) uint64_t "jlong"
%typemap(jtype) uint64_t "long"
%typemap(jstype) uint64_t "long"
%typemap(in) uint64_t %{ $1 = (uint64_t)$input; %}
%typemap(out) uint64_t %{ $result = (jlong)$1; %}
%typemap(javain) uint64_t "$javainput"
%typemap(javaout) uint64_t { return $jnicall; }

/* ---- handles --------------------------------------------------------- */
%define DTJ_HANDLE(T)
%typemap(jni) T *, const T * "jlong"
%typemap(jtype) T *, const T * "long"
%typemap(jstype) T *, const T * "long"
%typemap(in) T *, const T * %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(javain) T *, const T * "$javainput"

/* An out-handle: a long[1] receives the new handle. */
%typemap(jni) T ** "jlongArray"
%typemap(jtype) T ** "long[]"
%typemap(jstype) T ** "long[]"
%typemap(in) T ** (T *handle = NULL) %{
  if ($input == NULL || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    dtj_throw_java(jenv, "java/lang/IllegalArgumentException", "disttrain: out-handle array must have one element");
    return $null;
  }
  $1 = &handle;
%}
%typemap(argout) T ** %{
  {
    jlong value = (jlong)(intptr_t)handle$argnum;
    (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &value);
  }
%}
%typemap(javain) T ** "$javainput"

/* A list of handles (kvstore values and outs). */
%typemap(jni) const T *const *, T *const * "jlongArray"
%typemap(jtype) const T *const *, T *const * "long[]"
%typemap(jstype) const T *const *, T *const * "long[]"
%typemap(in) const T *const * (dtj_ptrs ptrs), T *const * (dtj_ptrs ptrs) %{
  if (!dtj_ptrs_get(jenv, $input, &ptrs)) return $null;
  $1 = ($1_ltype)ptrs.items;
%}
%typemap(freearg) const T *const *, T *const * %{ dtj_ptrs_release(&ptrs$argnum); %}
/* Not out-handles: nothing to write back. */
%typemap(argout) const T *const *, T *const * ""
%typemap(javain) const T *const *, T *const * "$javainput"
%enddef

DTJ_HANDLE(dt_context)
DTJ_HANDLE(dt_ndarray)
DTJ_HANDLE(dt_named_arrays)
DTJ_HANDLE(dt_net)
DTJ_HANDLE(dt_optimizer)
DTJ_HANDLE(dt_kvstore)
DTJ_HANDLE(dt_data_loader)
DTJ_HANDLE(dt_trainer)

/* ---- scalar out-parameters: one-element Java arrays ---------------- */
%define DTJ_OUT(CTYPE, NAME, JNIARRAY, JARRAY, JELEM, REGION)
%typemap(jni) CTYPE *NAME "JNIARRAY"
%typemap(jtype) CTYPE *NAME "JARRAY"
%typemap(jstype) CTYPE *NAME "JARRAY"
%typemap(javain) CTYPE *NAME "$javainput"
%typemap(in) CTYPE *NAME (CTYPE value) %{
  memset(&value, 0, sizeof(value));
  if ($input != NULL && (*jenv)->GetArrayLength(jenv, $input) < 1) {
    dtj_throw_java(jenv, "java/lang/IllegalArgumentException", "disttrain: out array must have one element");
    return $null;
  }
  $1 = $input != NULL ? &value : NULL;
%}
%typemap(argout) CTYPE *NAME %{
  if ($input != NULL) {
    JELEM element = (JELEM)value$argnum;
    (*jenv)->Set##REGION##ArrayRegion(jenv, $input, 0, 1, &element);
  }
%}
%enddef

DTJ_OUT(size_t, out, jlongArray, long[], jlong, Long)
DTJ_OUT(size_t, out_index, jlongArray, long[], jlong, Long)
DTJ_OUT(size_t, out_length, jlongArray, long[], jlong, Long)
DTJ_OUT(int32_t, out, jintArray, int[], jint, Int)
DTJ_OUT(int32_t, out_count, jintArray, int[], jint, Int)
DTJ_OUT(int32_t, out_has_batch, jintArray, int[], jint, Int)
DTJ_OUT(int64_t, out, jlongArray, long[], jlong, Long)
DTJ_OUT(int64_t, out_correct, jlongArray, long[], jlong, Long)
DTJ_OUT(int64_t, out_bytes_sent, jlongArray, long[], jlong, Long)
DTJ_OUT(int64_t, out_bytes_received, jlongArray, long[], jlong, Long)
DTJ_OUT(int32_t, out_joined, jintArray, int[], jint, Int)
DTJ_OUT(int32_t, out_admitted, jintArray, int[], jint, Int)
DTJ_OUT(int32_t, local_rank, jintArray, int[], jint, Int)
DTJ_OUT(int32_t, local_size, jintArray, int[], jint, Int)
DTJ_OUT(int64_t, out_rounds_before, jlongArray, long[], jlong, Long)
DTJ_OUT(double, out, jdoubleArray, double[], jdouble, Double)
DTJ_OUT(double, out_loss, jdoubleArray, double[], jdouble, Double)
DTJ_OUT(double, out_accuracy, jdoubleArray, double[], jdouble, Double)
DTJ_OUT(dt_device_type, out, jintArray, int[], jint, Int)
DTJ_OUT(dt_dtype, out, jintArray, int[], jint, Int)
DTJ_OUT(dt_role, out, jintArray, int[], jint, Int)

/* Static or object-owned text: copied into a Java String at once. */
%typemap(jni) const char **out "jobjectArray"
%typemap(jtype) const char **out "String[]"
%typemap(jstype) const char **out "String[]"
%typemap(javain) const char **out "$javainput"
%typemap(in) const char **out (const char *text = NULL) %{
  if ($input == NULL || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    dtj_throw_java(jenv, "java/lang/IllegalArgumentException", "disttrain: out array must have one element");
    return $null;
  }
  $1 = ($1_ltype)&text;
%}
%typemap(argout) const char **out %{
  if (text$argnum != NULL) {
    jstring s = (*jenv)->NewStringUTF(jenv, text$argnum);
    if (s != NULL) (*jenv)->SetObjectArrayElement(jenv, $input, 0, s);
  }
%}

/* Text the binding allocated (JSON); freed after the copy into Java. */
%typemap(jni) char **out_json "jobjectArray"
%typemap(jtype) char **out_json "String[]"
%typemap(jstype) char **out_json "String[]"
%typemap(javain) char **out_json "$javainput"
%typemap(in) char **out_json (char *text = NULL) %{
  if ($input == NULL || (*jenv)->GetArrayLength(jenv, $input) < 1) {
    dtj_throw_java(jenv, "java/lang/IllegalArgumentException", "disttrain: out array must have one element");
    return $null;
  }
  $1 = &text;
%}
%typemap(argout) char **out_json %{
  if (text$argnum != NULL) {
    jstring s = (*jenv)->NewStringUTF(jenv, text$argnum);
    if (s != NULL) (*jenv)->SetObjectArrayElement(jenv, $input, 0, s);
  }
%}
%typemap(freearg) char **out_json %{ free(text$argnum); %}

/* ---- lists of keys and names ------------------------------------------ */
%typemap(jni) const uint64_t *keys "jlongArray"
%typemap(jtype) const uint64_t *keys "long[]"
%typemap(jstype) const uint64_t *keys "long[]"
%typemap(javain) const uint64_t *keys "$javainput"
%typemap(in) const uint64_t *keys (jlong small[DTJ_SMALL], jlong *all = NULL) %{
  $1 = NULL;
  if ($input != NULL) {
    jsize n = (*jenv)->GetArrayLength(jenv, $input);
    if (n <= DTJ_SMALL) {
      (*jenv)->GetLongArrayRegion(jenv, $input, 0, n, small);
      $1 = (uint64_t *)small;
    } else {
      all = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
      if (all == NULL) return $null;
      $1 = (uint64_t *)all;
    }
  }
%}
%typemap(freearg) const uint64_t *keys %{
  if (all$argnum != NULL) (*jenv)->ReleaseLongArrayElements(jenv, $input, all$argnum, JNI_ABORT);
%}

%typemap(jni) const char *const * "jobjectArray"
%typemap(jtype) const char *const * "String[]"
%typemap(jstype) const char *const * "String[]"
%typemap(javain) const char *const * "$javainput"
%typemap(in) const char *const * (dtj_strings strings) %{
  if (!dtj_strings_get(jenv, $input, &strings)) return $null;
  $1 = ($1_ltype)strings.items;
%}
%typemap(freearg) const char *const * %{ dtj_strings_release(jenv, &strings$argnum); %}

/* ---- shapes and integer lists: (pointer, count) from one long[] ------- */
%typemap(jni) (const int64_t *dims, size_t ndim), (const int64_t *values, size_t count) "jlongArray"
%typemap(jtype) (const int64_t *dims, size_t ndim), (const int64_t *values, size_t count) "long[]"
%typemap(jstype) (const int64_t *dims, size_t ndim), (const int64_t *values, size_t count) "long[]"
%typemap(javain) (const int64_t *dims, size_t ndim), (const int64_t *values, size_t count) "$javainput"
%typemap(in) (const int64_t *dims, size_t ndim) (jlong *elements = NULL),
              (const int64_t *values, size_t count) (jlong *elements = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
    elements = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (elements == NULL) return $null;
    $1 = (int64_t *)elements;
  }
%}
%typemap(freearg) (const int64_t *dims, size_t ndim), (const int64_t *values, size_t count) %{
  if (elements$argnum != NULL) (*jenv)->ReleaseLongArrayElements(jenv, $input, elements$argnum, JNI_ABORT);
%}

/* dt_ndarray_shape: capacity is the Java array's length, checked in C. */
%typemap(jni) (int64_t *out_dims, size_t capacity) "jlongArray"
%typemap(jtype) (int64_t *out_dims, size_t capacity) "long[]"
%typemap(jstype) (int64_t *out_dims, size_t capacity) "long[]"
%typemap(javain) (int64_t *out_dims, size_t capacity) "$javainput"
%typemap(in) (int64_t *out_dims, size_t capacity) (jlong *elements = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
    elements = (*jenv)->GetLongArrayElements(jenv, $input, NULL);
    if (elements == NULL) return $null;
    $1 = (int64_t *)elements;
  }
%}
%typemap(freearg) (int64_t *out_dims, size_t capacity) %{
  if (elements$argnum != NULL) (*jenv)->ReleaseLongArrayElements(jenv, $input, elements$argnum, 0);
%}

/* The raw dt_*_to_json buffer: capacity is the byte[]'s length. */
%typemap(jni) (char *buf, size_t capacity) "jbyteArray"
%typemap(jtype) (char *buf, size_t capacity) "byte[]"
%typemap(jstype) (char *buf, size_t capacity) "byte[]"
%typemap(javain) (char *buf, size_t capacity) "$javainput"
%typemap(in) (char *buf, size_t capacity) (jbyte *elements = NULL) %{
  $1 = NULL;
  $2 = 0;
  if ($input != NULL) {
    $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
    elements = (*jenv)->GetByteArrayElements(jenv, $input, NULL);
    if (elements == NULL) return $null;
    $1 = (char *)elements;
  }
%}
%typemap(freearg) (char *buf, size_t capacity) %{
  if (elements$argnum != NULL) (*jenv)->ReleaseByteArrayElements(jenv, $input, elements$argnum, 0);
%}

/* Extra contexts of a trainer: (pointer, count) from one long[]. */
%typemap(jni) (const dt_context *const *extra_contexts, size_t num_extra_contexts) "jlongArray"
%typemap(jtype) (const dt_context *const *extra_contexts, size_t num_extra_contexts) "long[]"
%typemap(jstype) (const dt_context *const *extra_contexts, size_t num_extra_contexts) "long[]"
%typemap(javain) (const dt_context *const *extra_contexts, size_t num_extra_contexts) "$javainput"
%typemap(in) (const dt_context *const *extra_contexts, size_t num_extra_contexts) (dtj_ptrs ptrs) %{
  if (!dtj_ptrs_get(jenv, $input, &ptrs)) return $null;
  $1 = ($1_ltype)ptrs.items;
  $2 = $input != NULL ? (size_t)(*jenv)->GetArrayLength(jenv, $input) : 0;
%}
%typemap(freearg) (const dt_context *const *extra_contexts, size_t num_extra_contexts) %{
  dtj_ptrs_release(&ptrs$argnum);
%}
%typemap(argout) (const dt_context *const *extra_contexts, size_t num_extra_contexts) ""

/* ---- bulk data --------------------------------------------------------- */
/* Direct buffers: the byte count is the buffer's capacity in bytes. */
%typemap(jni) (const void *src, size_t nbytes), (void *dst, size_t nbytes) "jobject"
%typemap(jtype) (const void *src, size_t nbytes), (void *dst, size_t nbytes) "java.nio.Buffer"
%typemap(jstype) (const void *src, size_t nbytes), (void *dst, size_t nbytes) "java.nio.Buffer"
%typemap(javain) (const void *src, size_t nbytes), (void *dst, size_t nbytes) "$javainput"
%typemap(in) (const void *src, size_t nbytes) (void *address = NULL),
              (void *dst, size_t nbytes) (void *address = NULL) %{
  if (!dtj_buffer_get(jenv, $input, &address, &$2)) return $null;
  $1 = address;
%}

/* Primitive arrays, through the dtj_ndarray_copy_{from,to}_* helpers below:
 * the element count is the Java array's length. The array is pinned or
 * copied only for the duration of the call. */
%define DTJ_PRIMITIVE_COPY(NAME, CTYPE, JNIARRAY, JARRAY)
%typemap(jni) (const CTYPE *src, size_t count), (CTYPE *dst, size_t count) "JNIARRAY"
%typemap(jtype) (const CTYPE *src, size_t count), (CTYPE *dst, size_t count) "JARRAY"
%typemap(jstype) (const CTYPE *src, size_t count), (CTYPE *dst, size_t count) "JARRAY"
%typemap(javain) (const CTYPE *src, size_t count), (CTYPE *dst, size_t count) "$javainput"
%typemap(in) (const CTYPE *src, size_t count) (void *elements = NULL),
              (CTYPE *dst, size_t count) (void *elements = NULL) %{
  if ($input == NULL) {
    dtj_throw_java(jenv, "java/lang/NullPointerException", "disttrain: null array");
    return $null;
  }
  $2 = (size_t)(*jenv)->GetArrayLength(jenv, $input);
  elements = (*jenv)->GetPrimitiveArrayCritical(jenv, $input, NULL);
  if (elements == NULL) return $null;
  $1 = ($1_ltype)elements;
%}
%typemap(freearg) (const CTYPE *src, size_t count) %{
  if (elements$argnum != NULL) (*jenv)->ReleasePrimitiveArrayCritical(jenv, $input, elements$argnum, JNI_ABORT);
%}
%typemap(freearg) (CTYPE *dst, size_t count) %{
  if (elements$argnum != NULL) (*jenv)->ReleasePrimitiveArrayCritical(jenv, $input, elements$argnum, 0);
%}
%rename("%s") dtj_ndarray_copy_from_##NAME;
%rename("%s") dtj_ndarray_copy_to_##NAME;
%inline %{
dt_status dtj_ndarray_copy_from_##NAME(dt_ndarray *arr, const CTYPE *src, size_t count) {
  if (count > SIZE_MAX / sizeof(CTYPE)) return dtj_fail(DT_ERR_INVALID_ARGUMENT, "dt_ndarray_copy_from_host: array too large");
  return dt_ndarray_copy_from_host(arr, src, count * sizeof(CTYPE));
}
dt_status dtj_ndarray_copy_to_##NAME(CTYPE *dst, size_t count, const dt_ndarray *arr) {
  if (count > SIZE_MAX / sizeof(CTYPE)) return dtj_fail(DT_ERR_INVALID_ARGUMENT, "dt_ndarray_copy_to_host: array too large");
  return dt_ndarray_copy_to_host(dst, count * sizeof(CTYPE), arr);
}
%}
%enddef

/* ---- helpers the idiomatic classes call instead of the raw functions
 * whose arguments do not map onto one Java value each ------------------ */
%rename("%s") dtj_binding_version;
%rename("%s") dtj_net_to_json;
%rename("%s") dtj_optimizer_to_json;
%rename("%s") dtj_trainer_create;
%rename("%s") dtj_trainer_fit;
%rename("%s") dtj_kvstore_create_ex;
%rename("%s") dtj_node_run;
%rename("%s") dtj_kvstore_hand_over_state;

%inline %{
/* The DT_VERSION_NUMBER this glue was compiled against. */
uint32_t dtj_binding_version(void) { return DT_VERSION_NUMBER; }

/* Runs the two-call buffer protocol of dt_*_to_json into a malloc'd text. */
dt_status dtj_net_to_json(char **out_json, const dt_net *net) {
  size_t length = 0;
  char *text;
  dt_status status = dt_net_to_json(NULL, 0, &length, net);
  if (status != DT_OK) return status;
  text = (char *)malloc(length);
  if (text == NULL) return dtj_fail(DT_ERR_OUT_OF_MEMORY, "dt_net_to_json: no memory for the JSON text");
  status = dt_net_to_json(text, length, &length, net);
  if (status != DT_OK) {
    free(text);
    return status;
  }
  *out_json = text;
  return DT_OK;
}

dt_status dtj_optimizer_to_json(char **out_json, const dt_optimizer *opt) {
  size_t length = 0;
  char *text;
  dt_status status = dt_optimizer_to_json(NULL, 0, &length, opt);
  if (status != DT_OK) return status;
  text = (char *)malloc(length);
  if (text == NULL) return dtj_fail(DT_ERR_OUT_OF_MEMORY, "dt_optimizer_to_json: no memory for the JSON text");
  status = dt_optimizer_to_json(text, length, &length, opt);
  if (status != DT_OK) {
    free(text);
    return status;
  }
  *out_json = text;
  return DT_OK;
}

/* dt_trainer_create with the option struct built here: its context list
 * must point at memory that lives through the call, which a Java-side
 * struct proxy cannot guarantee. The sync fields are dt_trainer_options's
 * (0: the library's default); a negative chunk size, which size_t cannot
 * hold, is refused here. */
dt_status dtj_trainer_create(dt_trainer **out, dt_net *net, const dt_optimizer *opt,
                             dt_kvstore *kv, int32_t update_on_kvstore,
                             const dt_context *const *extra_contexts, size_t num_extra_contexts,
                             int32_t sync_mode, int64_t partial_chunk_elements, int32_t sparse_topk,
                             double sparse_value, int32_t sparse_no_accumulation) {
  dt_trainer_options options;
  const dt_status init = dt_trainer_options_init(&options, sizeof options);
  if (init != DT_OK) return init;
  if (partial_chunk_elements < 0) {
    return dtj_fail(DT_ERR_INVALID_ARGUMENT, "dt_trainer_create: partialChunkElements must not be negative");
  }
  options.update_on_kvstore = update_on_kvstore;
  options.extra_contexts = extra_contexts;
  options.num_extra_contexts = num_extra_contexts;
  options.sync_mode = (dt_sync_mode)sync_mode;
  options.partial_chunk_elements = (size_t)partial_chunk_elements;
  options.sparse_topk = sparse_topk;
  options.sparse_value = sparse_value;
  options.sparse_no_accumulation = sparse_no_accumulation;
  return dt_trainer_create(out, net, opt, kv, &options);
}

/* dt_trainer_fit with the option struct built here, so its path strings
 * are the call's own (a struct proxy would copy and leak them). */
dt_status dtj_trainer_fit(dt_trainer *trainer, dt_data_loader *train, dt_data_loader *test,
                          int32_t epochs, const char *metrics_path,
                          const char *checkpoint_path, int32_t progress) {
  dt_fit_options options;
  const dt_status init = dt_fit_options_init(&options, sizeof options);
  if (init != DT_OK) return init;
  options.epochs = epochs;
  options.metrics_path = metrics_path;
  options.checkpoint_path = checkpoint_path;
  options.progress = progress;
  return dt_trainer_fit(trainer, train, test, &options);
}

/* options->scheduler_host is a pointer the struct would keep: set here, for
 * the duration of the call only (NULL: the environment decides). */
/* The state as a byte[] (the raw call takes a direct buffer). Not through
 * the pinned-array typemaps: the hand-over can wait for seconds, and a
 * critical region that long would hold off the collector. */
dt_status dtj_kvstore_hand_over_state(size_t *out_length, dt_kvstore *kv, char *buf, size_t capacity) {
  return dt_kvstore_hand_over_state(out_length, kv, buf, capacity);
}

dt_status dtj_kvstore_create_ex(dt_kvstore **out, const char *type, const dt_kvstore_options *options,
                                const char *scheduler_host) {
  dt_kvstore_options copy;
  if (options == NULL) return dt_kvstore_create_ex(out, type, NULL);
  copy = *options;
  copy.scheduler_host = scheduler_host;
  return dt_kvstore_create_ex(out, type, &copy);
}

dt_status dtj_node_run(const dt_kvstore_options *options, const char *scheduler_host) {
  dt_kvstore_options copy;
  if (options == NULL) return dt_node_run(NULL);
  copy = *options;
  copy.scheduler_host = scheduler_host;
  return dt_node_run(&copy);
}

%}

DTJ_PRIMITIVE_COPY(floats, float, jfloatArray, float[])
DTJ_PRIMITIVE_COPY(doubles, double, jdoubleArray, double[])
DTJ_PRIMITIVE_COPY(ints, int32_t, jintArray, int[])
DTJ_PRIMITIVE_COPY(longs, int64_t, jlongArray, long[])
DTJ_PRIMITIVE_COPY(bytes, signed char, jbyteArray, byte[])
DTJ_PRIMITIVE_COPY(shorts, int16_t, jshortArray, short[])

/* Struct members that hold pointers would dangle or leak through a proxy;
 * the helpers above set them inside the call instead. */
%ignore dt_trainer_options::extra_contexts;
%ignore dt_fit_options::metrics_path;
%ignore dt_fit_options::checkpoint_path;
%ignore dt_kvstore_options::scheduler_host;
