/* deja.stages._tokens: the index's tokenizer for whole batches, in C.
 *
 * The rules are stages/tokenize.py's (its docstring states them); this is a
 * third implementation of them beside the pure-Python and polars ones, and
 * tests/test_tokenize.py holds all three to the same tokens. It exists for
 * speed: an index run spends most of its CPU cutting text into tokens, and a
 * single pass over the UTF-8 bytes, counting each record's tokens in a hash
 * table, does in one step what polars does in a dozen list operations.
 *
 * What it does not do, the caller has done: texts are NFC already, and
 * nulls are empty. Which code points are letters, marks or bigram characters,
 * and how each lower-cases, is handed in by configure() from tokenize.py's
 * pinned tables and from Python's own str.lower (so this agrees with the
 * Python path on whatever Python runs it).
 *
 * count() runs without the GIL: a run's tokenizer thread and its main thread
 * work side by side.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { C_OTHER = 0, C_WORD = 1, C_MARK = 2, C_BIGRAM = 3 };

/* configured once per process (configure() ignores later calls) */
static uint8_t *bmp_class;       /* class of each BMP code point */
static uint32_t *astral;         /* (lo, hi, class) triples above the BMP, sorted */
static Py_ssize_t n_astral;
static uint32_t *lower_cp;       /* code points whose folded lower case differs, sorted */
static uint32_t *lower_off;      /* n_lower + 1 offsets into lower_data */
static char *lower_data;         /* UTF-8 of each one's folded lower case */
static Py_ssize_t n_lower;
static uint32_t crc_table[8 * 256];

/* ---- growable byte buffers -------------------------------------------------------- */

typedef struct {
    char *p;
    size_t n, cap;
} buf_t;

static int buf_reserve(buf_t *b, size_t more) {
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(buf_t *b, const void *src, size_t len) {
    if (buf_reserve(b, len)) return -1;
    memcpy(b->p + b->n, src, len);
    b->n += len;
    return 0;
}

static void buf_free(buf_t *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---- code points ------------------------------------------------------------------ */

/* The code point at s[i] and its length in bytes; a malformed byte is one
 * unclassed character (texts come from Python str, so this is defensive). */
static inline uint32_t decode(const uint8_t *s, size_t n, size_t i, int *len) {
    uint8_t c = s[i];
    if (c < 0x80) { *len = 1; return c; }
    if (c >= 0xC2 && c < 0xE0 && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
        *len = 2;
        return ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
    }
    if (c >= 0xE0 && c < 0xF0 && i + 2 < n && (s[i + 1] & 0xC0) == 0x80 && (s[i + 2] & 0xC0) == 0x80) {
        uint32_t cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
        if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) { *len = 3; return cp; }
    }
    if (c >= 0xF0 && c < 0xF5 && i + 3 < n && (s[i + 1] & 0xC0) == 0x80 && (s[i + 2] & 0xC0) == 0x80 &&
        (s[i + 3] & 0xC0) == 0x80) {
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
                      ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
        if (cp >= 0x10000 && cp <= 0x10FFFF) { *len = 4; return cp; }
    }
    *len = 1;
    return 0xFFFFFFFFu;
}

static inline int class_of(uint32_t cp) {
    if (cp < 0x10000) return bmp_class[cp];
    Py_ssize_t lo = 0, hi = n_astral - 1;
    while (lo <= hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        const uint32_t *t = astral + 3 * mid;
        if (cp < t[0]) hi = mid - 1;
        else if (cp > t[1]) lo = mid + 1;
        else return (int)t[2];
    }
    return C_OTHER;
}

/* What each byte starts, for the scan: most text is ASCII, and one lookup
 * tells a letter or digit from _ and - and from a separator. */
enum { B_SEP = 0, B_WORD = 1, B_UNDERSCORE = 2, B_HYPHEN = 3, B_MULTI = 4 };
static uint8_t byte_kind[256];

static inline int is_ascii_lower_digit(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static inline int is_ascii_upper(uint32_t c) { return c >= 'A' && c <= 'Z'; }
static inline int is_ascii_lower(uint32_t c) { return c >= 'a' && c <= 'z'; }

/* ---- one batch -------------------------------------------------------------------- */

typedef struct {
    uint32_t off, len, count, hash;
} entry_t;

typedef struct {
    uint32_t gen, idx;
} slot_t;

typedef struct {
    int min_t, max_t, max_c, n_buckets;
    /* the record being counted */
    buf_t arena;     /* its distinct tokens' bytes */
    entry_t *entries;
    size_t n_entries, cap_entries;
    slot_t *slots;
    size_t n_slots;  /* a power of two */
    uint32_t gen;
    uint64_t rec_len;
    buf_t low;       /* a lower-cased run or part */
    uint32_t *cps;   /* a run's code points and their byte offsets */
    size_t *cp_at;
    size_t cap_cps;
    /* the batch's rows */
    buf_t out_rid, out_off, out_data, out_tf, out_len, out_bucket;
    size_t rows;
} ctx_t;

static inline uint32_t hash_bytes(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* zlib.crc32, eight bytes a step (slicing-by-8: tokens are short, but every
 * postings row needs its bucket). */
static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;  /* little-endian layout, as on every machine deja runs on (checked at import) */
        c = crc_table[7 * 256 + (lo & 0xFF)] ^ crc_table[6 * 256 + ((lo >> 8) & 0xFF)] ^
            crc_table[5 * 256 + ((lo >> 16) & 0xFF)] ^ crc_table[4 * 256 + (lo >> 24)] ^
            crc_table[3 * 256 + (hi & 0xFF)] ^ crc_table[2 * 256 + ((hi >> 8) & 0xFF)] ^
            crc_table[1 * 256 + ((hi >> 16) & 0xFF)] ^ crc_table[hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static int slots_grow(ctx_t *x) {
    size_t n = x->n_slots ? x->n_slots * 2 : 1024;
    slot_t *s = calloc(n, sizeof(slot_t));
    if (!s) return -1;
    free(x->slots);
    x->slots = s;
    x->n_slots = n;
    x->gen = 1;
    for (size_t k = 0; k < x->n_entries; k++) {
        size_t i = x->entries[k].hash & (n - 1);
        while (s[i].gen == x->gen) i = (i + 1) & (n - 1);
        s[i].gen = x->gen;
        s[i].idx = (uint32_t)k;
    }
    return 0;
}

static void record_start(ctx_t *x) {
    x->arena.n = 0;
    x->n_entries = 0;
    x->rec_len = 0;
    if (++x->gen == 0) { /* wrapped: stamps from 2^32 records ago would look current */
        memset(x->slots, 0, x->n_slots * sizeof(slot_t));
        x->gen = 1;
    }
}

/* One token of the record (already cut to size). */
static int add_token(ctx_t *x, const uint8_t *t, size_t n) {
    x->rec_len++;
    uint32_t h = hash_bytes(t, n);
    size_t mask = x->n_slots - 1, i = h & mask;
    while (x->slots[i].gen == x->gen) {
        entry_t *e = &x->entries[x->slots[i].idx];
        if (e->hash == h && e->len == n && memcmp(x->arena.p + e->off, t, n) == 0) {
            e->count++;
            return 0;
        }
        i = (i + 1) & mask;
    }
    if (x->n_entries == x->cap_entries) {
        size_t cap = x->cap_entries ? x->cap_entries * 2 : 256;
        entry_t *e = realloc(x->entries, cap * sizeof(entry_t));
        if (!e) return -1;
        x->entries = e;
        x->cap_entries = cap;
    }
    if (x->arena.n + n > UINT32_MAX) return -1;
    entry_t *e = &x->entries[x->n_entries];
    e->off = (uint32_t)x->arena.n;
    e->len = (uint32_t)n;
    e->count = 1;
    e->hash = h;
    if (buf_put(&x->arena, t, n)) return -1;
    x->slots[i].gen = x->gen;
    x->slots[i].idx = (uint32_t)x->n_entries;
    x->n_entries++;
    if (x->n_entries * 2 > x->n_slots) return slots_grow(x);
    return 0;
}

/* Rule 6: a token over max_t bytes is cut on code-point boundaries; pieces
 * (and tokens) under min_t bytes are dropped. */
static int add_pieces(ctx_t *x, const uint8_t *t, size_t n) {
    if (n <= (size_t)x->max_t) return n >= (size_t)x->min_t ? add_token(x, t, n) : 0;
    size_t s = 0;
    while (s < n) {
        size_t e = s + (size_t)x->max_t < n ? s + (size_t)x->max_t : n;
        while (e < n && (t[e] & 0xC0) == 0x80) e--;
        if (e - s >= (size_t)x->min_t && add_token(x, t + s, e - s)) return -1;
        s = e;
    }
    return 0;
}

static const char *lower_of(uint32_t cp, size_t *len) {
    Py_ssize_t lo = 0, hi = n_lower - 1;
    while (lo <= hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (cp < lower_cp[mid]) hi = mid - 1;
        else if (cp > lower_cp[mid]) lo = mid + 1;
        else {
            *len = lower_off[mid + 1] - lower_off[mid];
            return lower_data + lower_off[mid];
        }
    }
    return NULL;
}

/* Rule 3 on code points [a, b) of the current run, then rule 6. */
static int add_folded(ctx_t *x, const uint8_t *s, size_t a, size_t b) {
    /* lower-casing at most doubles a code point's bytes (İ, two, becomes i and a
     * combining dot, three) */
    x->low.n = 0;
    if (buf_reserve(&x->low, 2 * (x->cp_at[b] - x->cp_at[a]))) return -1;
    char *o = x->low.p;
    for (size_t k = a; k < b; k++) {
        uint32_t cp = x->cps[k];
        size_t at = x->cp_at[k], len = x->cp_at[k + 1] - at, ll;
        const char *l;
        if (cp < 0x80) {
            *o++ = (char)((cp >= 'A' && cp <= 'Z') ? cp + 32 : cp);
        } else if ((l = lower_of(cp, &ll)) != NULL && ll <= 2 * len) {
            memcpy(o, l, ll);
            o += ll;
        } else if (l != NULL) {  /* (no such letter in Unicode 14; kept safe for a later Python) */
            size_t done = (size_t)(o - x->low.p);
            x->low.n = done;
            if (buf_reserve(&x->low, ll + 2 * (x->cp_at[b] - at))) return -1;
            o = x->low.p + done;
            memcpy(o, l, ll);
            o += ll;
        } else {
            memcpy(o, s + at, len);
            o += len;
        }
    }
    x->low.n = (size_t)(o - x->low.p);
    return add_pieces(x, (const uint8_t *)x->low.p, x->low.n);
}

/* Rule 3 for a run of ASCII only t[0, n) (most runs: no code points to decode), then rule 6. */
static int add_ascii_folded(ctx_t *x, const uint8_t *t, size_t n) {
    x->low.n = 0;
    if (buf_reserve(&x->low, n)) return -1;
    uint8_t *o = (uint8_t *)x->low.p;
    for (size_t i = 0; i < n; i++) o[i] = (uint8_t)(t[i] - 'A') < 26 ? t[i] + 32 : t[i];
    return add_pieces(x, o, n);
}

/* The run s[a, b) as code points in x->cps, with their byte offsets (and the
 * end's) in x->cp_at; their number. */
static Py_ssize_t run_cps(ctx_t *x, const uint8_t *s, size_t a, size_t b) {
    size_t m = 0;
    for (size_t i = a; i < b;) {
        int len;
        uint32_t cp = decode(s, b, i, &len);
        if (m + 2 > x->cap_cps) {
            size_t cap = x->cap_cps ? x->cap_cps * 2 : 1024;
            while (cap < m + 2) cap *= 2;
            uint32_t *c = realloc(x->cps, cap * sizeof(uint32_t));
            if (!c) return -1;
            x->cps = c;
            size_t *o = realloc(x->cp_at, cap * sizeof(size_t));
            if (!o) return -1;
            x->cp_at = o;
            x->cap_cps = cap;
        }
        x->cps[m] = cp;
        x->cp_at[m] = i;
        m++;
        i += len;
    }
    x->cp_at[m] = b;
    return (Py_ssize_t)m;
}

/* Rule 4: the parts of the run in x->cps[0, m), split at _ and - and at ASCII
 * camel boundaries, each without leading marks; none unless it is a compound. */
static int add_parts(ctx_t *x, const uint8_t *s, size_t m) {
    const uint32_t *c = x->cps;
    int compound = 0;
    for (size_t k = 0; k < m && !compound; k++) {
        if (c[k] == '_' || c[k] == '-') compound = 1;
        else if (k + 1 < m && is_ascii_lower_digit(c[k]) && is_ascii_upper(c[k + 1])) compound = 1;
        else if (k + 2 < m && is_ascii_upper(c[k]) && is_ascii_upper(c[k + 1]) && is_ascii_lower(c[k + 2])) compound = 1;
    }
    if (!compound) return 0;
    size_t start = 0;
    int open = 0;
    for (size_t k = 0; k <= m; k++) {
        int sep = k == m || c[k] == '_' || c[k] == '-';
        int camel = !sep && k > 0 && open &&
                    ((is_ascii_lower_digit(c[k - 1]) && is_ascii_upper(c[k])) ||
                     (k + 1 < m && is_ascii_upper(c[k - 1]) && is_ascii_upper(c[k]) && is_ascii_lower(c[k + 1])));
        if ((sep || camel) && open) {
            size_t p = start;
            while (p < k && c[p] >= 0x300 && class_of(c[p]) == C_MARK) p++;  /* no leading marks */
            if (p < k && add_folded(x, s, p, k)) return -1;
            open = 0;
        }
        if (!sep && !open) {
            start = k;
            open = 1;
        }
    }
    return 0;
}

/* Rules 3 and 4 for the run s[a, b) (trailing hyphens already stripped). */
static int add_run(ctx_t *x, const uint8_t *s, size_t a, size_t b, int ascii) {
    if (ascii) {
        if (add_ascii_folded(x, s + a, b - a)) return -1;
        if (b - a > (size_t)x->max_c) return 0;  /* (data, not an identifier: no parts to find) */
        /* a compound holds _, - or a capital: most words hold none */
        size_t i = a;
        while (i < b && s[i] != '_' && s[i] != '-' && !is_ascii_upper(s[i])) i++;
        if (i == b) return 0;
    }
    Py_ssize_t m = run_cps(x, s, a, b);
    if (m < 0) return -1;
    if (!ascii && add_folded(x, s, 0, (size_t)m)) return -1;
    if (b - a > (size_t)x->max_c) return 0;
    return add_parts(x, s, (size_t)m);
}

/* Rule 5: a stretch of bigram characters s[a, b) yields its overlapping pairs. */
static int add_bigrams(ctx_t *x, const uint8_t *s, size_t a, size_t b) {
    int l1, l2;
    decode(s, b, a, &l1);
    if (a + l1 >= b) return add_token(x, s + a, b - a);
    for (size_t i = a; i + l1 < b; i += l1, l1 = l2) {
        decode(s, b, i + l1, &l2);
        if (add_token(x, s + i, l1 + l2)) return -1;
    }
    return 0;
}

static inline int word_at(const uint8_t *s, size_t n, size_t i) {
    if (s[i] < 0x80) return byte_kind[s[i]] == B_WORD;
    int len;
    return class_of(decode(s, n, i, &len)) == C_WORD;
}

/* Rule 2: every run and bigram stretch of one text. */
static int scan(ctx_t *x, const uint8_t *s, size_t n) {
    size_t p = 0;
    while (p < n) {
        int kind = byte_kind[s[p]];
        size_t start = p, q;
        int ascii = 1;
        if (kind != B_MULTI) {
            if (kind == B_WORD) {
                q = p + 1;
            } else if (kind == B_UNDERSCORE) {
                q = p;
                while (q < n && s[q] == '_') q++;
                if (q >= n || !word_at(s, n, q)) { p = q; continue; }
                int len;
                decode(s, n, q, &len);
                q += len;
                ascii = len == 1;
            } else {
                p++;
                continue;
            }
        } else {
            int len;
            uint32_t cp = decode(s, n, p, &len);
            int cl = cp == 0xFFFFFFFFu ? C_OTHER : class_of(cp);
            if (cl == C_BIGRAM) {
                q = p + len;
                while (q < n && s[q] >= 0x80) {
                    int l2;
                    uint32_t cp2 = decode(s, n, q, &l2);
                    if (cp2 == 0xFFFFFFFFu || class_of(cp2) != C_BIGRAM) break;
                    q += l2;
                }
                if (add_bigrams(x, s, p, q)) return -1;
                p = q;
                continue;
            }
            if (cl != C_WORD) {
                p += len;
                continue;
            }
            q = p + len;
            ascii = 0;
        }
        /* the rest of the run: letters, digits, marks, _ and - */
        while (q < n) {
            int k = byte_kind[s[q]];
            if (k != B_MULTI) {
                if (k == B_SEP) break;
                q++;
            } else {
                int len;
                uint32_t cp = decode(s, n, q, &len);
                int cl = cp == 0xFFFFFFFFu ? C_OTHER : class_of(cp);
                if (cl == C_WORD || cl == C_MARK) {
                    q += len;
                    ascii = 0;
                } else break;
            }
        }
        size_t end = q;
        while (end > start && s[end - 1] == '-') end--;
        if (add_run(x, s, start, end, ascii)) return -1;
        p = q;
    }
    return 0;
}

/* The record's rows: distinct tokens in first-seen order. */
static int record_rows(ctx_t *x, int64_t rid) {
    for (size_t k = 0; k < x->n_entries; k++) {
        entry_t *e = &x->entries[k];
        const uint8_t *t = (const uint8_t *)x->arena.p + e->off;
        if (x->out_data.n + e->len > INT32_MAX) return -2;
        int32_t off = (int32_t)(x->out_data.n + e->len);
        int32_t tf = (int32_t)e->count, rl = x->rec_len > INT32_MAX ? INT32_MAX : (int32_t)x->rec_len;
        int32_t bucket = (int32_t)(crc32_of(t, e->len) % (uint32_t)x->n_buckets);
        if (buf_put(&x->out_data, t, e->len) || buf_put(&x->out_off, &off, 4) || buf_put(&x->out_rid, &rid, 8) ||
            buf_put(&x->out_tf, &tf, 4) || buf_put(&x->out_len, &rl, 4) || buf_put(&x->out_bucket, &bucket, 4))
            return -1;
        x->rows++;
    }
    return 0;
}

static void ctx_free(ctx_t *x) {
    buf_free(&x->arena);
    buf_free(&x->low);
    free(x->entries);
    free(x->slots);
    free(x->cps);
    free(x->cp_at);
    buf_free(&x->out_rid);
    buf_free(&x->out_off);
    buf_free(&x->out_data);
    buf_free(&x->out_tf);
    buf_free(&x->out_len);
    buf_free(&x->out_bucket);
}

static PyObject *bytes_of(buf_t *b) { return PyBytes_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->n); }

PyDoc_STRVAR(count_doc,
"count(ids, offsets, data, first, n, large, min_t, max_t, max_c, n_buckets)\n\n"
"Postings rows of n texts. ids: int64 buffer (n values); offsets: the Arrow\n"
"offsets buffer (int64 if large, else int32) read from index first; data:\n"
"the Arrow data buffer. Returns (rows, record_id, offsets, data, tf, rec_len,\n"
"bucket) as bytes: the buffers of Arrow arrays of `rows` values.");

static PyObject *count(PyObject *self, PyObject *args) {
    Py_buffer ids, offs, data;
    Py_ssize_t first, n;
    int large, min_t, max_t, max_c, n_buckets;
    if (!bmp_class) {
        PyErr_SetString(PyExc_RuntimeError, "_tokens.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*y*y*nnpiiii", &ids, &offs, &data, &first, &n, &large, &min_t, &max_t, &max_c,
                          &n_buckets))
        return NULL;
    PyObject *result = NULL;
    size_t w = large ? 8 : 4;
    if (first < 0 || n < 0 || ids.len < (Py_ssize_t)(n * 8) || offs.len < (Py_ssize_t)((first + n + 1) * w) ||
        min_t < 1 || max_t < 4 || max_c < 1 || n_buckets < 1) {
        PyErr_SetString(PyExc_ValueError, "_tokens.count: buffers and sizes do not match");
        goto done;
    }
    const int64_t *id = ids.buf;
    const uint8_t *s = data.buf;
    ctx_t x;
    memset(&x, 0, sizeof x);
    x.min_t = min_t;
    x.max_t = max_t;
    x.max_c = max_c;
    x.n_buckets = n_buckets;
    int rc = 0;
    int32_t zero = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = slots_grow(&x) || buf_put(&x.out_off, &zero, 4) ? -1 : 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        int64_t a, b;
        if (large) {
            a = ((const int64_t *)offs.buf)[first + i];
            b = ((const int64_t *)offs.buf)[first + i + 1];
        } else {
            a = ((const int32_t *)offs.buf)[first + i];
            b = ((const int32_t *)offs.buf)[first + i + 1];
        }
        if (a < 0 || b < a || b > data.len) { rc = -3; break; }
        record_start(&x);
        rc = scan(&x, s + a, (size_t)(b - a));
        if (rc == 0) rc = record_rows(&x, id[i]);
    }
    Py_END_ALLOW_THREADS
    if (rc == -1) PyErr_NoMemory();
    else if (rc == -2) PyErr_SetString(PyExc_OverflowError, "_tokens.count: a batch's tokens pass 2 GiB");
    else if (rc == -3) PyErr_SetString(PyExc_ValueError, "_tokens.count: offsets outside the data buffer");
    else
        result = Py_BuildValue("(nNNNNNN)", (Py_ssize_t)x.rows, bytes_of(&x.out_rid), bytes_of(&x.out_off),
                               bytes_of(&x.out_data), bytes_of(&x.out_tf), bytes_of(&x.out_len),
                               bytes_of(&x.out_bucket));
    ctx_free(&x);
done:
    PyBuffer_Release(&ids);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&data);
    return result;
}

PyDoc_STRVAR(configure_doc,
"configure(bmp, astral, lower_cps, lower_offsets, lower_data)\n\n"
"The character tables, once per process: bmp, 65536 class bytes (0 other,\n"
"1 letter or digit, 2 mark, 3 bigram); astral, uint32 (lo, hi, class)\n"
"triples, sorted; lower_cps, sorted uint32 code points whose folded lower\n"
"case differs; lower_offsets, uint32 offsets into lower_data (UTF-8).\n"
"Later calls change nothing.");

static PyObject *configure(PyObject *self, PyObject *args) {
    Py_buffer bmp, ast, lcp, loff, ldata;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &bmp, &ast, &lcp, &loff, &ldata)) return NULL;
    PyObject *result = NULL;
    if (bmp_class) {  /* configured: count() may be reading the tables right now */
        result = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t nl = lcp.len / 4;
    if (bmp.len != 65536 || ast.len % 12 || lcp.len % 4 || loff.len != (nl + 1) * 4) {
        PyErr_SetString(PyExc_ValueError, "_tokens.configure: malformed tables");
        goto done;
    }
    uint8_t *b = malloc(65536);
    uint32_t *a = malloc(ast.len ? ast.len : 4), *c = malloc(lcp.len ? lcp.len : 4), *o = malloc(loff.len);
    char *d = malloc(ldata.len ? ldata.len : 1);
    if (!b || !a || !c || !o || !d) {
        free(b); free(a); free(c); free(o); free(d);
        PyErr_NoMemory();
        goto done;
    }
    memcpy(b, bmp.buf, 65536);
    memcpy(a, ast.buf, ast.len);
    memcpy(c, lcp.buf, lcp.len);
    memcpy(o, loff.buf, loff.len);
    memcpy(d, ldata.buf, ldata.len);
    if (o[nl] > (uint64_t)ldata.len) {
        free(b); free(a); free(c); free(o); free(d);
        PyErr_SetString(PyExc_ValueError, "_tokens.configure: malformed tables");
        goto done;
    }
    astral = a;
    n_astral = ast.len / 12;
    lower_cp = c;
    lower_off = o;
    lower_data = d;
    n_lower = nl;
    bmp_class = b;  /* last: count() checks it */
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&bmp);
    PyBuffer_Release(&ast);
    PyBuffer_Release(&lcp);
    PyBuffer_Release(&loff);
    PyBuffer_Release(&ldata);
    return result;
}

static PyObject *configured(PyObject *self, PyObject *unused) { return PyBool_FromLong(bmp_class != NULL); }

static PyMethodDef methods[] = {
    {"count", count, METH_VARARGS, count_doc},
    {"configure", configure, METH_VARARGS, configure_doc},
    {"configured", configured, METH_NOARGS, "Whether configure() has run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tokens", "The index's batch tokenizer (see stages/tokenize.py).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__tokens(void) {
    uint32_t one = 1;
    if (*(uint8_t *)&one != 1) {
        PyErr_SetString(PyExc_ImportError, "deja.stages._tokens assumes a little-endian machine");
        return NULL;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_table[t * 256 + i] = (crc_table[(t - 1) * 256 + i] >> 8) ^ crc_table[crc_table[(t - 1) * 256 + i] & 0xFF];
    for (int b = 0; b < 256; b++)
        byte_kind[b] = b >= 0x80 ? B_MULTI : ((b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')) ? B_WORD
                     : b == '_' ? B_UNDERSCORE : b == '-' ? B_HYPHEN : B_SEP;
    return PyModule_Create(&module);
}
