//! cpals's model of the program's command line: `main(int argc, char **argv)` gets arguments
//! that are inputs of the program (issue 23). The CFA builder's start function calls
//! `__cpals_argc()` and `__cpals_argv()` for `main`'s first two parameters when `main` has
//! them (`src/frontend/models.rs` links this file then). The inputs are the number of
//! arguments and their bytes (`__cpals_arg_*`: the count, then 8 bytes per string, which the CFA builder treats like
//! `__VERIFIER_nondet_*`), and `harness.rs` turns a counterexample's inputs back into the
//! command line (`argv[1] = "48"`) and passes it to the program when it replays it.
//!
//! The model is bounded: 1 <= argc <= 3 (argv[0], the program's name, and at most two
//! arguments), each string of at most 8 bytes, NUL-terminated, argv[argc] == NULL. The bytes
//! are straight-line code (no loops, no branches), so that the analyses see the strings as
//! constants of the path. Proofs hold for command lines within these bounds (the report says so).

// @model __cpals_argc
/* The strings (8 bytes and the NUL each) and the array argv points to. */
char __cpals_arg_text0[9];
char __cpals_arg_text1[9];
char __cpals_arg_text2[9];
char *__cpals_arg_list[4];
int __cpals_arg_count(void);
char __cpals_arg_byte(void);
void __cpals_assume(int);

/* A string's 8 bytes (a NUL among them ends it earlier) and the NUL after them: no branches,
   so that a path fixes no string's length (the shortest is the one a counterexample shows).
   Constant indices: nothing to check. */
void __cpals_arg_fill0(void) {
    __cpals_arg_text0[0] = __cpals_arg_byte();
    __cpals_arg_text0[1] = __cpals_arg_byte();
    __cpals_arg_text0[2] = __cpals_arg_byte();
    __cpals_arg_text0[3] = __cpals_arg_byte();
    __cpals_arg_text0[4] = __cpals_arg_byte();
    __cpals_arg_text0[5] = __cpals_arg_byte();
    __cpals_arg_text0[6] = __cpals_arg_byte();
    __cpals_arg_text0[7] = __cpals_arg_byte();
    __cpals_arg_text0[8] = 0;
}

void __cpals_arg_fill1(void) {
    __cpals_arg_text1[0] = __cpals_arg_byte();
    __cpals_arg_text1[1] = __cpals_arg_byte();
    __cpals_arg_text1[2] = __cpals_arg_byte();
    __cpals_arg_text1[3] = __cpals_arg_byte();
    __cpals_arg_text1[4] = __cpals_arg_byte();
    __cpals_arg_text1[5] = __cpals_arg_byte();
    __cpals_arg_text1[6] = __cpals_arg_byte();
    __cpals_arg_text1[7] = __cpals_arg_byte();
    __cpals_arg_text1[8] = 0;
}

void __cpals_arg_fill2(void) {
    __cpals_arg_text2[0] = __cpals_arg_byte();
    __cpals_arg_text2[1] = __cpals_arg_byte();
    __cpals_arg_text2[2] = __cpals_arg_byte();
    __cpals_arg_text2[3] = __cpals_arg_byte();
    __cpals_arg_text2[4] = __cpals_arg_byte();
    __cpals_arg_text2[5] = __cpals_arg_byte();
    __cpals_arg_text2[6] = __cpals_arg_byte();
    __cpals_arg_text2[7] = __cpals_arg_byte();
    __cpals_arg_text2[8] = 0;
}

/* `argc`, with the strings of argv filled in. */
int __cpals_argc(void) {
    int n = __cpals_arg_count();
    __cpals_assume(n >= 1 && n <= 3);
    __cpals_arg_fill0();
    __cpals_arg_list[0] = __cpals_arg_text0;
    __cpals_arg_list[1] = 0;
    __cpals_arg_list[2] = 0;
    __cpals_arg_list[3] = 0;
    if (n >= 2) {
        __cpals_arg_fill1();
        __cpals_arg_list[1] = __cpals_arg_text1;
    }
    if (n >= 3) {
        __cpals_arg_fill2();
        __cpals_arg_list[2] = __cpals_arg_text2;
    }
    return n;
}

// @model __cpals_argv
// @uses __cpals_argc
/* `argv` (after `__cpals_argc()`). */
char **__cpals_argv(void) {
    return __cpals_arg_list;
}
