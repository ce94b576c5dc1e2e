/*
 * Data loaders: a short options struct, every bad option, IDX files written
 * here (good, malformed, missing), and NULL, freed and mistyped handles.
 */
#include "capi_data_test_util.h"

/* An older caller's struct that ends after batch_size: the rest default. */
void test_short_struct(void) {
  dt_data_loader_options o = options_with(1000, 0);
  dt_data_loader *loader = NULL;
  size_t n = 0;
  o.struct_size = offsetof(dt_data_loader_options, batch_size) + sizeof(int64_t);
  o.last_batch = DT_LAST_BATCH_DISCARD; /* past the struct: ignored */
  o.num_parts = 5;
  if (CHECK_OK(dt_data_loader_create_mnist(&loader, NULL, "t10k", &o))) {
    CHECK_OK(dt_data_loader_num_samples(&n, loader));
    CHECK_EQ_U64(n, 10000);
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 10);
    dt_data_loader_free(loader);
  }
}

void test_bad_options(void) {
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  dt_data_loader_options o;
  int i;
  for (i = 0; i < 16; i++) {
    o = options_with(100, 0);
    switch (i) {
      case 0: o.batch_size = 0; break;
      case 1: o.batch_size = -5; break;
      case 2: o.num_parts = 2; o.part_index = 2; break;
      case 3: o.part_index = -1; break;
      case 4: o.num_parts = 0; o.part_index = 0; break;
      case 5: o.num_parts = 10001; break;
      case 6: o.last_batch = (dt_last_batch)7; break;
      case 7: o.last_batch = (dt_last_batch)-1; break;
      case 8: o.prefetch = 0; break;
      case 9: o.prefetch = -3; break;
      case 10: o.struct_size = 0; break;
      case 11: o.std = 0.0f; break;
      case 12: o.std = NAN; break;
      case 13: o.num_workers = -1; break;
      case 14: o.num_workers = 257; break;
      default: o.mean = NAN; break;
    }
    if (!CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, "t10k", &o), DT_ERR_INVALID_ARGUMENT)) {
      fprintf(stderr, "  bad option case %d\n", i);
    }
  }
  o = options_with(100, 0);
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, "valid", &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(last_error_has("valid"));
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, "", &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, NULL, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create_mnist(NULL, NULL, "t10k", &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(loader == CAPI_SENTINEL(dt_data_loader));
}

void test_own_files(void) {
  static const unsigned char labels10[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  char images[600], labels[600], short_labels[600], bad_label[600], garbage[600], truncated[600];
  char sub[600], sub_images[700], sub_labels[700], missing_dir[600];
  static const unsigned char junk[40] = "this is not an IDX file at all, really";
  static const unsigned char label_big[3] = {1, 10, 2};
  dt_data_loader_options o = options_with(4, 0);
  dt_data_loader *loader = CAPI_SENTINEL(dt_data_loader);
  float pixels[4 * 16];
  int32_t got[4];
  dt_ndarray *data = NULL, *lab = NULL;
  int32_t has = 0;
  size_t n = 0, i;
  int exact = 1;

  path_in(images, sizeof images, "img-idx3-ubyte");
  path_in(labels, sizeof labels, "lab-idx1-ubyte");
  path_in(short_labels, sizeof short_labels, "short-idx1-ubyte");
  path_in(bad_label, sizeof bad_label, "big-idx1-ubyte");
  path_in(garbage, sizeof garbage, "garbage");
  path_in(truncated, sizeof truncated, "trunc-idx3-ubyte");
  CHECK(write_images(images, 10, 10, 4, 4));
  CHECK(write_labels(labels, labels10, 10));
  CHECK(write_labels(short_labels, labels10, 9));
  CHECK(write_labels(bad_label, label_big, 3));
  CHECK(write_file(garbage, junk, sizeof junk));
  CHECK(write_images(truncated, 3, 10, 4, 4));

  o.mean = 0.5f;
  o.std = 0.25f;
  loader = NULL;
  if (CHECK_OK(dt_data_loader_create(&loader, images, labels, &o))) {
    CHECK_OK(dt_data_loader_num_samples(&n, loader));
    CHECK_EQ_U64(n, 10);
    CHECK_OK(dt_data_loader_num_batches(&n, loader));
    CHECK_EQ_U64(n, 3);
    CHECK_OK(dt_data_loader_start_epoch(loader, 0));
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 4, 4), 4);
    if (CHECK_OK(dt_data_loader_next(&data, &lab, &has, loader)) && has == 1) {
      /* Samples 4..7, in file order, normalised as (x / 255 - 0.5) / 0.25. */
      CHECK_OK(dt_ndarray_copy_to_host(pixels, sizeof pixels, data));
      CHECK_OK(dt_ndarray_copy_to_host(got, sizeof got, lab));
      CHECK(got[0] == 4 && got[1] == 5 && got[2] == 6 && got[3] == 7);
      for (i = 0; i < 4 * 16; i++) {
        const double x = pixel_of((uint32_t)(4 + i / 16), (uint32_t)(i % 16));
        exact &= fabs(pixels[i] - (x / 255.0 - 0.5) / 0.25) < 1e-5;
      }
      CHECK(exact);
      dt_ndarray_free(data);
      dt_ndarray_free(lab);
    }
    CHECK_EQ_I64(next_labels(loader, got, 4, 4, 4), 2);
    CHECK(got[0] == 8 && got[1] == 9);
    CHECK_EQ_I64(next_labels(loader, NULL, 0, 4, 4), -1);
    dt_data_loader_free(loader);
  }
  loader = CAPI_SENTINEL(dt_data_loader);

  /* Malformed files: I/O errors naming the file. */
  CHECK_STATUS(dt_data_loader_create(&loader, garbage, labels, &o), DT_ERR_IO);
  CHECK(last_error_has(garbage));
  CHECK_STATUS(dt_data_loader_create(&loader, images, garbage, &o), DT_ERR_IO);
  CHECK(last_error_has(garbage));
  CHECK_STATUS(dt_data_loader_create(&loader, truncated, labels, &o), DT_ERR_IO);
  CHECK(last_error_has(truncated));
  CHECK_STATUS(dt_data_loader_create(&loader, images, short_labels, &o), DT_ERR_IO);
  CHECK(last_error_has(short_labels) || last_error_has(images));
  /* Labels swapped with images: a 3-d file where labels belong. */
  CHECK_STATUS(dt_data_loader_create(&loader, labels, images, &o), DT_ERR_IO);
  {
    char three[600];
    path_in(three, sizeof three, "three-idx3-ubyte");
    CHECK(write_images(three, 3, 3, 4, 4));
    CHECK_STATUS(dt_data_loader_create(&loader, three, bad_label, &o), DT_ERR_IO);
    CHECK(last_error_has(bad_label));
    unlink(three);
  }
  /* Missing files. */
  path_in(missing_dir, sizeof missing_dir, "no-such-dir");
  CHECK_STATUS(dt_data_loader_create(&loader, missing_dir, labels, &o), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create(&loader, images, missing_dir, &o), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, missing_dir, "t10k", &o), DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create_mnist(&loader, "/nonexistent/fashion-mnist", "train", NULL),
               DT_ERR_NOT_FOUND);
  CHECK_STATUS(dt_data_loader_create(&loader, NULL, labels, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create(&loader, images, NULL, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_create(NULL, images, labels, &o), DT_ERR_INVALID_ARGUMENT);
  o.batch_size = 0;
  CHECK_STATUS(dt_data_loader_create(&loader, images, labels, &o), DT_ERR_INVALID_ARGUMENT);
  CHECK(loader == CAPI_SENTINEL(dt_data_loader));

  /* A directory whose standard-named files are garbage. */
  path_in(sub, sizeof sub, "garbage-mnist");
  snprintf(sub_images, sizeof sub_images, "%s/t10k-images-idx3-ubyte", sub);
  snprintf(sub_labels, sizeof sub_labels, "%s/t10k-labels-idx1-ubyte", sub);
  if (CHECK(mkdir(sub, 0700) == 0)) {
    CHECK(write_file(sub_images, junk, sizeof junk));
    CHECK(write_file(sub_labels, junk, sizeof junk));
    CHECK_STATUS(dt_data_loader_create_mnist(&loader, sub, "t10k", NULL), DT_ERR_IO);
    CHECK(last_error_has("t10k-"));
    /* Only the test split is there. */
    CHECK_STATUS(dt_data_loader_create_mnist(&loader, sub, "train", NULL), DT_ERR_NOT_FOUND);
    CHECK(loader == CAPI_SENTINEL(dt_data_loader));
    unlink(sub_images);
    unlink(sub_labels);
    rmdir(sub);
  }
  unlink(images);
  unlink(labels);
  unlink(short_labels);
  unlink(bad_label);
  unlink(garbage);
  unlink(truncated);
}

void test_calls_and_handles(void) {
  dt_data_loader_options o = options_with(100, 0);
  dt_data_loader *loader = t10k(&o);
  dt_ndarray *data = CAPI_SENTINEL(dt_ndarray), *labels = CAPI_SENTINEL(dt_ndarray);
  dt_context *ctx = NULL;
  int32_t has = -1;
  size_t n = 12345;
  if (loader == NULL) return;
  CHECK_STATUS(dt_data_loader_start_epoch(loader, -1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_start_epoch(NULL, 0), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_num_samples(NULL, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_num_samples(&n, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_num_batches(NULL, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_num_batches(&n, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK_EQ_U64(n, 12345);
  CHECK_OK(dt_data_loader_start_epoch(loader, 0));
  CHECK_STATUS(dt_data_loader_start_epoch(loader, -1), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_next(NULL, &labels, &has, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_next(&data, NULL, &has, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_next(&data, &labels, NULL, loader), DT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(dt_data_loader_next(&data, &labels, &has, NULL), DT_ERR_INVALID_ARGUMENT);
  CHECK(data == CAPI_SENTINEL(dt_ndarray) && labels == CAPI_SENTINEL(dt_ndarray));
  CHECK_EQ_I64(has, -1);
  /* None of the failed calls consumed a batch: the epoch still has all 100. */
  {
    int64_t b, batches = 0;
    while ((b = next_labels(loader, NULL, 0, 28, 28)) > 0) batches++;
    CHECK_EQ_I64(batches, 100);
  }

  /* Another kind of handle is not a loader. */
  if (CHECK_OK(dt_context_create(&ctx, DT_DEVICE_CPU, 0))) {
    CHECK_STATUS(dt_data_loader_num_samples(&n, (const dt_data_loader *)ctx), DT_ERR_INVALID_HANDLE);
    CHECK_STATUS(dt_data_loader_start_epoch((dt_data_loader *)ctx, 0), DT_ERR_INVALID_HANDLE);
    dt_data_loader_free((dt_data_loader *)ctx); /* ignored, reported */
    CHECK(last_error_has("dt_data_loader_free"));
    dt_context_free(ctx);
  }

  dt_data_loader_free(loader);
  CHECK_STATUS(dt_data_loader_num_samples(&n, loader), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_data_loader_num_batches(&n, loader), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_data_loader_start_epoch(loader, 0), DT_ERR_INVALID_HANDLE);
  CHECK_STATUS(dt_data_loader_next(&data, &labels, &has, loader), DT_ERR_INVALID_HANDLE);
  CHECK(data == CAPI_SENTINEL(dt_ndarray) && labels == CAPI_SENTINEL(dt_ndarray));
  CHECK_EQ_U64(n, 12345);
  dt_data_loader_free(loader); /* double free: ignored, reported */
  CHECK(last_error_has("dt_data_loader_free"));
  dt_data_loader_free(NULL);
}
