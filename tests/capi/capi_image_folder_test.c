/*
 * Image-folder loaders: PNG files written here by hand (stored deflate, so
 * independent of the library's decoder), class folders as labels, batches of
 * (B, 3, H, W) resized and normalised with ImageNet's statistics or the
 * caller's, the random resized crop that repeats with the seed, every bad
 * argument and folder, a truncated file that fails its batch naming it, and
 * an older caller's shorter struct.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "capi_check.h"

#define SIDE 4
#define PLANE (SIDE * SIDE)
#define SAMPLE (3 * PLANE)

static char g_dir[512];

static const float kZero[3] = {0.0f, 0.0f, 0.0f};
static const float kOne[3] = {1.0f, 1.0f, 1.0f};

static int last_error_has(const char *text) {
  return strstr(dt_last_error(), text) != NULL;
}

/* --- a minimal PNG writer ------------------------------------------------- */

static uint32_t crc32_of(const unsigned char *bytes, size_t n, uint32_t crc) {
  size_t i;
  int k;
  crc = ~crc;
  for (i = 0; i < n; i++) {
    crc ^= bytes[i];
    for (k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* Appends chunk `type` with `n` data bytes at out + *len. */
static void chunk(unsigned char *out, size_t *len, const char *type, const unsigned char *data, size_t n) {
  unsigned char *start = out + *len;
  put32(start, (uint32_t)n);
  memcpy(start + 4, type, 4);
  if (n > 0) memcpy(start + 8, data, n);
  put32(start + 8 + n, crc32_of(start + 4, n + 4, 0));
  *len += n + 12;
}

/* A width x height PNG of `channels` (1 grey, 3 RGB, 4 RGBA) interleaved
 * bytes, written as one stored (uncompressed) deflate block; the last
 * `cut` bytes left off. */
static int write_png(const char *path, int width, int height, int channels, const unsigned char *pixels,
                     size_t cut) {
  static unsigned char out[4096], idat[2048];
  unsigned char ihdr[13];
  const size_t row = (size_t)width * (size_t)channels;
  const size_t raw = (row + 1) * (size_t)height;
  size_t len = 8, n = 0, i;
  uint32_t a = 1, b = 0;
  int y;
  FILE *f;
  static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (raw + 11 > sizeof idat) return 0;
  memcpy(out, signature, 8);
  put32(ihdr, (uint32_t)width);
  put32(ihdr + 4, (uint32_t)height);
  ihdr[8] = 8;
  ihdr[9] = channels == 1 ? 0 : channels == 3 ? 2 : 6;
  ihdr[10] = ihdr[11] = ihdr[12] = 0;
  chunk(out, &len, "IHDR", ihdr, sizeof ihdr);
  idat[n++] = 0x78;
  idat[n++] = 0x01;
  idat[n++] = 0x01; /* final block, stored */
  idat[n++] = (unsigned char)(raw & 0xFF);
  idat[n++] = (unsigned char)(raw >> 8);
  idat[n++] = (unsigned char)(~raw & 0xFF);
  idat[n++] = (unsigned char)((~raw >> 8) & 0xFF);
  for (y = 0; y < height; y++) {
    idat[n++] = 0; /* filter: none */
    memcpy(idat + n, pixels + (size_t)y * row, row);
    n += row;
  }
  for (i = 7; i < n; i++) {
    a = (a + idat[i]) % 65521u;
    b = (b + a) % 65521u;
  }
  put32(idat + n, (b << 16) | a);
  n += 4;
  chunk(out, &len, "IDAT", idat, n);
  chunk(out, &len, "IEND", NULL, 0);
  f = fopen(path, "wb");
  if (f == NULL) return 0;
  n = fwrite(out, 1, len - cut, f);
  return fclose(f) == 0 && n == len - cut;
}

static void path_in(char *out, size_t size, const char *relative) {
  snprintf(out, size, "%s/%s", g_dir, relative);
}

static int make_dir(const char *relative) {
  char path[700];
  path_in(path, sizeof path, relative);
  return mkdir(path, 0700) == 0;
}

static int write_file(const char *relative, const char *text) {
  char path[700];
  FILE *f;
  path_in(path, sizeof path, relative);
  f = fopen(path, "wb");
  if (f == NULL) return 0;
  fputs(text, f);
  return fclose(f) == 0;
}

/* --- the tree --------------------------------------------------------------
 * ok/ants/a.png  2x2 RGB: red 0 100 / 200 40, green red + 10, blue 7
 * ok/ants/b.png  3x3 grey 90
 * ok/bees/c.png  2x2 RGBA 50 60 70 with alpha 0 (dropped)
 * ok/README      ignored                                                  */

static const unsigned char kA[12] = {0, 10, 7, 100, 110, 7, 200, 210, 7, 40, 50, 7};

static int write_tree(void) {
  unsigned char grey[9], rgba[16];
  char path[700];
  int i, ok = 1;
  memset(grey, 90, sizeof grey);
  for (i = 0; i < 4; i++) {
    rgba[i * 4] = 50;
    rgba[i * 4 + 1] = 60;
    rgba[i * 4 + 2] = 70;
    rgba[i * 4 + 3] = 0;
  }
  ok &= make_dir("ok") && make_dir("ok/ants") && make_dir("ok/bees");
  path_in(path, sizeof path, "ok/ants/a.png");
  ok &= write_png(path, 2, 2, 3, kA, 0);
  path_in(path, sizeof path, "ok/ants/b.png");
  ok &= write_png(path, 3, 3, 1, grey, 0);
  path_in(path, sizeof path, "ok/bees/c.png");
  ok &= write_png(path, 2, 2, 4, rgba, 0);
  ok &= write_file("ok/README", "not a class");
  return ok;
}

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

/* The next batch's data and labels (up to 4 samples); returns its size. */
static int64_t next_batch(dt_data_loader *loader, float *data, int32_t *labels) {
  dt_ndarray *d = NULL, *l = NULL;
  int32_t has = 0;
  int64_t dims[4] = {0, 0, 0, 0};
  size_t bytes = 0;
  if (!CHECK_OK(dt_data_loader_next(&d, &l, &has, loader)) || !has) return 0;
  CHECK_OK(dt_ndarray_shape(dims, 4, d));
  CHECK(dims[1] == 3 && dims[2] == SIDE && dims[3] == SIDE);
  CHECK_OK(dt_ndarray_nbytes(&bytes, d));
  if (CHECK(bytes <= 4 * SAMPLE * sizeof(float))) CHECK_OK(dt_ndarray_copy_to_host(data, bytes, d));
  CHECK_OK(dt_ndarray_copy_to_host(labels, (size_t)dims[0] * sizeof(int32_t), l));
  dt_ndarray_free(d);
  dt_ndarray_free(l);
  return dims[0];
}

static float g_batch[4 * SAMPLE];
static float g_other[4 * SAMPLE];
static int32_t g_labels[4];

static int all_equal(const float *plane, float value) {
  int i;
  for (i = 0; i < PLANE; i++)
    if (fabsf(plane[i] - value) > 1e-6f) return 0;
  return 1;
}

static void test_new_option_defaults(void) {
  dt_data_loader_options o;
  memset(&o, 0xAB, sizeof o);
  CHECK_OK(dt_data_loader_options_init(&o, sizeof o));
  CHECK_EQ_I64(o.random_resized_crop, 0);
  CHECK(o.random_resized_crop_min_scale == 0.0f && o.random_resized_crop_max_scale == 0.0f);
  CHECK(o.random_resized_crop_min_ratio == 0.0f && o.random_resized_crop_max_ratio == 0.0f);
}

static void test_classes_resize_and_rgb(void) {
  /* a.png's red plane upsampled 2x2 -> 4x4 (pixel centres aligned). */
  static const float red[PLANE] = {0, 25, 75, 100, 50, 59, 76, 85, 150, 126, 79, 55, 200, 160, 80, 40};
  dt_data_loader *loader = NULL;
  dt_data_loader_options o = plain(2);
  char path[700];
  size_t n = 0;
  int i;
  path_in(path, sizeof path, "ok");
  if (!CHECK_OK(dt_data_loader_create_image_folder(&loader, path, SIDE, SIDE, &o))) return;
  CHECK_OK(dt_data_loader_num_samples(&n, loader));
  CHECK_EQ_U64(n, 3);
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_EQ_I64(next_batch(loader, g_batch, g_labels), 2);
  CHECK(g_labels[0] == 0 && g_labels[1] == 0);
  for (i = 0; i < PLANE; i++) CHECK(fabsf(g_batch[i] - red[i] / 255.0f) < 1e-6f);
  CHECK(fabsf(g_batch[PLANE] - 10.0f / 255.0f) < 1e-6f);
  CHECK(all_equal(g_batch + 2 * PLANE, 7.0f / 255.0f));
  /* The grey image: R = G = B. */
  for (i = 0; i < 3; i++) CHECK(all_equal(g_batch + SAMPLE + i * PLANE, 90.0f / 255.0f));
  CHECK_EQ_I64(next_batch(loader, g_batch, g_labels), 1);
  CHECK(g_labels[0] == 1);
  /* Alpha dropped, not composited. */
  CHECK(all_equal(g_batch, 50.0f / 255.0f) && all_equal(g_batch + PLANE, 60.0f / 255.0f) &&
        all_equal(g_batch + 2 * PLANE, 70.0f / 255.0f));
  CHECK_EQ_I64(next_batch(loader, g_batch, g_labels), 0);
  dt_data_loader_free(loader);
}

static void test_imagenet_statistics_by_default(void) {
  dt_data_loader *loader = NULL;
  dt_data_loader_options o;
  char path[700];
  path_in(path, sizeof path, "ok");
  dt_data_loader_options_init(&o, sizeof o);
  o.shuffle = 0;
  o.batch_size = 4;
  if (!CHECK_OK(dt_data_loader_create_image_folder(&loader, path, SIDE, SIDE, &o))) return;
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_EQ_I64(next_batch(loader, g_batch, g_labels), 3);
  CHECK(fabsf(g_batch[3] - (100.0f / 255.0f - 0.485f) / 0.229f) < 1e-5f);
  CHECK(all_equal(g_batch + 2 * SAMPLE + PLANE, (60.0f / 255.0f - 0.456f) / 0.224f));
  CHECK(all_equal(g_batch + 2 * SAMPLE + 2 * PLANE, (70.0f / 255.0f - 0.406f) / 0.225f));
  dt_data_loader_free(loader);
}

/* One epoch with the random resized crop into out. */
static int64_t cropped_epoch(float *out, uint64_t seed, int32_t epoch, size_t struct_size) {
  dt_data_loader *loader = NULL;
  dt_data_loader_options o = plain(4);
  char path[700];
  int64_t got = 0;
  path_in(path, sizeof path, "ok");
  o.seed = seed;
  o.random_resized_crop = 1;
  o.random_resized_crop_max_scale = 0.5f;
  o.struct_size = struct_size;
  if (!CHECK_OK(dt_data_loader_create_image_folder(&loader, path, SIDE, SIDE, &o))) return 0;
  CHECK_OK(dt_data_loader_start_epoch(loader, epoch));
  got = next_batch(loader, out, g_labels);
  dt_data_loader_free(loader);
  return got;
}

static void test_random_resized_crop_repeats_with_the_seed(void) {
  float plain_epoch[4 * SAMPLE];
  int differs_from_plain = 0, other_seed_differs = 0, i;
  uint64_t seed;
  CHECK_EQ_I64(cropped_epoch(g_batch, 5, 0, sizeof(dt_data_loader_options)), 3);
  CHECK_EQ_I64(cropped_epoch(g_other, 5, 0, sizeof(dt_data_loader_options)), 3);
  CHECK(memcmp(g_batch, g_other, 3 * SAMPLE * sizeof(float)) == 0);
  /* Flat images stay flat whatever the box; a.png's crops differ. */
  for (i = 0; i < 3; i++) CHECK(all_equal(g_batch + SAMPLE + i * PLANE, 90.0f / 255.0f));
  /* a.png is 2x2, so few boxes exist: some other seed draws another. */
  for (seed = 6; seed < 12 && !other_seed_differs; seed++) {
    CHECK(cropped_epoch(g_other, seed, 0, sizeof(dt_data_loader_options)) == 3);
    other_seed_differs = memcmp(g_batch, g_other, SAMPLE * sizeof(float)) != 0;
  }
  CHECK(other_seed_differs);
  /* At most half the area: never the whole of a.png resized. */
  CHECK(cropped_epoch(plain_epoch, 5, 1, offsetof(dt_data_loader_options, random_resized_crop)) == 3);
  for (i = 0; i < SAMPLE; i++) differs_from_plain += fabsf(plain_epoch[i] - g_batch[i]) > 1e-6f;
  CHECK(differs_from_plain > 0);
}

/* An older caller's struct ends before the random resized crop: garbage
 * there is never read. */
static void test_older_struct(void) {
  dt_data_loader *loader = NULL;
  dt_data_loader_options o = plain(4);
  const size_t end = offsetof(dt_data_loader_options, random_resized_crop);
  char path[700];
  path_in(path, sizeof path, "ok");
  memset((unsigned char *)&o + end, 0xAB, sizeof o - end);
  o.struct_size = end;
  if (CHECK_OK(dt_data_loader_create_image_folder(&loader, path, SIDE, SIDE, &o))) {
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_batch(loader, g_batch, g_labels), 3);
    CHECK(fabsf(g_batch[3] - 100.0f / 255.0f) < 1e-6f);
    dt_data_loader_free(loader);
  }
}

static void test_bad_arguments(void) {
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  dt_data_loader_options o;
  char path[700];
  int i;
  path_in(path, sizeof path, "ok");
  CHECK_STATUS(dt_data_loader_create_image_folder(NULL, path, 4, 4, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_image_folder(&loader, NULL, 4, 4, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_image_folder(&loader, path, 0, 4, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("height and width"));
  CHECK_STATUS(dt_data_loader_create_image_folder(&loader, path, 4, 65501, NULL), DT_ERR_INVALID_ARGUMENT);
  for (i = 0; i < 5; i++) {
    o = plain(2);
    o.random_resized_crop = 1;
    switch (i) {
      case 0: o.random_resized_crop = 2; break;
      case 1: o.random_resized_crop_min_scale = -0.5f; break;
      case 2: o.random_resized_crop_max_scale = 1.5f; break;
      case 3: o.random_resized_crop_min_ratio = 2.0f; break;
      default: o.random_resized_crop_min_scale = 0.9f; o.random_resized_crop_max_scale = 0.2f; break;
    }
    CHECK_STATUS(dt_data_loader_create_image_folder(&loader, path, 4, 4, &o), DT_ERR_INVALID_ARGUMENT);
    CHECK(loader == CAPI_SENTINEL(dt_data_loader));
  }
  /* MNIST's samples have no source images to crop from. */
  dt_data_loader_options_init(&o, sizeof o);
  o.random_resized_crop = 1;
  CHECK_STATUS2(dt_data_loader_create_mnist(&loader, NULL, "t10k", &o), DT_ERR_INVALID_ARGUMENT, DT_ERR_NOT_FOUND);
  CHECK(loader == CAPI_SENTINEL(dt_data_loader));
}

static void test_bad_folders_and_files(void) {
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  unsigned char pixels[12];
  char path[700], file[700];
  int32_t has = 0;
  dt_ndarray *d = NULL, *l = NULL;
  dt_data_loader_options o = plain(1);
  path_in(path, sizeof path, "missing");
  CHECK_STATUS(dt_data_loader_create_image_folder(&loader, path, 4, 4, NULL), DT_ERR_NOT_FOUND);
  CHECK(last_error_has(path));
  CHECK(make_dir("bad"));
  path_in(path, sizeof path, "bad");
  CHECK_STATUS(dt_data_loader_create_image_folder(&loader, path, 4, 4, NULL), DT_ERR_IO);
  CHECK(last_error_has("holds no class folder"));
  CHECK(make_dir("bad/cls"));
  CHECK_STATUS(dt_data_loader_create_image_folder(&loader, path, 4, 4, NULL), DT_ERR_IO);
  CHECK(last_error_has("bad/cls holds no image"));
  CHECK(write_file("bad/cls/notes.txt", "hello"));
  CHECK_STATUS(dt_data_loader_create_image_folder(&loader, path, 4, 4, NULL), DT_ERR_IO);
  CHECK(last_error_has("bad/cls/notes.txt is not an image"));
  CHECK(loader == CAPI_SENTINEL(dt_data_loader));
  path_in(file, sizeof file, "bad/cls/notes.txt");
  remove(file);
  /* A truncated PNG: the folder lists, its batch fails naming the file. */
  memset(pixels, 3, sizeof pixels);
  path_in(file, sizeof file, "bad/cls/x.png");
  CHECK(write_png(file, 2, 2, 3, pixels, 20));
  if (CHECK_OK(dt_data_loader_create_image_folder(&loader, path, 4, 4, &o))) {
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_STATUS(dt_data_loader_next(&d, &l, &has, loader), DT_ERR_IO);
    CHECK(last_error_has("bad/cls/x.png"));
    dt_data_loader_free(loader);
  }
  remove(file);
  /* Not an image at all, under an image's name. */
  CHECK(write_file("bad/cls/y.jpg", "GIF89a......"));
  loader = NULL;
  if (CHECK_OK(dt_data_loader_create_image_folder(&loader, path, 4, 4, &o))) {
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_STATUS(dt_data_loader_next(&d, &l, &has, loader), DT_ERR_IO);
    CHECK(last_error_has("is neither JPEG nor PNG"));
    dt_data_loader_free(loader);
  }
  path_in(file, sizeof file, "bad/cls/y.jpg");
  remove(file);
}

static void remove_tree(void) {
  static const char *const files[] = {"ok/ants/a.png", "ok/ants/b.png", "ok/bees/c.png", "ok/README",
                                      "ok/ants",       "ok/bees",       "ok",            "bad/cls",
                                      "bad"};
  char path[700];
  size_t i;
  for (i = 0; i < sizeof files / sizeof files[0]; i++) {
    path_in(path, sizeof path, files[i]);
    remove(path);
  }
  if (rmdir(g_dir) != 0) fprintf(stderr, "cannot remove %s (files left?)\n", g_dir);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  int rc;
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/capi_image_folder_%ld", tmp, (long)getpid());
  if (mkdir(g_dir, 0700) != 0 || !write_tree()) {
    fprintf(stderr, "cannot create the image tree in %s\n", g_dir);
    printf("0 passed, 1 failed\n");
    return 1;
  }
  test_new_option_defaults();
  test_classes_resize_and_rgb();
  test_imagenet_statistics_by_default();
  test_random_resized_crop_repeats_with_the_seed();
  test_older_struct();
  test_bad_arguments();
  test_bad_folders_and_files();
  rc = capi_finish();
  remove_tree();
  return rc;
}
