/*
 * temper's FTS5 ranking functions in C: the same functions, arguments and results as
 * memory/ranking.py (the reference, and the fallback where this did not build), without a
 * Python call for every matched row.
 *
 * Built by setuptools as the extension module memory._fts5_rank. It is two things in one
 * shared library: a Python module with nothing in it (so that pip builds and installs it
 * beside the package, and Python can say where it lies), and an SQLite loadable extension
 * whose entry point, sqlite3_temperrank_init, registers the functions on one connection
 * (memory/ranking.py loads it). It calls SQLite only through the routines the loading
 * connection passes in (sqlite3ext.h), so it works with apsw's own copy of SQLite.
 *
 *   temper_rank(fts, df_0, df_1, ...)           BM25 over the phrases whose df >= 0
 *   temper_rank_in(fts, documents, df_0, ...)   the same, idf from a subset of `documents`
 *   temper_leading(fts, df_0, ...)              scored phrases held, in order, before the
 *                                               first one lacking
 *   temper_rank_leading(fts, df_0, ...)         BM25 over those leading phrases only
 *   temper_matched(fts)                         phrases held in the content column
 *
 * The library also holds _fts5_text.c's scalar functions over a hit's text (temper_overlap,
 * temper_snippet), registered here too.
 *
 * Every expression is evaluated in the order ranking.py evaluates it, in doubles, so the
 * scores are the same to the last bit (tests/memory/test_ranking_native.py).
 */
#include <Python.h>

#include <math.h>
#include <sqlite3ext.h>

#include "_fts5_text.h"

SQLITE_EXTENSION_INIT1

#define K1 1.2
#define B 0.75
#define CONTENT 0 /* the column that is scored: a message's text */

typedef struct Constants {
    double average_length;
    int count;      /* scored phrases */
    int *phrases;   /* their numbers, in order */
    double *idfs;   /* and idfs */
} Constants;

/* Instances of phrase `phrase` in the content column of the current row. */
static int content_frequency(const Fts5ExtensionApi *api, Fts5Context *fts, int phrase) {
    Fts5PhraseIter iter;
    int column = -1, offset = -1, frequency = 0;
    if (api->xPhraseFirst(fts, phrase, &iter, &column, &offset) != SQLITE_OK) return 0;
    for (; column >= 0; api->xPhraseNext(fts, &iter, &column, &offset)) {
        if (column == CONTENT) frequency++;
        else if (column > CONTENT) break; /* instances come in column order */
    }
    return frequency;
}

static int phrases_given(const Fts5ExtensionApi *api, Fts5Context *fts, int n_dfs) {
    int phrases = api->xPhraseCount(fts);
    return n_dfs < phrases ? n_dfs : phrases;
}

/* The query's constants, computed on its first row (the dfs are bound: the same for every
 * row) and kept as the function's auxiliary data until the query ends. NULL: out of memory
 * or an error, already reported to `result`. */
static const Constants *constants_for(const Fts5ExtensionApi *api, Fts5Context *fts,
                                      sqlite3_context *result, double documents_given,
                                      int n_dfs, sqlite3_value **dfs) {
    Constants *constants = api->xGetAuxdata(fts, 0);
    if (constants != NULL) return constants;
    sqlite3_int64 rows = 0, total = 0;
    int rc = api->xRowCount(fts, &rows);
    if (rc == SQLITE_OK) rc = api->xColumnTotalSize(fts, CONTENT, &total);
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(result, rc);
        return NULL;
    }
    int phrases = phrases_given(api, fts, n_dfs);
    constants = sqlite3_malloc64(sizeof(Constants) + (sizeof(int) + sizeof(double)) * (phrases + 1));
    if (constants == NULL) {
        sqlite3_result_error_nomem(result);
        return NULL;
    }
    constants->idfs = (double *)(constants + 1);
    constants->phrases = (int *)(constants->idfs + phrases + 1);
    double average = (double)total / (double)(rows > 1 ? rows : 1);
    constants->average_length = average > 1e-9 ? average : 1e-9;
    double documents = documents_given < 0 ? (double)rows : documents_given;
    constants->count = 0;
    for (int phrase = 0; phrase < phrases; phrase++) {
        double df = sqlite3_value_double(dfs[phrase]);
        if (df < 0) continue;
        double idf = log((documents - df + 0.5) / (df + 0.5));
        constants->phrases[constants->count] = phrase;
        constants->idfs[constants->count] = idf > 1e-6 ? idf : 1e-6;
        constants->count++;
    }
    rc = api->xSetAuxdata(fts, constants, sqlite3_free);
    if (rc != SQLITE_OK) { /* xSetAuxdata freed it */
        sqlite3_result_error_code(result, rc);
        return NULL;
    }
    return constants;
}

static void bm25(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *result,
                 double documents, int n_dfs, sqlite3_value **dfs, int leading) {
    const Constants *constants = constants_for(api, fts, result, documents, n_dfs, dfs);
    if (constants == NULL) return;
    int size = 0;
    int rc = api->xColumnSize(fts, CONTENT, &size);
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(result, rc);
        return;
    }
    double length_norm = K1 * (1 - B + B * (double)size / constants->average_length);
    double score = 0.0;
    for (int i = 0; i < constants->count; i++) {
        int frequency = content_frequency(api, fts, constants->phrases[i]);
        if (frequency) {
            score += constants->idfs[i] * frequency * (K1 + 1) / (frequency + length_norm);
        } else if (leading) {
            break;
        }
    }
    sqlite3_result_double(result, score);
}

static void temper_rank(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *result,
                        int n, sqlite3_value **values) {
    bm25(api, fts, result, -1, n, values, 0);
}

static void temper_rank_in(const Fts5ExtensionApi *api, Fts5Context *fts,
                           sqlite3_context *result, int n, sqlite3_value **values) {
    if (n < 1) {
        sqlite3_result_error(result, "temper_rank_in: the collection's size is missing", -1);
        return;
    }
    bm25(api, fts, result, sqlite3_value_double(values[0]), n - 1, values + 1, 0);
}

static void temper_rank_leading(const Fts5ExtensionApi *api, Fts5Context *fts,
                                sqlite3_context *result, int n, sqlite3_value **values) {
    bm25(api, fts, result, -1, n, values, 1);
}

static void temper_leading(const Fts5ExtensionApi *api, Fts5Context *fts,
                           sqlite3_context *result, int n, sqlite3_value **values) {
    int phrases = phrases_given(api, fts, n), held = 0;
    for (int phrase = 0; phrase < phrases; phrase++) {
        if (sqlite3_value_double(values[phrase]) < 0) continue;
        if (!content_frequency(api, fts, phrase)) break;
        held++;
    }
    sqlite3_result_int(result, held);
}

static void temper_matched(const Fts5ExtensionApi *api, Fts5Context *fts,
                           sqlite3_context *result, int n, sqlite3_value **values) {
    (void)n;
    (void)values;
    int phrases = api->xPhraseCount(fts), matched = 0;
    for (int phrase = 0; phrase < phrases; phrase++) matched += content_frequency(api, fts, phrase) > 0;
    sqlite3_result_int(result, matched);
}

/* temper_counts: for each phrase of the query, how many rows hold it, counted in rowid order
 * up to `cap`, and the rowid of the last one counted (0 when none), as the text
 * "count rowid count rowid ...". Called on one row of a query; each phrase is read by
 * xQueryPhrase, which walks its posting list inside FTS5 and stops at the cap. */
typedef struct Count {
    sqlite3_int64 count, cap, last;
} Count;

static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *context) {
    Count *count = context;
    count->last = api->xRowid(fts);
    return ++count->count >= count->cap ? SQLITE_DONE : SQLITE_OK;
}

static void temper_counts(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *result,
                          int n, sqlite3_value **values) {
    if (n != 1) {
        sqlite3_result_error(result, "temper_counts: give the cap", -1);
        return;
    }
    sqlite3_int64 cap = sqlite3_value_int64(values[0]);
    sqlite3_str *out = sqlite3_str_new(NULL);
    int phrases = api->xPhraseCount(fts), rc = SQLITE_OK;
    for (int phrase = 0; phrase < phrases && rc == SQLITE_OK; phrase++) {
        Count count = {0, cap, 0};
        if (cap > 0) rc = api->xQueryPhrase(fts, phrase, &count, count_row);
        sqlite3_str_appendf(out, phrase ? " %lld %lld" : "%lld %lld", count.count, count.last);
    }
    temper_result_str(result, out, rc);
}

/* The fts5_api of `db`, the documented way: SELECT fts5(?1) writes it through a pointer. */
static fts5_api *fts5_api_of(sqlite3 *db) {
    fts5_api *api = NULL;
    sqlite3_stmt *statement = NULL;
    if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &statement, NULL) == SQLITE_OK) {
        sqlite3_bind_pointer(statement, 1, (void *)&api, "fts5_api_ptr", NULL);
        sqlite3_step(statement);
    }
    sqlite3_finalize(statement);
    return api;
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_temperrank_init(sqlite3 *db, char **error, const sqlite3_api_routines *routines) {
    SQLITE_EXTENSION_INIT2(routines);
    fts5_api *fts5 = fts5_api_of(db);
    if (fts5 == NULL || fts5->iVersion < 2) {
        *error = sqlite3_mprintf("temper ranking: this SQLite has no FTS5 (version 2 or later)");
        return SQLITE_ERROR;
    }
    static const struct {
        const char *name;
        fts5_extension_function function;
    } functions[] = {
        {"temper_rank", temper_rank},
        {"temper_rank_in", temper_rank_in},
        {"temper_leading", temper_leading},
        {"temper_rank_leading", temper_rank_leading},
        {"temper_matched", temper_matched},
        {"temper_counts", temper_counts},
    };
    for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++) {
        int rc = fts5->xCreateFunction(fts5, functions[i].name, NULL, functions[i].function, NULL);
        if (rc != SQLITE_OK) {
            *error = sqlite3_mprintf("temper ranking: could not register %s", functions[i].name);
            return rc;
        }
    }
    return temper_text_register(db, fts5, error);
}

/* The Python side: an empty module, so that setuptools builds and installs this library and
 * importlib can find where it lies. */
static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "memory._fts5_rank",
    .m_doc = "temper's FTS5 ranking functions as an SQLite loadable extension (memory/ranking.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__fts5_rank(void) { return PyModule_Create(&module); }
