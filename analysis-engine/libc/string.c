//! cpals's models of <string.h>: C over the memory model, linked into a program that calls one
//! of these functions without defining it (`src/frontend/libc.rs` says how). Each model behaves
//! as glibc's function does wherever the behaviour is defined; an access outside its arguments'
//! objects is an out-of-bounds property at the call site. `tests/tests/libc_models.rs` runs each
//! model and glibc on generated inputs and compares them. No headers: `unsigned long` is
//! `size_t` in both data models (LP64 and ILP32).

// @model strlen
unsigned long strlen(const char *s) {
    unsigned long n = 0;
    while (s[n] != 0)
        n++;
    return n;
}

// @model strnlen
unsigned long strnlen(const char *s, unsigned long max) {
    unsigned long n = 0;
    while (n < max && s[n] != 0)
        n++;
    return n;
}

// @model strcmp
// @uses __cpals_compare_result
int strcmp(const char *a, const char *b) {
    unsigned long i = 0;
    while (a[i] != 0 && a[i] == b[i])
        i++;
    return __cpals_compare_result((unsigned char)a[i] - (unsigned char)b[i]);
}

// @model strncmp
// @uses __cpals_compare_result
int strncmp(const char *a, const char *b, unsigned long n) {
    unsigned long i = 0;
    if (n == 0)
        return 0;
    while (i + 1 < n && a[i] != 0 && a[i] == b[i])
        i++;
    return __cpals_compare_result((unsigned char)a[i] - (unsigned char)b[i]);
}

// @model strcpy
char *strcpy(char *dest, const char *src) {
    unsigned long i = 0;
    while (src[i] != 0) {
        dest[i] = src[i];
        i++;
    }
    dest[i] = 0;
    return dest;
}

// @model strncpy
char *strncpy(char *dest, const char *src, unsigned long n) {
    unsigned long i = 0;
    while (i < n && src[i] != 0) {
        dest[i] = src[i];
        i++;
    }
    while (i < n) {
        dest[i] = 0;
        i++;
    }
    return dest;
}

// @model strcat
char *strcat(char *dest, const char *src) {
    unsigned long d = 0;
    unsigned long i = 0;
    while (dest[d] != 0)
        d++;
    while (src[i] != 0) {
        dest[d + i] = src[i];
        i++;
    }
    dest[d + i] = 0;
    return dest;
}

// @model strncat
char *strncat(char *dest, const char *src, unsigned long n) {
    unsigned long d = 0;
    unsigned long i = 0;
    while (dest[d] != 0)
        d++;
    while (i < n && src[i] != 0) {
        dest[d + i] = src[i];
        i++;
    }
    dest[d + i] = 0;
    return dest;
}

// @model strchr
char *strchr(const char *s, int c) {
    unsigned long i = 0;
    while (s[i] != (char)c) {
        if (s[i] == 0)
            return 0;
        i++;
    }
    return (char *)s + i;
}

// @model strrchr
char *strrchr(const char *s, int c) {
    unsigned long i = 0;
    const char *found = 0;
    while (1) {
        if (s[i] == (char)c)
            found = s + i;
        if (s[i] == 0)
            return (char *)found;
        i++;
    }
}

// @model strstr
char *strstr(const char *haystack, const char *needle) {
    unsigned long i = 0;
    while (1) {
        unsigned long j = 0;
        while (needle[j] != 0 && haystack[i + j] == needle[j])
            j++;
        if (needle[j] == 0)
            return (char *)haystack + i;
        if (haystack[i + j] == 0)
            return 0;
        i++;
    }
}

// @model memcpy
// @bytes
void *memcpy(void *dest, const void *src, unsigned long n) {
    unsigned char *d = dest;
    const unsigned char *s = src;
    unsigned long i = 0;
    while (i < n) {
        d[i] = s[i];
        i++;
    }
    return dest;
}

// @model memmove
// @bytes
void *memmove(void *dest, const void *src, unsigned long n) {
    unsigned char *d = dest;
    const unsigned char *s = src;
    unsigned long i = 0;
    if (n == 0)
        return dest;
    /* Backwards when the destination starts after the source (in one object; for two objects
       either direction copies the same bytes). */
    if (d > s) {
        i = n;
        while (i > 0) {
            i--;
            d[i] = s[i];
        }
    } else {
        while (i < n) {
            d[i] = s[i];
            i++;
        }
    }
    return dest;
}

// @model memset
// @bytes
void *memset(void *dest, int c, unsigned long n) {
    unsigned char *d = dest;
    unsigned long i = 0;
    while (i < n) {
        d[i] = (unsigned char)c;
        i++;
    }
    return dest;
}

// @model memcmp
// @bytes
// @uses __cpals_compare_result
int memcmp(const void *a, const void *b, unsigned long n) {
    const unsigned char *x = a;
    const unsigned char *y = b;
    unsigned long i = 0;
    while (i < n) {
        if (x[i] != y[i])
            return __cpals_compare_result(x[i] - y[i]);
        i++;
    }
    return 0;
}

// @model memchr
// @bytes
void *memchr(const void *s, int c, unsigned long n) {
    const unsigned char *p = s;
    unsigned long i = 0;
    while (i < n) {
        if (p[i] == (unsigned char)c)
            return (void *)(p + i);
        i++;
    }
    return 0;
}

// @model __cpals_compare_result
int __cpals_compare_result(int difference) {
    /* Only the sign of a comparison's result is specified (glibc returns the bytes' difference,
       gcc folds constant comparisons to -1, 0 or 1): the magnitude is a value that only its
       sign may decide. */
    int r;
    if (difference == 0)
        return 0;
    r = __cpals_unspecified_int();
    if (difference < 0)
        __VERIFIER_assume(r < 0);
    else
        __VERIFIER_assume(r > 0);
    return r;
}
