//! cpals's models of <stdlib.h>'s string conversions (`atoi`, `atol`, `atoll`, `strtol`,
//! `strtoul`) in the C locale, as glibc behaves: leading white space, a sign, the base's digits,
//! saturation at the type's limits (`errno` is not modelled: a program that reads it calls an
//! external). `abs`, `labs`, `llabs`, `malloc` and its family, `exit` and `abort` are built into
//! the CFA builder. Linked as `src/frontend/libc.rs` says; `tests/tests/libc_models.rs`
//! compares them with glibc. Each function is a copy of one conversion on purpose: a model
//! calls no model that can violate a property, so that every out-of-bounds access is shown
//! at the user's call (the test checks each copy).

// @model strtol
long strtol(const char *s, char **end, int base) {
    unsigned long long __max = (unsigned long)-1 >> 1;
    unsigned long i = 0;
    unsigned long start;
    int negative = 0;
    int overflow = 0;
    unsigned long long acc = 0;
    unsigned long long limit;
    if (base < 0 || base == 1 || base > 36)
        return 0; /* glibc: EINVAL, `*end` not set */
    while (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
        i++;
    if (s[i] == '-') {
        negative = 1;
        i++;
    } else if (s[i] == '+') {
        i++;
    }
    if ((base == 0 || base == 16) && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')
        && ((s[i + 2] >= '0' && s[i + 2] <= '9') || (s[i + 2] >= 'a' && s[i + 2] <= 'f') || (s[i + 2] >= 'A' && s[i + 2] <= 'F'))) {
        base = 16;
        i += 2;
    } else if (base == 0) {
        base = s[i] == '0' ? 8 : 10;
    }
    limit = negative ? __max + 1 : __max;
    start = i;
    while (1) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'z')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            d = c - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (limit - d) / base)
            overflow = 1;
        else
            acc = acc * base + d;
        i++;
    }
    if (i == start) {
        if (end != 0)
            *end = (char *)s;
        return 0;
    }
    if (end != 0)
        *end = (char *)s + i;
    if (overflow)
        return (long)(negative ? -__max - 1 : __max);
    return (long)(negative ? -acc : acc);
}

// @model strtoul
unsigned long strtoul(const char *s, char **end, int base) {
    unsigned long long __max = (unsigned long)-1;
    unsigned long i = 0;
    unsigned long start;
    int negative = 0;
    int overflow = 0;
    unsigned long long acc = 0;
    unsigned long long limit;
    if (base < 0 || base == 1 || base > 36)
        return 0; /* glibc: EINVAL, `*end` not set */
    while (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
        i++;
    if (s[i] == '-') {
        negative = 1;
        i++;
    } else if (s[i] == '+') {
        i++;
    }
    if ((base == 0 || base == 16) && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')
        && ((s[i + 2] >= '0' && s[i + 2] <= '9') || (s[i + 2] >= 'a' && s[i + 2] <= 'f') || (s[i + 2] >= 'A' && s[i + 2] <= 'F'))) {
        base = 16;
        i += 2;
    } else if (base == 0) {
        base = s[i] == '0' ? 8 : 10;
    }
    limit = __max;
    start = i;
    while (1) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'z')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            d = c - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (limit - d) / base)
            overflow = 1;
        else
            acc = acc * base + d;
        i++;
    }
    if (i == start) {
        if (end != 0)
            *end = (char *)s;
        return 0;
    }
    if (end != 0)
        *end = (char *)s + i;
    if (overflow)
        return (unsigned long)(__max);
    return (unsigned long)(negative ? -acc : acc);
}

// @model strtoll
long long strtoll(const char *s, char **end, int base) {
    unsigned long long __max = (unsigned long long)-1 >> 1;
    unsigned long i = 0;
    unsigned long start;
    int negative = 0;
    int overflow = 0;
    unsigned long long acc = 0;
    unsigned long long limit;
    if (base < 0 || base == 1 || base > 36)
        return 0; /* glibc: EINVAL, `*end` not set */
    while (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
        i++;
    if (s[i] == '-') {
        negative = 1;
        i++;
    } else if (s[i] == '+') {
        i++;
    }
    if ((base == 0 || base == 16) && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')
        && ((s[i + 2] >= '0' && s[i + 2] <= '9') || (s[i + 2] >= 'a' && s[i + 2] <= 'f') || (s[i + 2] >= 'A' && s[i + 2] <= 'F'))) {
        base = 16;
        i += 2;
    } else if (base == 0) {
        base = s[i] == '0' ? 8 : 10;
    }
    limit = negative ? __max + 1 : __max;
    start = i;
    while (1) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'z')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            d = c - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (limit - d) / base)
            overflow = 1;
        else
            acc = acc * base + d;
        i++;
    }
    if (i == start) {
        if (end != 0)
            *end = (char *)s;
        return 0;
    }
    if (end != 0)
        *end = (char *)s + i;
    if (overflow)
        return (long long)(negative ? -__max - 1 : __max);
    return (long long)(negative ? -acc : acc);
}

// @model strtoull
unsigned long long strtoull(const char *s, char **end, int base) {
    unsigned long long __max = (unsigned long long)-1;
    unsigned long i = 0;
    unsigned long start;
    int negative = 0;
    int overflow = 0;
    unsigned long long acc = 0;
    unsigned long long limit;
    if (base < 0 || base == 1 || base > 36)
        return 0; /* glibc: EINVAL, `*end` not set */
    while (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
        i++;
    if (s[i] == '-') {
        negative = 1;
        i++;
    } else if (s[i] == '+') {
        i++;
    }
    if ((base == 0 || base == 16) && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')
        && ((s[i + 2] >= '0' && s[i + 2] <= '9') || (s[i + 2] >= 'a' && s[i + 2] <= 'f') || (s[i + 2] >= 'A' && s[i + 2] <= 'F'))) {
        base = 16;
        i += 2;
    } else if (base == 0) {
        base = s[i] == '0' ? 8 : 10;
    }
    limit = __max;
    start = i;
    while (1) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'z')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            d = c - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (limit - d) / base)
            overflow = 1;
        else
            acc = acc * base + d;
        i++;
    }
    if (i == start) {
        if (end != 0)
            *end = (char *)s;
        return 0;
    }
    if (end != 0)
        *end = (char *)s + i;
    if (overflow)
        return (unsigned long long)(__max);
    return (unsigned long long)(negative ? -acc : acc);
}

// @model atoi
int atoi(const char *s) {
    char **end = 0;
    int base = 10;
    unsigned long long __max = (unsigned long)-1 >> 1;
    unsigned long i = 0;
    unsigned long start;
    int negative = 0;
    int overflow = 0;
    unsigned long long acc = 0;
    unsigned long long limit;
    if (base < 0 || base == 1 || base > 36)
        return 0; /* glibc: EINVAL, `*end` not set */
    while (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
        i++;
    if (s[i] == '-') {
        negative = 1;
        i++;
    } else if (s[i] == '+') {
        i++;
    }
    if ((base == 0 || base == 16) && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')
        && ((s[i + 2] >= '0' && s[i + 2] <= '9') || (s[i + 2] >= 'a' && s[i + 2] <= 'f') || (s[i + 2] >= 'A' && s[i + 2] <= 'F'))) {
        base = 16;
        i += 2;
    } else if (base == 0) {
        base = s[i] == '0' ? 8 : 10;
    }
    limit = negative ? __max + 1 : __max;
    start = i;
    while (1) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'z')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            d = c - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (limit - d) / base)
            overflow = 1;
        else
            acc = acc * base + d;
        i++;
    }
    if (i == start) {
        if (end != 0)
            *end = (char *)s;
        return 0;
    }
    if (end != 0)
        *end = (char *)s + i;
    if (overflow)
        return (int)(long)(negative ? -__max - 1 : __max);
    return (int)(long)(negative ? -acc : acc);
}

// @model atol
long atol(const char *s) {
    char **end = 0;
    int base = 10;
    unsigned long long __max = (unsigned long)-1 >> 1;
    unsigned long i = 0;
    unsigned long start;
    int negative = 0;
    int overflow = 0;
    unsigned long long acc = 0;
    unsigned long long limit;
    if (base < 0 || base == 1 || base > 36)
        return 0; /* glibc: EINVAL, `*end` not set */
    while (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
        i++;
    if (s[i] == '-') {
        negative = 1;
        i++;
    } else if (s[i] == '+') {
        i++;
    }
    if ((base == 0 || base == 16) && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')
        && ((s[i + 2] >= '0' && s[i + 2] <= '9') || (s[i + 2] >= 'a' && s[i + 2] <= 'f') || (s[i + 2] >= 'A' && s[i + 2] <= 'F'))) {
        base = 16;
        i += 2;
    } else if (base == 0) {
        base = s[i] == '0' ? 8 : 10;
    }
    limit = negative ? __max + 1 : __max;
    start = i;
    while (1) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'z')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            d = c - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (limit - d) / base)
            overflow = 1;
        else
            acc = acc * base + d;
        i++;
    }
    if (i == start) {
        if (end != 0)
            *end = (char *)s;
        return 0;
    }
    if (end != 0)
        *end = (char *)s + i;
    if (overflow)
        return (long)(negative ? -__max - 1 : __max);
    return (long)(negative ? -acc : acc);
}

// @model atoll
long long atoll(const char *s) {
    char **end = 0;
    int base = 10;
    unsigned long long __max = (unsigned long long)-1 >> 1;
    unsigned long i = 0;
    unsigned long start;
    int negative = 0;
    int overflow = 0;
    unsigned long long acc = 0;
    unsigned long long limit;
    if (base < 0 || base == 1 || base > 36)
        return 0; /* glibc: EINVAL, `*end` not set */
    while (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))
        i++;
    if (s[i] == '-') {
        negative = 1;
        i++;
    } else if (s[i] == '+') {
        i++;
    }
    if ((base == 0 || base == 16) && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')
        && ((s[i + 2] >= '0' && s[i + 2] <= '9') || (s[i + 2] >= 'a' && s[i + 2] <= 'f') || (s[i + 2] >= 'A' && s[i + 2] <= 'F'))) {
        base = 16;
        i += 2;
    } else if (base == 0) {
        base = s[i] == '0' ? 8 : 10;
    }
    limit = negative ? __max + 1 : __max;
    start = i;
    while (1) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'z')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            d = c - 'A' + 10;
        else
            break;
        if (d >= base)
            break;
        if (acc > (limit - d) / base)
            overflow = 1;
        else
            acc = acc * base + d;
        i++;
    }
    if (i == start) {
        if (end != 0)
            *end = (char *)s;
        return 0;
    }
    if (end != 0)
        *end = (char *)s + i;
    if (overflow)
        return (long long)(negative ? -__max - 1 : __max);
    return (long long)(negative ? -acc : acc);
}

// @model qsort
/* Insertion sort, which is stable: the C standard leaves the order of equal elements open, so
   a program whose result depends on it gets one of the orders glibc may give. Elements of an
   `int`'s size are swapped as `int`s, others byte by byte (the memory model follows bytes of
   wider stores, but a proof over reassembled bytes is out of the analyses' reach). */
void qsort(void *base, unsigned long n, unsigned long size, int (*compare)(const void *, const void *)) {
    unsigned char *b = base;
    unsigned long i = 1;
    while (i < n) {
        unsigned long j = i;
        while (j > 0 && compare(b + (j - 1) * size, b + j * size) > 0) {
            unsigned char *x = b + (j - 1) * size;
            unsigned char *y = b + j * size;
            if (size == sizeof(int)) {
                int t = *(int *)x;
                *(int *)x = *(int *)y;
                *(int *)y = t;
            } else {
                unsigned long k = 0;
                while (k < size) {
                    unsigned char t = x[k];
                    x[k] = y[k];
                    y[k] = t;
                    k++;
                }
            }
            j--;
        }
        i++;
    }
}

// @model bsearch
/* The C standard's binary search: an element the comparison finds equal to the key, or null. */
void *bsearch(const void *key, const void *base, unsigned long n, unsigned long size, int (*compare)(const void *, const void *)) {
    const unsigned char *b = base;
    unsigned long lo = 0;
    unsigned long hi = n;
    while (lo < hi) {
        unsigned long mid = lo + (hi - lo) / 2;
        int c = compare(key, b + mid * size);
        if (c == 0)
            return (void *)(b + mid * size);
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return 0;
}
