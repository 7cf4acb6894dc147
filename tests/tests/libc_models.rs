//! The C library models against glibc (issue 23): every model cpals links into programs
//! (`analysis_engine::frontend::models`) is compiled, renamed `cpals_model_NAME`, together with
//! a driver that runs each model and glibc's function on the same generated inputs (strings
//! with high bytes, every `int` a `<ctype.h>` function accepts, numbers with signs, prefixes,
//! bases and overflows, overlapping buffers) and compares results, written buffers and end
//! pointers. Comparison functions are compared by sign only (the magnitude is unspecified and
//! the models leave it so). The program runs in cpals's sandbox, for LP64 and, where the
//! machine has 32-bit libraries, ILP32.

use std::path::Path;
use std::time::Duration;

use analysis_engine::frontend::models::{models, scanf_format, sscanf_name, sscanf_text};
use analysis_engine::sandbox::{self, End, TempDir};

/// Renames the models and gives the sign-only comparison its native form: the units as the
/// verifier links them, except `__cpals_compare_result`, whose unspecified magnitude only the
/// verifier can express (natively: the sign).
fn models_source() -> String {
    let mut text = String::new();
    // Standard input's models (`stdio.c`) and the command line's (`args.c`) read inputs of the
    // analysis, not bytes glibc could be given here: `tests/tests/inputs.rs` checks them by
    // replaying their counterexamples against glibc's `scanf`, `getchar` and `fgets`, and a
    // real `main`.
    let compared = || models().values().filter(|m| m.file != "stdio.c" && m.file != "args.c");
    for m in compared() {
        if m.name != "__cpals_compare_result" {
            text.push_str(&format!("#define {} cpals_model_{}\n", m.name, m.name));
        }
    }
    text.push_str("static int __cpals_compare_result(int d) { return d < 0 ? -1 : d > 0; }\n");
    for m in compared().filter(|m| m.name != "__cpals_compare_result") {
        text.push_str(&m.text);
    }
    // The generated `sscanf` models of the formats the driver compares (their own names).
    for f in SSCANF_FORMATS {
        let convs = scanf_format(f.as_bytes()).unwrap_or_else(|| panic!("{f} is modelled"));
        text.push_str(&sscanf_text(&sscanf_name(&convs)).expect("a generated model"));
    }
    // Scan sets: their names hold the set, so each gets a wrapper the driver can name
    // (`cpals_set_K(s, a, b)`, the second buffer unused for one conversion).
    for (k, f) in SSCANF_SETS.iter().enumerate() {
        let convs = scanf_format(f.as_bytes()).unwrap_or_else(|| panic!("{f} is modelled"));
        let name = sscanf_name(&convs);
        text.push_str(&sscanf_text(&name).expect("a generated model"));
        let args = if convs.len() == 2 { "s, a, b" } else { "s, a" };
        text.push_str(&format!("int cpals_set_{k}(const char *s, char *a, char *b) {{ (void)b; return {name}({args}); }}\n"));
    }
    text
}

/// The `sscanf` formats with scan sets the driver compares (`cpals_set_K`, in this order).
const SSCANF_SETS: [&str; 5] = ["%[a-z]", "%3[^ ,]", "%[]a-]", "%[0-9]%[^0-9]", "%2[^\t]%c"];

/// The `sscanf` formats the driver compares (`scanning()`).
const SSCANF_FORMATS: [&str; 16] =
    ["%d", "%i", "%u", "%x", "%o", "%hhd", "%hu", "%ld", "%lli", "%llx", "%c", "%3s", "%d%c", "%x %3s", "%i%i", "%s %d"];

/// The driver: declarations of the renamed models, the inputs, and a check per function.
const DRIVER: &str = r#"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned long cpals_model_strlen(const char *);
unsigned long cpals_model_strnlen(const char *, unsigned long);
int cpals_model_strcmp(const char *, const char *);
int cpals_model_strncmp(const char *, const char *, unsigned long);
char *cpals_model_strcpy(char *, const char *);
char *cpals_model_strncpy(char *, const char *, unsigned long);
char *cpals_model_strcat(char *, const char *);
char *cpals_model_strncat(char *, const char *, unsigned long);
char *cpals_model_strchr(const char *, int);
char *cpals_model_strrchr(const char *, int);
char *cpals_model_strstr(const char *, const char *);
void *cpals_model_memcpy(void *, const void *, unsigned long);
void *cpals_model_memmove(void *, const void *, unsigned long);
void *cpals_model_memset(void *, int, unsigned long);
int cpals_model_memcmp(const void *, const void *, unsigned long);
void *cpals_model_memchr(const void *, int, unsigned long);
long cpals_model_strtol(const char *, char **, int);
unsigned long cpals_model_strtoul(const char *, char **, int);
long long cpals_model_strtoll(const char *, char **, int);
unsigned long long cpals_model_strtoull(const char *, char **, int);
int cpals_model_atoi(const char *);
long cpals_model_atol(const char *);
long long cpals_model_atoll(const char *);
void cpals_model_qsort(void *, unsigned long, unsigned long, int (*)(const void *, const void *));
void *cpals_model_bsearch(const void *, const void *, unsigned long, unsigned long, int (*)(const void *, const void *));
int cpals_model_tolower(int);
int cpals_model_toupper(int);
#define CTYPE(f) int cpals_model_##f(int);
CTYPE(isalnum) CTYPE(isalpha) CTYPE(isblank) CTYPE(iscntrl) CTYPE(isdigit) CTYPE(isgraph)
CTYPE(islower) CTYPE(isprint) CTYPE(ispunct) CTYPE(isspace) CTYPE(isupper) CTYPE(isxdigit)

static long checks, failures;

static void fail(const char *what, const char *input, long long got, long long want) {
    failures++;
    if (failures <= 12)
        fprintf(stderr, "cpals-libc: %s on \"%s\": model %lld, glibc %lld\n", what, input, got, want);
}

#define CHECK(what, input, got, want) do { long long g_ = (long long)(got), w_ = (long long)(want); checks++; \
    if (g_ != w_) fail(what, input, g_, w_); } while (0)
static int sign(long long v) { return v < 0 ? -1 : v > 0; }

static unsigned long long seed = 88172645463325252ULL;
static unsigned next(void) { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return (unsigned)(seed >> 11); }

#define NSTR 96
static char strs[NSTR][40];

static void make_strings(void) {
    static const char *fixed[] = { "", "a", "abc", "abd", "ab", "abcabc", "hello", "haystack", "st", "sx",
        "\x80", "\xff\x01", "a\xe9z", "  -42xyz", "+5", "0x1f;", "0X", "0x", "0xg", "-0x10", "777", "08",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "18446744073709551615", "18446744073709551616", "-1", "2147483647", "2147483648", "-2147483649",
        "4294967295", "4294967296", "\t\n\v\f\r 12", "zz", "ZZ", "1a", " +-3", "- 3", "00000000000000000000000000123" };
    int n = (int)(sizeof fixed / sizeof fixed[0]);
    for (int i = 0; i < NSTR; i++) {
        if (i < n) {
            strcpy(strs[i], fixed[i]);
            continue;
        }
        int len = (int)(next() % 20);
        static const char alphabet[] = "ab 0129xX+-\t\x80\xff";
        for (int j = 0; j < len; j++)
            strs[i][j] = (next() % 4 == 0) ? (char)(next() % 255 + 1) : alphabet[next() % (sizeof alphabet - 1)];
        strs[i][len] = 0;
    }
}

static void strings(void) {
    for (int i = 0; i < NSTR; i++) {
        const char *a = strs[i];
        CHECK("strlen", a, cpals_model_strlen(a), strlen(a));
        for (unsigned long n = 0; n < 24; n += 3)
            CHECK("strnlen", a, cpals_model_strnlen(a, n), strnlen(a, n));
        for (int j = 0; j < NSTR; j++) {
            const char *b = strs[j];
            CHECK("strcmp", a, cpals_model_strcmp(a, b), sign(strcmp(a, b)));
            for (unsigned long n = 0; n < 6; n++)
                CHECK("strncmp", a, cpals_model_strncmp(a, b, n), sign(strncmp(a, b, n)));
            CHECK("strstr", a, cpals_model_strstr(a, b) ? cpals_model_strstr(a, b) - a : -1, strstr(a, b) ? strstr(a, b) - a : -1);
            char m[96], g[96];
            for (unsigned long n = 0; n < 30; n += 7) {
                memset(m, '#', sizeof m);
                memset(g, '#', sizeof g);
                strcpy(m, b);
                strcpy(g, b);
                CHECK("strncat", a, cpals_model_strncat(m, a, n) - m, strncat(g, a, n) - g);
                CHECK("strncat (buffer)", a, memcmp(m, g, sizeof m), 0);
                memset(m, '#', sizeof m);
                memset(g, '#', sizeof g);
                CHECK("strncpy", a, cpals_model_strncpy(m, a, n) - m, strncpy(g, a, n) - g);
                CHECK("strncpy (buffer)", a, memcmp(m, g, sizeof m), 0);
            }
            memset(m, '#', sizeof m);
            memset(g, '#', sizeof g);
            strcpy(m, b);
            strcpy(g, b);
            CHECK("strcat", a, cpals_model_strcat(m, a) - m, strcat(g, a) - g);
            CHECK("strcat (buffer)", a, memcmp(m, g, sizeof m), 0);
        }
        char m[48], g[48];
        memset(m, '#', sizeof m);
        memset(g, '#', sizeof g);
        CHECK("strcpy", a, cpals_model_strcpy(m, a) - m, strcpy(g, a) - g);
        CHECK("strcpy (buffer)", a, memcmp(m, g, sizeof m), 0);
        static const int cs[] = { 0, 'a', 'b', 'x', '0', -128, 128, -1, 255, 256 + 'a', -256 + 'b', 0x180 };
        for (unsigned k = 0; k < sizeof cs / sizeof cs[0]; k++) {
            int c = cs[k];
            CHECK("strchr", a, cpals_model_strchr(a, c) ? cpals_model_strchr(a, c) - a : -1, strchr(a, c) ? strchr(a, c) - a : -1);
            CHECK("strrchr", a, cpals_model_strrchr(a, c) ? cpals_model_strrchr(a, c) - a : -1, strrchr(a, c) ? strrchr(a, c) - a : -1);
            for (unsigned long n = 0; n <= 20; n += 4)
                CHECK("memchr", a, cpals_model_memchr(a, c, n) ? (char *)cpals_model_memchr(a, c, n) - a : -1,
                      memchr(a, c, n) ? (char *)memchr(a, c, n) - a : -1);
        }
    }
}

static void memory(void) {
    for (int round = 0; round < 400; round++) {
        unsigned char m[48], g[48], src[48];
        for (int i = 0; i < 48; i++)
            src[i] = (unsigned char)next();
        unsigned long n = next() % 20, off = next() % 20, off2 = next() % 20;
        int c = (int)(next() % 1024) - 512;
        memcpy(m, src, sizeof m);
        memcpy(g, src, sizeof g);
        CHECK("memset", "random", (unsigned char *)cpals_model_memset(m + off, c, n) - m, (unsigned char *)memset(g + off, c, n) - g);
        CHECK("memset (buffer)", "random", memcmp(m, g, sizeof m), 0);
        memcpy(m, src, sizeof m);
        memcpy(g, src, sizeof g);
        CHECK("memcpy", "random", (unsigned char *)cpals_model_memcpy(m + off, src + off2, n) - m,
              (unsigned char *)memcpy(g + off, src + off2, n) - g);
        CHECK("memcpy (buffer)", "random", memcmp(m, g, sizeof m), 0);
        memcpy(m, src, sizeof m);
        memcpy(g, src, sizeof g);
        CHECK("memmove", "overlapping", (unsigned char *)cpals_model_memmove(m + off, m + off2, n) - m,
              (unsigned char *)memmove(g + off, g + off2, n) - g);
        CHECK("memmove (buffer)", "overlapping", memcmp(m, g, sizeof m), 0);
        memcpy(m, src, sizeof m);
        if (round % 2)
            m[off2] ^= (unsigned char)(1 + next() % 255);
        CHECK("memcmp", "random", cpals_model_memcmp(m, src, n + off2 + 1), sign(memcmp(m, src, n + off2 + 1)));
    }
}

/* Elements of 1, 2, 4, 8 and 12 bytes; the comparison orders by every byte (as unsigned
   bytes, the last first), so that elements it finds equal are equal and any correct sort,
   stable or not, gives the same array. */
static unsigned long elem_size;
static int by_bytes(const void *a, const void *b) {
    const unsigned char *x = a, *y = b;
    for (unsigned long k = elem_size; k-- > 0;)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

static void sorting(void) {
    static const unsigned long sizes[] = { 1, 2, 4, 8, 12 };
    unsigned char m[16 * 12], g[16 * 12];
    for (int round = 0; round < 400; round++) {
        elem_size = sizes[round % 5];
        unsigned long n = next() % 17;
        /* Few distinct bytes: many equal elements. */
        for (unsigned long i = 0; i < n * elem_size; i++)
            m[i] = g[i] = (unsigned char)(round % 3 == 0 ? next() % 3 : next() % 256);
        char in[8];
        snprintf(in, sizeof in, "%lux%lu", n, elem_size);
        cpals_model_qsort(m, n, elem_size, by_bytes);
        qsort(g, n, elem_size, by_bytes);
        CHECK("qsort", in, memcmp(m, g, n * elem_size), 0);
        /* Search the sorted array for each element and for bytes that may be absent. */
        for (unsigned long i = 0; i <= n; i++) {
            unsigned char key[12];
            for (unsigned long k = 0; k < elem_size; k++)
                key[k] = i < n && next() % 2 ? g[i * elem_size + k] : (unsigned char)(next() % 3);
            unsigned char *hm = cpals_model_bsearch(key, g, n, elem_size, by_bytes);
            unsigned char *hg = bsearch(key, g, n, elem_size, by_bytes);
            /* With equal elements either may be found: both or neither, and equal to the key. */
            CHECK("bsearch (found)", in, hm != 0, hg != 0);
            if (hm)
                CHECK("bsearch (element)", in, by_bytes(hm, key) == 0 && hm >= g && hm < g + n * elem_size && (hm - g) % elem_size == 0, 1);
        }
    }
}

static void classes(void) {
    for (int c = -128; c < 256; c++) {
        char in[8];
        snprintf(in, sizeof in, "%d", c);
#define SAME(f) CHECK(#f, in, cpals_model_##f(c), (f)(c));
        SAME(isalnum) SAME(isalpha) SAME(isblank) SAME(iscntrl) SAME(isdigit) SAME(isgraph)
        SAME(islower) SAME(isprint) SAME(ispunct) SAME(isspace) SAME(isupper) SAME(isxdigit)
        SAME(tolower) SAME(toupper)
    }
    static const int far[] = { -100000, -129, 256, 1000, 1 << 20 };
    for (unsigned k = 0; k < sizeof far / sizeof far[0]; k++) {
        char in[16];
        snprintf(in, sizeof in, "%d", far[k]);
        CHECK("tolower", in, cpals_model_tolower(far[k]), (tolower)(far[k]));
        CHECK("toupper", in, cpals_model_toupper(far[k]), (toupper)(far[k]));
    }
}

static void numbers(void) {
    static const int bases[] = { 0, 2, 8, 10, 16, 36, 1, 37, -1 };
    for (int i = 0; i < NSTR; i++) {
        const char *s = strs[i];
        CHECK("atoi", s, cpals_model_atoi(s), atoi(s));
        CHECK("atol", s, cpals_model_atol(s), atol(s));
        CHECK("atoll", s, cpals_model_atoll(s), atoll(s));
        for (unsigned k = 0; k < sizeof bases / sizeof bases[0]; k++) {
            int b = bases[k];
            char *me = (char *)1, *ge = (char *)1;
            CHECK("strtol", s, cpals_model_strtol(s, &me, b), strtol(s, &ge, b));
            CHECK("strtol (end)", s, me - s, ge - s);
            me = ge = (char *)1;
            CHECK("strtoul", s, (long long)cpals_model_strtoul(s, &me, b), (long long)strtoul(s, &ge, b));
            CHECK("strtoul (end)", s, me - s, ge - s);
            me = ge = (char *)1;
            CHECK("strtoll", s, cpals_model_strtoll(s, &me, b), strtoll(s, &ge, b));
            CHECK("strtoll (end)", s, me - s, ge - s);
            me = ge = (char *)1;
            CHECK("strtoull", s, (long long)cpals_model_strtoull(s, &me, b), (long long)strtoull(s, &ge, b));
            CHECK("strtoull (end)", s, me - s, ge - s);
            CHECK("strtol (no end)", s, cpals_model_strtol(s, 0, b), strtol(s, 0, b));
        }
    }
}

/* The `sscanf` models: a number beyond what they model exactly is any value (the analysis's
   `__cpals_stdin_unmodelled`), which is then not compared. */
static int cpals_unmodelled;
long long __cpals_stdin_unmodelled(void) { cpals_unmodelled = 1; return 0; }
int __cpals_sscanf_d(const char *, int *);
int __cpals_sscanf_i(const char *, int *);
int __cpals_sscanf_u(const char *, unsigned *);
int __cpals_sscanf_x(const char *, unsigned *);
int __cpals_sscanf_o(const char *, unsigned *);
int __cpals_sscanf_hhd(const char *, signed char *);
int __cpals_sscanf_hu(const char *, unsigned short *);
int __cpals_sscanf_ld(const char *, long *);
int __cpals_sscanf_lli(const char *, long long *);
int __cpals_sscanf_llx(const char *, unsigned long long *);
int __cpals_sscanf_c(const char *, char *);
int __cpals_sscanf_s3(const char *, char *);
int __cpals_sscanf_d_c(const char *, int *, char *);
int __cpals_sscanf_x_s3(const char *, unsigned *, char *);
int __cpals_sscanf_i_i(const char *, int *, int *);
int __cpals_sscanf_s_d(const char *, char *, int *);
int cpals_set_0(const char *, char *, char *);
int cpals_set_1(const char *, char *, char *);
int cpals_set_2(const char *, char *, char *);
int cpals_set_3(const char *, char *, char *);
int cpals_set_4(const char *, char *, char *);

static void scanning(void) {
    for (int i = 0; i < NSTR; i++) {
        const char *s = strs[i];
#define SCAN1(fmt, name, T) { T m = (T)0x5a, g = (T)0x5a; cpals_unmodelled = 0; \
        int rm = __cpals_sscanf_##name(s, &m), rg = sscanf(s, fmt, &g); CHECK("sscanf " fmt, s, rm, rg); \
        if (!cpals_unmodelled) CHECK("sscanf " fmt " (value)", s, (long long)m, (long long)g); }
        SCAN1("%d", d, int) SCAN1("%i", i, int) SCAN1("%u", u, unsigned) SCAN1("%x", x, unsigned)
        SCAN1("%o", o, unsigned) SCAN1("%hhd", hhd, signed char) SCAN1("%hu", hu, unsigned short)
        SCAN1("%ld", ld, long) SCAN1("%lli", lli, long long) SCAN1("%llx", llx, unsigned long long)
        SCAN1("%c", c, char)
        char wm[48], wg[48];
        memset(wm, '#', sizeof wm);
        memset(wg, '#', sizeof wg);
        CHECK("sscanf %3s", s, __cpals_sscanf_s3(s, wm), sscanf(s, "%3s", wg));
        CHECK("sscanf %3s (buffer)", s, memcmp(wm, wg, sizeof wm), 0);
        {
            int nm = 7, ng = 7;
            char cm = '?', cg = '?';
            cpals_unmodelled = 0;
            CHECK("sscanf %d%c", s, __cpals_sscanf_d_c(s, &nm, &cm), sscanf(s, "%d%c", &ng, &cg));
            if (!cpals_unmodelled)
                CHECK("sscanf %d%c (number)", s, nm, ng);
            CHECK("sscanf %d%c (byte)", s, cm, cg);
        }
        {
            unsigned um = 7, ug = 7;
            memset(wm, '#', sizeof wm);
            memset(wg, '#', sizeof wg);
            cpals_unmodelled = 0;
            CHECK("sscanf %x %3s", s, __cpals_sscanf_x_s3(s, &um, wm), sscanf(s, "%x %3s", &ug, wg));
            if (!cpals_unmodelled)
                CHECK("sscanf %x %3s (number)", s, um, ug);
            CHECK("sscanf %x %3s (buffer)", s, memcmp(wm, wg, sizeof wm), 0);
        }
        {
            int am = 7, ag = 7, bm = 7, bg = 7;
            cpals_unmodelled = 0;
            CHECK("sscanf %i%i", s, __cpals_sscanf_i_i(s, &am, &bm), sscanf(s, "%i%i", &ag, &bg));
            if (!cpals_unmodelled)
                CHECK("sscanf %i%i (numbers)", s, (long long)am * 4294967296LL + bm, (long long)ag * 4294967296LL + bg);
        }
        {
            int nm = 7, ng = 7;
            memset(wm, '#', sizeof wm);
            memset(wg, '#', sizeof wg);
            cpals_unmodelled = 0;
            CHECK("sscanf %s %d", s, __cpals_sscanf_s_d(s, wm, &nm), sscanf(s, "%s %d", wg, &ng));
            CHECK("sscanf %s %d (buffer)", s, memcmp(wm, wg, sizeof wm), 0);
            if (!cpals_unmodelled)
                CHECK("sscanf %s %d (number)", s, nm, ng);
        }
    }
    {
        static const char *sets[] = { "%[a-z]", "%3[^ ,]", "%[]a-]", "%[0-9]%[^0-9]", "%2[^\t]%c" };
        int (*models[])(const char *, char *, char *) = { cpals_set_0, cpals_set_1, cpals_set_2, cpals_set_3, cpals_set_4 };
        for (int i = 0; i < NSTR; i++) {
            const char *s = strs[i];
            for (int k = 0; k < 5; k++) {
                char am[48], ag[48], bm[48], bg[48];
                memset(am, '#', sizeof am);
                memset(ag, '#', sizeof ag);
                memset(bm, '#', sizeof bm);
                memset(bg, '#', sizeof bg);
                CHECK(sets[k], s, models[k](s, am, bm), sscanf(s, sets[k], ag, bg));
                CHECK(sets[k], s, memcmp(am, ag, sizeof am), 0);
                CHECK(sets[k], s, memcmp(bm, bg, sizeof bm), 0);
            }
        }
    }
    static const char *more[] = { "12 ab", "0x", "0xg", "-", "5 -", "5 ", "5 x", "+0X1f", "  abcdefg", "-0", "0x-1", "1e5", "077 9" };
    for (unsigned k = 0; k < sizeof more / sizeof more[0]; k++) {
        const char *s = more[k];
        SCAN1("%d", d, int) SCAN1("%i", i, int) SCAN1("%x", x, unsigned) SCAN1("%o", o, unsigned) SCAN1("%c", c, char)
        int nm = 7, ng = 7;
        char cm = '?', cg = '?';
        CHECK("sscanf %d%c", s, __cpals_sscanf_d_c(s, &nm, &cm), sscanf(s, "%d%c", &ng, &cg));
        CHECK("sscanf %d%c (number)", s, nm, ng);
        CHECK("sscanf %d%c (byte)", s, cm, cg);
    }
}

int main(void) {
    make_strings();
    scanning();
    strings();
    memory();
    sorting();
    classes();
    numbers();
    fprintf(stderr, "cpals-libc: %ld checks, %ld failures\n", checks, failures);
    return failures != 0;
}
"#;

/// Compiles the models and the driver (`extra`: `-m32` for ILP32) and runs them in the sandbox;
/// `None` when the machine cannot compile for that target.
fn run(extra: &[&str]) -> Option<(End, Vec<String>)> {
    let dir = TempDir::new().expect("a temporary folder");
    let models = dir.path().join("models.c");
    let driver = dir.path().join("driver.c");
    std::fs::write(&models, models_source()).expect("write the models");
    std::fs::write(&driver, DRIVER).expect("write the driver");
    let mut flags = vec!["-O0", "-std=gnu11", "-w", "-fno-builtin"];
    flags.extend_from_slice(extra);
    let sources: [&Path; 2] = [&models, &driver];
    match sandbox::compile(dir, &sources, &flags, &|| false) {
        Ok(exe) => {
            let r = sandbox::run(&exe, Duration::from_secs(60), "cpals-libc:", &|| false).expect("the sandboxed run");
            Some((r.end, r.marked))
        }
        Err(why) if !extra.is_empty() => {
            eprintln!("skipped {extra:?}: {why}");
            None
        }
        Err(why) => panic!("the models and the driver do not compile: {why}"),
    }
}

fn check(extra: &[&str]) {
    let Some((end, lines)) = run(extra) else { return };
    let summary = lines.last().cloned().unwrap_or_default();
    assert!(end == End::Exited(0) && summary.ends_with(" 0 failures"), "{extra:?}: {end:?}\n{}", lines.join("\n"));
    // The driver really compared something.
    let checks: u64 = summary.trim_start_matches("cpals-libc: ").split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(checks > 100_000, "only {checks} checks: {summary}");
}

#[test]
fn models_behave_as_glibc_lp64() {
    check(&[]);
}

#[test]
fn models_behave_as_glibc_ilp32() {
    check(&["-m32"]);
}
