/* Compiled alone with -pedantic -Werror as C99 and as C++17: the public
   header must be self-contained and clean in both languages. */
#include "dt_c_api.h"

int dt_header_probe(void);
int dt_header_probe(void) { return DT_VERSION_NUMBER + (int)DT_OK + (int)DT_FLOAT32; }
