/* memory/_fts5_text.c's SQL functions (temper_overlap, temper_snippet), registered on a
 * connection by the library's entry point in _fts5_rank.c, and a helper both files use. */
#ifndef TEMPER_FTS5_TEXT_H
#define TEMPER_FTS5_TEXT_H

#include <sqlite3ext.h>

int temper_text_register(sqlite3 *db, fts5_api *fts5, char **error);

/* Finishes `out` as the function's text result, or reports `rc` (or its own error) instead. */
void temper_result_str(sqlite3_context *context, sqlite3_str *out, int rc);

#endif
