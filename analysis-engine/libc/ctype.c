//! cpals's models of <ctype.h> in the C locale, as glibc has them: the classification table
//! that glibc's macros read through `__ctype_b_loc()` (copied from glibc's table; the entries
//! for -128 … 255, so an argument outside that range is an out-of-bounds access, as it is in
//! glibc), the functions that read it, and `tolower`/`toupper`. Linked as
//! `src/frontend/libc.rs` says; `tests/tests/libc_models.rs` compares them with glibc.

// @model __ctype_b_loc
static const unsigned short __cpals_ctype_table[384] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 8195, 8194, 8194, 8194, 8194, 2, 2,
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    24577, 49156, 49156, 49156, 49156, 49156, 49156, 49156, 49156, 49156, 49156, 49156, 49156, 49156, 49156, 49156,
    55304, 55304, 55304, 55304, 55304, 55304, 55304, 55304, 55304, 55304, 49156, 49156, 49156, 49156, 49156, 49156,
    49156, 54536, 54536, 54536, 54536, 54536, 54536, 50440, 50440, 50440, 50440, 50440, 50440, 50440, 50440, 50440,
    50440, 50440, 50440, 50440, 50440, 50440, 50440, 50440, 50440, 50440, 50440, 49156, 49156, 49156, 49156, 49156,
    49156, 54792, 54792, 54792, 54792, 54792, 54792, 50696, 50696, 50696, 50696, 50696, 50696, 50696, 50696, 50696,
    50696, 50696, 50696, 50696, 50696, 50696, 50696, 50696, 50696, 50696, 50696, 49156, 49156, 49156, 49156, 2,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};
static const unsigned short *__cpals_ctype_b = __cpals_ctype_table + 128;
const unsigned short **__ctype_b_loc(void) {
    return &__cpals_ctype_b;
}

// @model isalnum
// @uses __ctype_b_loc
int isalnum(int c) {
    return (*__ctype_b_loc())[c] & 8;
}

// @model isalpha
// @uses __ctype_b_loc
int isalpha(int c) {
    return (*__ctype_b_loc())[c] & 1024;
}

// @model isblank
// @uses __ctype_b_loc
int isblank(int c) {
    return (*__ctype_b_loc())[c] & 1;
}

// @model iscntrl
// @uses __ctype_b_loc
int iscntrl(int c) {
    return (*__ctype_b_loc())[c] & 2;
}

// @model isdigit
// @uses __ctype_b_loc
int isdigit(int c) {
    return (*__ctype_b_loc())[c] & 2048;
}

// @model isgraph
// @uses __ctype_b_loc
int isgraph(int c) {
    return (*__ctype_b_loc())[c] & 32768;
}

// @model islower
// @uses __ctype_b_loc
int islower(int c) {
    return (*__ctype_b_loc())[c] & 512;
}

// @model isprint
// @uses __ctype_b_loc
int isprint(int c) {
    return (*__ctype_b_loc())[c] & 16384;
}

// @model ispunct
// @uses __ctype_b_loc
int ispunct(int c) {
    return (*__ctype_b_loc())[c] & 4;
}

// @model isspace
// @uses __ctype_b_loc
int isspace(int c) {
    return (*__ctype_b_loc())[c] & 8192;
}

// @model isupper
// @uses __ctype_b_loc
int isupper(int c) {
    return (*__ctype_b_loc())[c] & 256;
}

// @model isxdigit
// @uses __ctype_b_loc
int isxdigit(int c) {
    return (*__ctype_b_loc())[c] & 4096;
}

// @model tolower
int tolower(int c) {
    /* glibc's table maps -128 … -2 to the unsigned character's value. */
    if (c >= 'A' && c <= 'Z')
        return c + ('a' - 'A');
    if (c >= -128 && c < -1)
        return c + 256;
    return c;
}

// @model toupper
int toupper(int c) {
    if (c >= 'a' && c <= 'z')
        return c - ('a' - 'A');
    if (c >= -128 && c < -1)
        return c + 256;
    return c;
}
