/*
 * capi_check.c - the one check count of a C API test program (capi_check.h).
 */
#include "capi_check.h"

capi_counts *capi_counts_get(void) {
  static capi_counts counts;
  return &counts;
}
