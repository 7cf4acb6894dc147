//! cpals's model of standard input (<stdio.h>'s `getchar`, `getc`/`fgetc` on `stdin`, `fgets`
//! and `fread` on `stdin`; `scanf`'s conversions are generated per format by `src/frontend/models.rs` from
//! the helpers here). The input is what the user types: its bytes and its numbers are inputs of
//! the program (`__cpals_stdin_*`, which the CFA builder treats like `__VERIFIER_nondet_*`),
//! and `harness.rs` turns a counterexample's inputs back into the text (`stdin: "5\n"`).
//!
//! The model is exact where it tracks the stream and says so where it does not: after a
//! number, the next byte is one that does not continue it (glibc reads digits greedily); after
//! a word of `%s`, white space or the end; the end of input is sticky (glibc >= 2.28). After a
//! conversion fails on a byte it cannot use, what that byte is and what later reads return is
//! not tracked: those values are unmodelled (`__cpals_stdin_unmodelled`, any value, never
//! confirming a counterexample), so proofs stay sound and violations stay exact.

// @model __cpals_stdin_state
/* 0: between tokens; 1: after a number (the next byte does not continue it, see
   __cpals_in_base); 2: at the end of the input; 3: after a failed conversion (not tracked);
   4: after a word of `%s` (the next byte is white space). */
int __cpals_in_state;
/* After a number: 8 (octal digits continue it), 10 (decimal) or 16 (hexadecimal). */
int __cpals_in_base;
int __cpals_stdin_end(void);
int __cpals_stdin_byte(void);
int __cpals_stdin_outcome(void);
int __cpals_stdin_more(void);
long long __cpals_stdin_unmodelled(void);
void __cpals_assume(int);

// @model __cpals_stdin_next
// @uses __cpals_stdin_state
/* What a conversion that skips white space finds: 0 a token, 1 a byte it cannot use (a
   matching failure: not tracked afterwards), 2 the end of the input. `can_fail` is 0 for
   `%s`, which takes any byte but white space. */
int __cpals_stdin_next(int can_fail) {
    int o;
    if (__cpals_in_state == 2)
        return 2;
    if (__cpals_in_state == 3) {
        o = (int)__cpals_stdin_unmodelled();
        if (o < 0 || o > 2)
            o = 1;
        if (o == 2)
            __cpals_in_state = 2;
        return o;
    }
    o = __cpals_stdin_outcome();
    __cpals_assume(o >= 0 && o <= 2);
    if (!can_fail)
        __cpals_assume(o != 1);
    if (o == 1)
        __cpals_in_state = 3;
    if (o == 2)
        __cpals_in_state = 2;
    return o;
}

// @model getchar
// @uses __cpals_stdin_state
int getchar(void) {
    int c;
    if (__cpals_in_state == 2)
        return -1;
    if (__cpals_in_state == 3) {
        c = (int)__cpals_stdin_unmodelled();
        if (c < -1 || c > 255)
            c = -1;
        return c;
    }
    if (__cpals_stdin_end() != 0) {
        __cpals_in_state = 2;
        return -1;
    }
    c = __cpals_stdin_byte();
    __cpals_assume(c >= 0 && c <= 255);
    if (__cpals_in_state == 1) {
        __cpals_assume(!(c >= '0' && c <= '7'));
        if (__cpals_in_base >= 10)
            __cpals_assume(!(c >= '8' && c <= '9'));
        if (__cpals_in_base == 16)
            __cpals_assume(!((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
    }
    if (__cpals_in_state == 4)
        __cpals_assume(c == ' ' || (c >= '\t' && c <= '\r'));
    __cpals_in_state = 0;
    return c;
}

// @model __cpals_fgets_stdin
// @uses getchar
/* `fgets(s, n, stdin)`: up to n - 1 bytes, up to and including a newline; NULL when the
   input ends before any byte (s unchanged). */
char *__cpals_fgets_stdin(char *s, int n) {
    int i = 0;
    int c = 0;
    if (n <= 0)
        return 0;
    while (i < n - 1) {
        c = getchar();
        if (c == -1)
            break;
        s[i] = (char)c;
        i++;
        if (c == '\n')
            break;
    }
    if (i == 0 && c == -1)
        return 0;
    s[i] = 0;
    return s;
}

// @model __cpals_fread_stdin
// @uses getchar
/* `fread(p, size, n, stdin)` into bytes: up to size * n bytes, fewer when the input ends;
   the number of whole items read. */
unsigned long __cpals_fread_stdin(char *p, unsigned long size, unsigned long n) {
    unsigned long i = 0;
    unsigned long total;
    int c;
    if (size == 0 || n == 0)
        return 0;
    total = size * n;
    while (i < total) {
        c = getchar();
        if (c == -1)
            break;
        p[i] = (char)c;
        i++;
    }
    return i / size;
}
