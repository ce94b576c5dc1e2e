/*
 * RecordIO loaders: the set tests/tools/write_recordio.py writes by the
 * format's documented layout (a CTest fixture; DT_RECORDIO_DIR names its
 * folder): PNG and JPEG records, a label vector, a split record, found
 * through the .idx beside the .rec, a named one, or a walk of the .rec;
 * labels and pixels of whole batches, resizing, num_parts/part_index and
 * shuffling within a part; then files written here byte by byte that fail
 * naming the file and byte offset, and every bad argument.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"

#define RECORDS 8
#define SIDE 8
#define PLANE (SIDE * SIDE)
#define SAMPLE (3 * PLANE)

static const float kZero[3] = {0.0f, 0.0f, 0.0f};
static const float kOne[3] = {1.0f, 1.0f, 1.0f};

static char g_rec[512];
static char g_idx[512];
static float g_batch[RECORDS * SAMPLE];
static int32_t g_labels[RECORDS];

static int last_error_has(const char *text) { return strstr(dt_last_error(), text) != NULL; }

static dt_data_loader_options plain(int64_t batch) {
  dt_data_loader_options o;
  dt_data_loader_options_init(&o, sizeof o);
  o.batch_size = batch;
  o.shuffle = 0;
  o.channel_mean = kZero;
  o.channel_std = kOne;
  o.num_channel_stats = 3;
  return o;
}

/* The next batch into g_batch/g_labels, its (B, C, H, W) into dims;
 * returns B, 0 at the end of the epoch or on an error (status in *status). */
static int64_t next_batch(dt_data_loader *loader, int64_t dims[4], dt_status *status) {
  dt_ndarray *d = NULL, *l = NULL;
  int32_t has = 0;
  size_t bytes = 0;
  *status = dt_data_loader_next(&d, &l, &has, loader);
  if (*status != DT_OK || !has) return 0;
  CHECK_OK(dt_ndarray_shape(dims, 4, d));
  CHECK_OK(dt_ndarray_nbytes(&bytes, d));
  if (CHECK(bytes <= sizeof g_batch)) CHECK_OK(dt_ndarray_copy_to_host(g_batch, bytes, d));
  if (CHECK(dims[0] <= RECORDS)) {
    CHECK_OK(dt_ndarray_copy_to_host(g_labels, (size_t)dims[0] * sizeof(int32_t), l));
  }
  dt_ndarray_free(d);
  dt_ndarray_free(l);
  return dims[0];
}

/* Record i's colour, channel c, as the writer made it. */
static float colour(int i, int c) {
  const int values[3] = {40 * i % 256, (255 - 20 * i) % 256, 7 * i % 256};
  return (float)values[c] / 255.0f;
}

/* Whether sample s of g_batch (h x w) is record i's solid colour: exact for
 * PNG, within 3 levels for JPEG at quality 100. */
static int is_record(int s, int i, int64_t h, int64_t w) {
  const float tolerance = i < 4 ? 1e-6f : 3.0f / 255.0f;
  int64_t c, p;
  for (c = 0; c < 3; c++) {
    for (p = 0; p < h * w; p++) {
      if (fabsf(g_batch[(s * 3 + c) * h * w + p] - colour(i, c)) > tolerance) return 0;
    }
  }
  return 1;
}

/* Loads the whole set in one batch (records in file order) and checks it. */
static void check_whole_set(const char *idx_path, int64_t h, int64_t w) {
  static const int32_t kClasses[RECORDS] = {0, 1, 2, 3, 0, 1, 2, 3};
  dt_data_loader_options o = plain(RECORDS);
  dt_data_loader *loader = NULL;
  int64_t dims[4] = {0, 0, 0, 0};
  dt_status status = DT_OK;
  size_t n = 0;
  int i;
  if (!CHECK_OK(dt_data_loader_create_recordio(&loader, g_rec, idx_path, h, w, &o))) return;
  CHECK_OK(dt_data_loader_num_samples(&n, loader));
  CHECK_EQ_U64(n, RECORDS);
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_EQ_I64(next_batch(loader, dims, &status), RECORDS);
  CHECK_OK(status);
  CHECK(dims[1] == 3 && dims[2] == h && dims[3] == w);
  for (i = 0; i < RECORDS; i++) {
    CHECK_EQ_I64(g_labels[i], kClasses[i]);
    CHECK(is_record(i, i, h, w));
  }
  CHECK_EQ_I64(next_batch(loader, dims, &status), 0);
  CHECK_OK(status);
  dt_data_loader_free(loader);
}

/* num_parts 2: part 1 is records 4..7; shuffled, the same four in an order
 * that repeats with the seed. */
static void check_parts(void) {
  dt_data_loader_options o = plain(4);
  dt_data_loader *loader = NULL;
  int64_t dims[4] = {0, 0, 0, 0};
  dt_status status = DT_OK;
  int seen[4] = {0, 0, 0, 0};
  int s, i;
  o.num_parts = 2;
  o.part_index = 1;
  o.shuffle = 1;
  o.seed = 7;
  if (!CHECK_OK(dt_data_loader_create_recordio(&loader, g_rec, NULL, SIDE, SIDE, &o))) return;
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_EQ_I64(next_batch(loader, dims, &status), 4);
  for (s = 0; s < 4; s++) {
    for (i = 4; i < RECORDS; i++) {
      if (is_record(s, i, SIDE, SIDE)) {
        seen[i - 4]++;
        CHECK_EQ_I64(g_labels[s], i == 5 ? 1 : i % 4);
      }
    }
  }
  for (i = 0; i < 4; i++) CHECK_EQ_I64(seen[i], 1);
  dt_data_loader_free(loader);
}

/* Writes `n` bytes to TMPDIR/name; its path into path. */
static int write_bytes(char *path, size_t cap, const char *name, const unsigned char *bytes, size_t n) {
  const char *tmp = getenv("TMPDIR");
  FILE *f;
  snprintf(path, cap, "%s/%s", tmp != NULL ? tmp : "/tmp", name);
  f = fopen(path, "wb");
  if (f == NULL) return 0;
  fwrite(bytes, 1, n, f);
  return fclose(f) == 0;
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

/* One whole record: a header with `flag` and `label`, then 4 bytes that are
 * no image. Returns the file's size. */
static size_t record_file(unsigned char *out, uint32_t flag, float label) {
  uint32_t bits;
  memset(out, 0, 8 + 28);
  put_u32(out, 0xced7230au);
  put_u32(out + 4, 28);
  put_u32(out + 8, flag);
  memcpy(&bits, &label, sizeof bits);
  put_u32(out + 12, bits);
  memcpy(out + 32, "abcd", 4);
  return 8 + 28;
}

/* A file of one record with this header: the loader is made, and its first
 * batch fails with DT_ERR_IO naming the file, the record's offset and `what`. */
static void check_bad_record(const char *name, uint32_t flag, float label, const char *what) {
  unsigned char bytes[64];
  char path[512];
  dt_data_loader_options o = plain(1);
  dt_data_loader *loader = NULL;
  int64_t dims[4];
  dt_status status = DT_OK;
  const size_t n = record_file(bytes, flag, label);
  if (!CHECK(write_bytes(path, sizeof path, name, bytes, n)) ||
      !CHECK_OK(dt_data_loader_create_recordio(&loader, path, "", SIDE, SIDE, &o))) {
    return;
  }
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_EQ_I64(next_batch(loader, dims, &status), 0);
  CHECK_EQ_I64(status, DT_ERR_IO);
  CHECK(last_error_has(path) && last_error_has("record at byte offset 0") && last_error_has(what));
  dt_data_loader_free(loader);
}

static void check_bad_files(void) {
  unsigned char bytes[64];
  char path[512];
  dt_data_loader_options o = plain(1);
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  size_t n;

  /* A bad magic at byte 0, found walking the file here. */
  n = record_file(bytes, 0, 1.0f);
  bytes[0] ^= 0xFF;
  if (CHECK(write_bytes(path, sizeof path, "bad_magic.rec", bytes, n))) {
    CHECK_STATUS(dt_data_loader_create_recordio(&loader, path, "", SIDE, SIDE, &o), DT_ERR_IO);
    CHECK(last_error_has(path) && last_error_has("byte offset 0") && last_error_has("magic"));
  }
  /* A length past the end of the file. */
  n = record_file(bytes, 0, 1.0f);
  put_u32(bytes + 4, 1000);
  if (CHECK(write_bytes(path, sizeof path, "long.rec", bytes, n))) {
    CHECK_STATUS(dt_data_loader_create_recordio(&loader, path, "", SIDE, SIDE, &o), DT_ERR_IO);
    CHECK(last_error_has(path) && last_error_has("truncated"));
  }
  /* A label that is not a class, and more labels than the record holds: the
   * loader is made, its first batch fails naming the record. */
  check_bad_record("half_label.rec", 0, 2.5f, "label 2.5");
  check_bad_record("many_labels.rec", 100, 0.0f, "100 labels");
  /* An index line that is no "<key>\t<offset>". */
  if (CHECK(write_bytes(path, sizeof path, "bad.idx", (const unsigned char *)"0\t0\n1 x\n", 8))) {
    CHECK_STATUS(dt_data_loader_create_recordio(&loader, g_rec, path, SIDE, SIDE, &o), DT_ERR_IO);
    CHECK(last_error_has(path) && last_error_has("line 2"));
  }
  CHECK_STATUS(dt_data_loader_create_recordio(&loader, "/nonexistent/x.rec", NULL, SIDE, SIDE, &o),
               DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create_recordio(&loader, g_rec, "/nonexistent/x.idx", SIDE, SIDE, &o),
               DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create_recordio(&loader, NULL, NULL, SIDE, SIDE, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_recordio(NULL, g_rec, NULL, SIDE, SIDE, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_recordio(&loader, g_rec, NULL, 0, SIDE, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_recordio(&loader, g_rec, NULL, SIDE, 65501, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(loader == CAPI_SENTINEL(dt_data_loader));
}

int main(void) {
  const char *dir = getenv("DT_RECORDIO_DIR");
  if (dir == NULL) {
    fprintf(stderr, "DT_RECORDIO_DIR must name the folder tests/tools/write_recordio.py wrote\n");
    return 1;
  }
  snprintf(g_rec, sizeof g_rec, "%s/small.rec", dir);
  snprintf(g_idx, sizeof g_idx, "%s/small.idx", dir);
  check_whole_set(NULL, SIDE, SIDE); /* small.idx, found beside small.rec */
  check_whole_set(g_idx, SIDE, SIDE);
  check_whole_set("", SIDE, SIDE); /* the .rec walked */
  check_whole_set(NULL, 3, 5);     /* solid colours stay solid when resized */
  check_parts();
  check_bad_files();
  return capi_finish();
}
