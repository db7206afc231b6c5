/*
 * Two SQL functions over a hit's text, in C: the same results as memory/snippets.py's
 * Python reference (`Snippets`, `Overlap`), without tokenising each candidate in Python.
 *
 *   temper_overlap(content, question)   how much of the question `content` repeats: the
 *                                       share of the question's distinct stems it holds,
 *                                       plus the share of its distinct adjacent pairs
 *   temper_snippet(content, spec)       `content` cut around the spec's matches, the
 *                                       matches [marked]; NULL when nothing matches
 *
 * `question` is the question's stems joined by single spaces (a stem never holds one);
 * `spec` is Snippets.spec: one line per term, "w N stem", "p N stem" or "f N stem stem ...",
 * for a word, a prefix and a phrase of term number N. Both are the same for every row of a
 * statement, so each is parsed once and kept as the argument's auxiliary data.
 *
 * `content` is tokenised with the index's own tokenizer (porter over unicode61, diacritics
 * removed), found through the connection's fts5_api, so the stems are the index's. The
 * window of a snippet is chosen as FTS5's snippet() chooses it (see snippets.py).
 * Compiled into the same library as _fts5_rank.c, which registers these on load.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3ext.h>

#include "_fts5_text.h"

SQLITE_EXTENSION_INIT3

#define SNIPPET_TOKENS 16
#define ELLIPSIS "\xe2\x80\xa6"

/* ---- a text's tokens ------------------------------------------------------------------ */

typedef struct Token {
    int start, end;    /* bytes of the text */
    sqlite3_int64 at;  /* the stem, in Tokens.stems */
    int size;
} Token;

typedef struct Tokens {
    Token *items;
    int count, room;
    char *stems;
    sqlite3_int64 used, stems_room;
} Tokens;

static void tokens_free(Tokens *tokens) {
    sqlite3_free(tokens->items);
    sqlite3_free(tokens->stems);
}

static int collect(void *context, int flags, const char *stem, int size, int start, int end) {
    Tokens *tokens = context;
    if (flags & FTS5_TOKEN_COLOCATED) return SQLITE_OK;
    if (tokens->count == tokens->room) {
        int room = tokens->room ? 2 * tokens->room : 64;
        Token *items = sqlite3_realloc64(tokens->items, sizeof(Token) * (sqlite3_uint64)room);
        if (items == NULL) return SQLITE_NOMEM;
        tokens->items = items;
        tokens->room = room;
    }
    if (tokens->used + size > tokens->stems_room) {
        sqlite3_int64 room = tokens->stems_room ? 2 * tokens->stems_room : 512;
        while (room < tokens->used + size) room *= 2;
        char *stems = sqlite3_realloc64(tokens->stems, (sqlite3_uint64)room);
        if (stems == NULL) return SQLITE_NOMEM;
        tokens->stems = stems;
        tokens->stems_room = room;
    }
    memcpy(tokens->stems + tokens->used, stem, (size_t)size);
    tokens->items[tokens->count++] = (Token){start, end, tokens->used, size};
    tokens->used += size;
    return SQLITE_OK;
}

/* What both functions share on one connection: the tokenizer, and the last text it cut with
 * its tokens. A search's query calls temper_overlap and temper_snippet on the same row one
 * after the other, so the second finds the row's tokens already cut. */
typedef struct Tokenizer {
    fts5_tokenizer api;
    Fts5Tokenizer *instance;
    int references; /* the functions registered with it */
    char *last;     /* a copy of the last text tokenised, or NULL */
    int last_bytes;
    Tokens tokens; /* its tokens */
} Tokenizer;

static void tokenizer_free(void *pointer) {
    Tokenizer *tokenizer = pointer;
    if (tokenizer == NULL || --tokenizer->references > 0) return;
    if (tokenizer->instance != NULL) tokenizer->api.xDelete(tokenizer->instance);
    tokens_free(&tokenizer->tokens);
    sqlite3_free(tokenizer->last);
    sqlite3_free(tokenizer);
}

static Tokenizer *tokenizer_new(fts5_api *fts5) {
    static const char *arguments[] = {"unicode61", "remove_diacritics", "2"};
    Tokenizer *tokenizer = sqlite3_malloc(sizeof(Tokenizer));
    if (tokenizer == NULL) return NULL;
    memset(tokenizer, 0, sizeof(*tokenizer));
    tokenizer->references = 1;
    void *context = NULL;
    if (fts5->xFindTokenizer(fts5, "porter", &context, &tokenizer->api) != SQLITE_OK ||
        tokenizer->api.xCreate(context, arguments, 3, &tokenizer->instance) != SQLITE_OK) {
        tokenizer_free(tokenizer);
        return NULL;
    }
    return tokenizer;
}

/* The tokens of `text`, cut now or kept from the call before; NULL on an error (`*rc`). */
static const Tokens *tokens_of(Tokenizer *tokenizer, const char *text, int bytes, int *rc) {
    *rc = SQLITE_OK;
    if (tokenizer->last != NULL && tokenizer->last_bytes == bytes && memcmp(tokenizer->last, text, (size_t)bytes) == 0) {
        return &tokenizer->tokens;
    }
    sqlite3_free(tokenizer->last);
    tokenizer->last = NULL;
    tokenizer->tokens.count = 0;
    tokenizer->tokens.used = 0;
    *rc = tokenizer->api.xTokenize(tokenizer->instance, &tokenizer->tokens, FTS5_TOKENIZE_DOCUMENT, text, bytes,
                                   collect);
    if (*rc != SQLITE_OK) return NULL;
    tokenizer->last = sqlite3_malloc64((sqlite3_uint64)bytes + 1);
    if (tokenizer->last != NULL) { /* without it, the next call cuts the text again */
        memcpy(tokenizer->last, text, (size_t)bytes);
        tokenizer->last_bytes = bytes;
    }
    return &tokenizer->tokens;
}

static int same(const Tokens *tokens, int i, const char *stem, int size) {
    const Token *token = &tokens->items[i];
    return token->size == size && memcmp(tokens->stems + token->at, stem, (size_t)size) == 0;
}

/* ---- a statement's constant argument, split into stems, parsed once --------------------- */

typedef struct Stem {
    const char *text;
    int size;
} Stem;

/* Splits `text` at single spaces into `stems` (room for `room`); returns how many. */
static int split(const char *text, int size, Stem *stems, int room) {
    int count = 0, start = 0;
    for (int i = 0; i <= size && count < room; i++) {
        if (i == size || text[i] == ' ') {
            if (i > start) stems[count++] = (Stem){text + start, i - start};
            start = i + 1;
        }
    }
    return count;
}

static int stem_equal(Stem a, Stem b) { return a.size == b.size && memcmp(a.text, b.text, (size_t)a.size) == 0; }

/* A copy of the argument's bytes followed by room for `stems` Stem records. */
static void *copy_argument(sqlite3_value *value, size_t header, int *size, char **text, size_t records) {
    const unsigned char *bytes = sqlite3_value_text(value);
    *size = sqlite3_value_bytes(value);
    char *block = sqlite3_malloc64(header + records + (sqlite3_uint64)*size + 1);
    if (block == NULL) return NULL;
    *text = block + header + records;
    if (*size) memcpy(*text, bytes, (size_t)*size);
    (*text)[*size] = 0;
    return block;
}

/* Argument 1 parsed by `parse`: kept as its auxiliary data, so parsed once a statement where
 * it is constant (a bound parameter); otherwise parsed for this call and `*owned` set (the
 * caller frees it). NULL: out of memory. */
static void *parsed_argument(sqlite3_context *context, sqlite3_value **argv, void *(*parse)(sqlite3_value *),
                             int *owned) {
    *owned = 0;
    void *parsed = sqlite3_get_auxdata(context, 1);
    if (parsed != NULL) return parsed;
    parsed = parse(argv[1]);
    if (parsed == NULL) return NULL;
    sqlite3_set_auxdata(context, 1, parsed, sqlite3_free); /* frees it at once if not kept */
    if (sqlite3_get_auxdata(context, 1) == parsed) return parsed;
    *owned = 1;
    return parse(argv[1]);
}

/* What both functions start with: the row's content tokenised and argument 1 parsed. NULL
 * when the content is NULL (the result stays NULL) or on an error (reported); `*owned`: the
 * caller frees `*parsed` (see parsed_argument). */
static const Tokens *row_call(sqlite3_context *context, sqlite3_value **argv, void *(*parse)(sqlite3_value *),
                              void **parsed, int *owned) {
    *parsed = NULL;
    *owned = 0;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return NULL;
    *parsed = parsed_argument(context, argv, parse, owned);
    if (*parsed == NULL) {
        sqlite3_result_error_nomem(context);
        return NULL;
    }
    int rc = SQLITE_OK;
    const char *text = (const char *)sqlite3_value_text(argv[0]);
    const Tokens *tokens = tokens_of(sqlite3_user_data(context), text, sqlite3_value_bytes(argv[0]), &rc);
    if (tokens == NULL) sqlite3_result_error_code(context, rc);
    return tokens;
}

/* ---- temper_overlap --------------------------------------------------------------------- */

typedef struct Question {
    int words, pairs;   /* distinct stems, distinct adjacent pairs */
    Stem *word;         /* words distinct stems */
    Stem *pair;         /* pairs x 2 stems */
} Question;

static void *question_parse(sqlite3_value *value) {
    int size = 0;
    char *text = NULL;
    int most = sqlite3_value_bytes(value) / 2 + 1; /* stems: at most one per two bytes */
    size_t records = sizeof(Stem) * (size_t)most * 4;
    Question *question = copy_argument(value, sizeof(Question), &size, &text, records);
    if (question == NULL) return NULL;
    Stem *all = (Stem *)(question + 1);
    question->word = all + most;
    question->pair = all + 2 * most;
    int count = split(text, size, all, most);
    question->words = question->pairs = 0;
    for (int i = 0; i < count; i++) {
        int seen = 0;
        for (int j = 0; j < question->words && !seen; j++) seen = stem_equal(question->word[j], all[i]);
        if (!seen) question->word[question->words++] = all[i];
        if (i + 1 < count) {
            seen = 0;
            for (int j = 0; j < question->pairs && !seen; j++) {
                seen = stem_equal(question->pair[2 * j], all[i]) && stem_equal(question->pair[2 * j + 1], all[i + 1]);
            }
            if (!seen) {
                question->pair[2 * question->pairs] = all[i];
                question->pair[2 * question->pairs + 1] = all[i + 1];
                question->pairs++;
            }
        }
    }
    return question;
}

/* The share of the question's distinct stems `tokens` hold, plus the share of its distinct
 * adjacent pairs they hold adjacent (as snippets.Overlap computes it, in the same order). */
static double overlap(const Question *question, const Tokens *tokens) {
    if (question->words == 0) return 0.0;
    int held = 0;
    for (int j = 0; j < question->words; j++) {
        for (int i = 0; i < tokens->count; i++) {
            if (same(tokens, i, question->word[j].text, question->word[j].size)) {
                held++;
                break;
            }
        }
    }
    double score = (double)held / (double)question->words;
    if (question->pairs) {
        int pairs = 0;
        for (int j = 0; j < question->pairs; j++) {
            const Stem *pair = &question->pair[2 * j];
            for (int i = 0; i + 1 < tokens->count; i++) {
                if (same(tokens, i, pair[0].text, pair[0].size) && same(tokens, i + 1, pair[1].text, pair[1].size)) {
                    pairs++;
                    break;
                }
            }
        }
        score += (double)pairs / (double)question->pairs;
    }
    return score;
}

static void temper_overlap(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    void *question = NULL;
    int owned = 0;
    const Tokens *tokens = row_call(context, argv, question_parse, &question, &owned);
    if (tokens != NULL) sqlite3_result_double(context, overlap(question, tokens));
    if (owned) sqlite3_free(question);
}

/* ---- temper_snippet --------------------------------------------------------------------- */

typedef struct Term {
    char kind; /* 'w' word, 'p' prefix, 'f' phrase */
    int number;
    int first, count; /* its stems in Spec.stems */
} Term;

typedef struct Spec {
    int terms;
    Term *term;
    Stem *stems;
} Spec;

static void *spec_parse(sqlite3_value *value) {
    int size = 0;
    char *text = NULL;
    int most = sqlite3_value_bytes(value) / 2 + 1;
    size_t records = (sizeof(Term) + sizeof(Stem)) * (size_t)most;
    Spec *spec = copy_argument(value, sizeof(Spec), &size, &text, records);
    if (spec == NULL) return NULL;
    spec->term = (Term *)(spec + 1);
    spec->stems = (Stem *)(spec->term + most);
    spec->terms = 0;
    int stems = 0, start = 0;
    for (int i = 0; i <= size; i++) {
        if (i < size && text[i] != '\n') continue;
        Stem fields[3];
        /* "k N rest": the kind, the number, the stems */
        int line = i - start, parts = 0, from = start;
        for (int j = start; j <= i && parts < 2; j++) {
            if (j == i || text[j] == ' ') {
                fields[parts++] = (Stem){text + from, j - from};
                from = j + 1;
            }
        }
        if (line > 0 && parts == 2 && fields[0].size == 1 && from <= i) {
            Term *term = &spec->term[spec->terms];
            term->kind = fields[0].text[0];
            long number = strtol(fields[1].text, NULL, 10); /* a term's number: small, never negative */
            term->number = number < 0 ? 0 : number > 1 << 20 ? 1 << 20 : (int)number;
            term->first = stems;
            term->count = split(text + from, i - from, spec->stems + stems, most - stems);
            stems += term->count;
            if (term->count > 0) spec->terms++;
        }
        start = i + 1;
    }
    return spec;
}

typedef struct Found {
    int position, size, term;
} Found;

/* The matches, in order (FTS5's xInst): for each token, the first word it is or else the
 * first prefix it starts with, then each phrase starting there. Returns how many, or -1. */
static int instances(const Spec *spec, const Tokens *tokens, Found **out) {
    int count = 0, room = 16;
    Found *found = sqlite3_malloc64(sizeof(Found) * (sqlite3_uint64)room);
    if (found == NULL) return -1;
    for (int i = 0; i < tokens->count; i++) {
        int term = -1;
        for (int t = 0; t < spec->terms && term < 0; t++) {
            const Stem *stem = &spec->stems[spec->term[t].first];
            if (spec->term[t].kind == 'w' && same(tokens, i, stem->text, stem->size)) term = spec->term[t].number;
        }
        for (int t = 0; t < spec->terms && term < 0; t++) {
            const Stem *stem = &spec->stems[spec->term[t].first];
            const Token *token = &tokens->items[i];
            if (spec->term[t].kind == 'p' && token->size >= stem->size &&
                memcmp(tokens->stems + token->at, stem->text, (size_t)stem->size) == 0) {
                term = spec->term[t].number;
            }
        }
        for (int t = -1; t < spec->terms; t++) {
            int size = 1, number = term;
            if (t >= 0) { /* the phrases starting here */
                const Term *phrase = &spec->term[t];
                if (phrase->kind != 'f' || i + phrase->count > tokens->count) continue;
                int k = 0;
                while (k < phrase->count &&
                       same(tokens, i + k, spec->stems[phrase->first + k].text, spec->stems[phrase->first + k].size)) {
                    k++;
                }
                if (k < phrase->count) continue;
                size = phrase->count;
                number = phrase->number;
            } else if (term < 0) {
                continue;
            }
            if (count == room) {
                room *= 2;
                Found *grown = sqlite3_realloc64(found, sizeof(Found) * (sqlite3_uint64)room);
                if (grown == NULL) {
                    sqlite3_free(found);
                    return -1;
                }
                found = grown;
            }
            found[count++] = (Found){i, size, number};
        }
    }
    *out = found;
    return count;
}

/* FTS5's window score (1,000 for each term, 1 for each repeat), its first match and the end
 * of its last. The matches are in position order, so those in the window are one run. */
static int window_score(const Found *found, int count, int start, int *first, int *last) {
    int score = 0;
    unsigned long long seen = 0; /* terms numbered below 64; others are looked up */
    *first = *last = -1;
    for (int i = 0; i < count && found[i].position < start + SNIPPET_TOKENS; i++) {
        if (found[i].position < start) continue;
        int term = found[i].term, repeat = 0;
        if (term >= 0 && term < 64) {
            repeat = (seen >> term) & 1;
            seen |= 1ULL << term;
        } else {
            for (int j = i - 1; j >= 0 && found[j].position >= start && !repeat; j--) repeat = found[j].term == term;
        }
        score += repeat ? 1 : 1000;
        if (*first < 0) *first = found[i].position;
        *last = found[i].position + found[i].size;
    }
    return score;
}

/* The last sentence start at or before `position` (sentences ascending, the first 0). */
static int sentence_of(const int *sentences, int count, int position) {
    int low = 0, high = count; /* the first start above `position` lies in [low, high] */
    while (low < high) {
        int middle = (low + high) / 2;
        if (sentences[middle] <= position) low = middle + 1;
        else high = middle;
    }
    return sentences[low - 1];
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Tokens that start a sentence: the first, and each right after a "." or ":" and whitespace.
 * Returns how many, written to `starts` (room for tokens->count + 1). */
static int sentence_starts(const char *data, int bytes, const Tokens *tokens, int *starts) {
    int count = 0, next = 0;
    starts[count++] = 0;
    for (int p = 0; p + 1 < bytes; p++) {
        if ((data[p] != '.' && data[p] != ':') || !is_space((unsigned char)data[p + 1])) continue;
        int end = p + 1;
        while (end < bytes && is_space((unsigned char)data[end])) end++;
        while (next < tokens->count && tokens->items[next].start < end) next++;
        if (next < tokens->count && tokens->items[next].start == end && next > 0 &&
            tokens->items[next - 1].end <= p) {
            starts[count++] = next;
        }
        p = end - 1;
    }
    return count;
}

static int window_start(const Found *found, int count, const int *sentences, int n_sentences, int tokens) {
    int best_score = 0, best_start = 0, first, last;
    for (int i = 0; i < count; i++) {
        int position = found[i].position;
        int score = window_score(found, count, position, &first, &last);
        if (score > best_score) {
            int centred = first - (SNIPPET_TOKENS - (last - first)) / 2; /* towards zero, as FTS5 */
            int latest = tokens - SNIPPET_TOKENS;
            best_score = score;
            best_start = centred < latest ? centred : latest;
            if (best_start < 0) best_start = 0;
        }
        int sentence = sentence_of(sentences, n_sentences, position);
        if (sentence < position) {
            score = window_score(found, count, sentence, &first, &last) + (sentence == 0 ? 120 : 100);
            if (score > best_score) {
                best_score = score;
                best_start = sentence;
            }
        }
    }
    return best_start;
}

static void snippet(sqlite3_context *context, const char *data, int bytes, const Tokens *tokens,
                    const Found *found, int count) {
    int first = 0;
    if (tokens->count > SNIPPET_TOKENS) {
        int *starts = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)tokens->count + 1));
        if (starts == NULL) {
            sqlite3_result_error_nomem(context);
            return;
        }
        int n_starts = sentence_starts(data, bytes, tokens, starts);
        first = window_start(found, count, starts, n_starts, tokens->count);
        sqlite3_free(starts);
    }
    int last = (first + SNIPPET_TOKENS < tokens->count ? first + SNIPPET_TOKENS : tokens->count) - 1;
    sqlite3_str *out = sqlite3_str_new(sqlite3_context_db_handle(context));
    if (first) sqlite3_str_appendall(out, ELLIPSIS);
    int position = first ? tokens->items[first].start : 0;
    for (int i = 0; i < count;) { /* the spans to mark: overlapping matches become one */
        int start = found[i].position, end = found[i].position + found[i].size - 1;
        for (i++; i < count && found[i].position <= end; i++) {
            int other = found[i].position + found[i].size - 1;
            if (other > end) end = other;
        }
        if (start < first || start > last) continue;
        int begin = tokens->items[start].start, finish = tokens->items[end < last ? end : last].end;
        sqlite3_str_append(out, data + position, begin - position);
        sqlite3_str_appendchar(out, 1, '[');
        sqlite3_str_append(out, data + begin, finish - begin);
        sqlite3_str_appendchar(out, 1, ']');
        position = finish;
    }
    int tail = last == tokens->count - 1 ? bytes : tokens->items[last].end;
    sqlite3_str_append(out, data + position, tail - position);
    if (last < tokens->count - 1) sqlite3_str_appendall(out, ELLIPSIS);
    temper_result_str(context, out, SQLITE_OK);
}

static void temper_snippet(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    void *spec = NULL;
    int owned = 0;
    const Tokens *tokens = row_call(context, argv, spec_parse, &spec, &owned);
    if (tokens != NULL) {
        Found *found = NULL;
        int count = instances(spec, tokens, &found);
        if (count < 0) {
            sqlite3_result_error_nomem(context);
        } else if (count > 0) {
            const char *data = (const char *)sqlite3_value_text(argv[0]);
            snippet(context, data, sqlite3_value_bytes(argv[0]), tokens, found, count);
        } /* else NULL: no term matches */
        sqlite3_free(found);
    }
    if (owned) sqlite3_free(spec);
}

/* ---- shared with _fts5_rank.c ----------------------------------------------------------- */

void temper_result_str(sqlite3_context *context, sqlite3_str *out, int rc) {
    if (rc == SQLITE_OK) rc = sqlite3_str_errcode(out);
    int size = sqlite3_str_length(out);
    char *text = sqlite3_str_finish(out);
    if (rc != SQLITE_OK) {
        sqlite3_free(text);
        sqlite3_result_error_code(context, rc);
    } else {
        sqlite3_result_text(context, text ? text : "", size, text ? sqlite3_free : SQLITE_STATIC);
    }
}

/* ---- registration ----------------------------------------------------------------------- */

int temper_text_register(sqlite3 *db, fts5_api *fts5, char **error) {
    static const struct {
        const char *name;
        void (*function)(sqlite3_context *, int, sqlite3_value **);
    } functions[] = {{"temper_overlap", temper_overlap}, {"temper_snippet", temper_snippet}};
    Tokenizer *tokenizer = tokenizer_new(fts5);
    if (tokenizer == NULL) {
        *error = sqlite3_mprintf("temper text functions: no porter tokenizer");
        return SQLITE_ERROR;
    }
    int rc = SQLITE_OK;
    for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]) && rc == SQLITE_OK; i++) {
        tokenizer->references++; /* each function's destructor drops one */
        rc = sqlite3_create_function_v2(db, functions[i].name, 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, tokenizer,
                                        functions[i].function, NULL, NULL, tokenizer_free);
        if (rc != SQLITE_OK) *error = sqlite3_mprintf("temper text functions: could not register %s", functions[i].name);
    }
    tokenizer_free(tokenizer); /* this function's own reference */
    return rc;
}
