//! A text pass over the preprocessed source, before lang-c parses it, for the GNU C that lang-c
//! does not accept: a byte-order mark, comments in `.i` files, `__int128`, the elvis operator
//! `x ?: y`, labels as values (`&&lab`, `goto *p`), `__builtin_types_compatible_p`, implicit
//! `int` in `extern f();`, and asm labels that rename a declared function.
//!
//! lang-c is used as it is (forking its generated parser for a handful of extensions would be
//! far larger than this pass); each construct becomes text lang-c parses, spelled with
//! `__cpals_` names the CFA builder recognises. Every edit is recorded, so that a byte offset
//! of the rewritten text maps back to the offset of the text it replaced ([`Edits::original`])
//! and diagnostics keep pointing at the user's line and column.

use std::collections::HashMap;

/// The placeholder the elvis operator's middle operand becomes: `x ?: y` is parsed as
/// `x ?__cpals_elvis: y`, which the builder lowers evaluating `x` once.
pub const ELVIS: &str = "__cpals_elvis";
/// `&&lab` becomes `__cpals_label_address(lab)`.
pub const LABEL_ADDRESS: &str = "__cpals_label_address";
/// `goto *e;` becomes `__cpals_computed_goto(e);`.
pub const COMPUTED_GOTO: &str = "__cpals_computed_goto";
/// The type names `__int128` and `unsigned __int128` become (typedefs of `long double`, so that
/// the builder models their values as unknown, as it does floating-point ones: the IR's
/// integers are at most 64 bits wide).
pub const INT128: &str = "__cpals_int128";
pub const UINT128: &str = "__cpals_uint128";

/// `__builtin_types_compatible_p(T1, T2)` becomes `(1)` when both are spelled alike (up to
/// top-level qualifiers), `__cpals_types_compatible_p(0, 2)` (unknown) for other array or
/// function types, else `__cpals_types_compatible_p(_Generic((T1*)0, T2*: 1, default: 0), 1)`.
pub const TYPES_COMPATIBLE: &str = "__cpals_types_compatible_p";

/// A type name's tokens without top-level qualifiers (which the built-in ignores).
fn normalise_type(t: &str) -> Vec<String> {
    tokens(t)
        .iter()
        .map(|k| t[k.start..k.end].to_string())
        .filter(|w| !matches!(w.as_str(), "const" | "volatile" | "__const" | "__volatile__" | "restrict" | "__restrict"))
        .collect()
}

/// Replacements applied to a text, ordered by position.
#[derive(Clone, Debug, Default)]
pub struct Edits {
    /// (start in the rewritten text, start in the original text, is replacement text).
    segments: Vec<(usize, usize, bool)>,
}

impl Edits {
    /// The offset in the original text that an offset of the rewritten text stands for: text
    /// that was copied maps one to one, replacement text to the start of what it replaced.
    pub fn original(&self, off: usize) -> usize {
        let i = self.segments.partition_point(|s| s.0 <= off);
        if i == 0 {
            return off;
        }
        let (new_start, orig_start, replaced) = self.segments[i - 1];
        if replaced {
            orig_start
        } else {
            orig_start + (off - new_start)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }
}

/// A token of the scan: its kind and byte range.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Ident,
    Number,
    Literal,
    Punct,
}

#[derive(Clone, Copy, Debug)]
struct Tok {
    kind: Kind,
    start: usize,
    end: usize,
}

/// Blanks comments (keeping newlines) and a leading byte-order mark; same length, so offsets
/// are unchanged. Needed for `.i` files, which are parsed without running the preprocessor.
pub fn blank_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    if b.starts_with(&[0xEF, 0xBB, 0xBF]) {
        out[..3].copy_from_slice(b"   ");
    }
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => i = skip_literal(b, i),
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    // A backslash-newline continues a line comment.
                    if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                        out[i] = b' ';
                        i += 2;
                        continue;
                    }
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = find(b, i + 2, b"*/").map_or(b.len(), |e| e + 2);
                for c in &mut out[i..end] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were replaced by ASCII spaces, and whole multi-byte sequences inside
    // comments: the result is UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?.windows(pat.len()).position(|w| w == pat).map(|p| p + from)
}

/// The offset just past a string or character literal starting at `i`.
fn skip_literal(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() && b[j] != q && b[j] != b'\n' {
        if b[j] == b'\\' {
            j += 1;
        }
        j += 1;
    }
    (j + 1).min(b.len())
}

/// Tokens of preprocessed text, skipping directive lines (line markers) and comments.
fn tokens(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' && line_start {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        line_start = false;
        let start = i;
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i = find(b, i + 2, b"*/").map_or(b.len(), |e| e + 2);
            continue;
        }
        let kind = if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            // An encoding prefix of a literal: `L"…"`, `u8"…"`.
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') && matches!(&text[start..i], "L" | "u" | "U" | "u8") {
                i = skip_literal(b, i);
                Kind::Literal
            } else {
                Kind::Ident
            }
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || b[i] == b'.'
                    || b[i] == b'_'
                    || ((b[i] == b'+' || b[i] == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P')))
            {
                i += 1;
            }
            Kind::Number
        } else if c == b'"' || c == b'\'' {
            i = skip_literal(b, i);
            Kind::Literal
        } else {
            let two = b.get(i..i + 2).unwrap_or(&[]);
            i += if matches!(two, b"&&" | b"||" | b"++" | b"--" | b"->" | b"<<" | b">>" | b"==" | b"!=" | b"<=" | b">=") { 2 } else { 1 };
            Kind::Punct
        };
        out.push(Tok { kind, start, end: i });
    }
    out
}

/// Words after which `&&` is the unary label-address operator, although they are identifiers.
fn is_keyword_before_operand(w: &str) -> bool {
    matches!(w, "return" | "case" | "sizeof" | "else" | "do")
}

fn is_int128_word(w: &str) -> bool {
    matches!(w, "__int128" | "__int128__")
}

fn is_sign_word(w: &str) -> bool {
    matches!(w, "unsigned" | "signed" | "__signed" | "__signed__")
}

fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "auto"
            | "break"
            | "case"
            | "char"
            | "const"
            | "continue"
            | "default"
            | "do"
            | "double"
            | "else"
            | "enum"
            | "extern"
            | "float"
            | "for"
            | "goto"
            | "if"
            | "inline"
            | "int"
            | "long"
            | "register"
            | "restrict"
            | "return"
            | "short"
            | "signed"
            | "sizeof"
            | "static"
            | "struct"
            | "switch"
            | "typedef"
            | "union"
            | "unsigned"
            | "void"
            | "volatile"
            | "while"
            | "_Bool"
            | "_Complex"
            | "_Atomic"
            | "_Noreturn"
            | "_Thread_local"
            | "__inline"
            | "__inline__"
            | "__attribute__"
            | "__attribute"
            | "__extension__"
            | "__typeof__"
            | "__typeof"
            | "typeof"
            | "__const"
            | "__restrict"
            | "__volatile__"
            | "__asm__"
            | "__asm"
            | "asm"
    )
}

/// Whether an asm label only spells the C name as glibc's headers redirect it (`scanf` to
/// `__isoc99_scanf`, `fopen` to `fopen64`): then the declaration still names the same function.
fn same_function(name: &str, label: &str) -> bool {
    let strip = |s: &str| -> String {
        let mut s = s.trim_start_matches('_').to_string();
        for p in ["isoc99_", "isoc23_", "isoc2x_"] {
            if let Some(r) = s.strip_prefix(p) {
                s = r.to_string();
            }
        }
        for suf in ["_time64", "64", "_chk"] {
            if let Some(r) = s.strip_suffix(suf) {
                s = r.trim_end_matches('_').to_string();
            }
        }
        s
    };
    label == name || strip(label) == strip(name)
}

/// The concatenated contents of the string literals from token `i` on, and the index after them.
fn string_literals(text: &str, toks: &[Tok], mut i: usize) -> Option<(String, usize)> {
    let mut s = String::new();
    let mut any = false;
    while let Some(t) = toks.get(i).filter(|t| t.kind == Kind::Literal && text[t.start..t.end].starts_with('"')) {
        let lit = &text[t.start + 1..t.end.saturating_sub(1).max(t.start + 1)];
        s.push_str(lit);
        any = true;
        i += 1;
    }
    any.then_some((s, i))
}

/// The index of the token closing the bracket opened at `open`.
fn matching(text: &str, toks: &[Tok], open: usize) -> Option<usize> {
    let (o, c) = match &text[toks[open].start..toks[open].end] {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        "{" => ("{", "}"),
        _ => return None,
    };
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(open) {
        let s = &text[t.start..t.end];
        if t.kind == Kind::Punct && s == o {
            depth += 1;
        } else if t.kind == Kind::Punct && s == c {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// Rewrites GNU constructs lang-c does not parse. Returns the new text and its edits.
pub fn rewrite(text: &str) -> (String, Edits) {
    let toks = tokens(text);
    let word = |i: usize| -> &str { toks.get(i).map_or("", |t| &text[t.start..t.end]) };
    // (start, end, replacement) in the original text, non-overlapping.
    let mut reps: Vec<(usize, usize, String)> = Vec::new();
    let mut int128 = false;
    // Declarations renamed by asm labels: C name → name used instead.
    let mut renames: HashMap<String, String> = HashMap::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        let w = word(i);
        match (t.kind, w) {
            (Kind::Ident, w) if is_int128_word(w) || is_sign_word(w) => {
                // A run of `signed`/`unsigned`/`__int128` words naming one 128-bit type.
                let mut j = i;
                let (mut has128, mut unsigned) = (false, false);
                while j < toks.len() && (is_int128_word(word(j)) || is_sign_word(word(j))) {
                    has128 |= is_int128_word(word(j));
                    unsigned |= word(j) == "unsigned";
                    j += 1;
                }
                if has128 {
                    int128 = true;
                    let name = if unsigned { UINT128 } else { INT128 };
                    reps.push((t.start, toks[j - 1].end, name.to_string()));
                }
                i = j;
                continue;
            }
            (Kind::Ident, "__float128") => {
                // gcc's older name of the TS 18661 type `_Float128`, which lang-c knows.
                reps.push((t.start, t.end, "_Float128".to_string()));
            }
            (Kind::Ident, "__int128_t") => {
                int128 = true;
                reps.push((t.start, t.end, INT128.to_string()));
            }
            (Kind::Ident, "__uint128_t") => {
                int128 = true;
                reps.push((t.start, t.end, UINT128.to_string()));
            }
            (Kind::Punct, "?") if word(i + 1) == ":" => {
                reps.push((t.end, t.end, ELVIS.to_string()));
            }
            (Kind::Punct, "&&") if toks.get(i + 1).is_some_and(|n| n.kind == Kind::Ident) => {
                let unary = match toks.get(i.wrapping_sub(1)).filter(|_| i > 0) {
                    None => true,
                    Some(p) => match p.kind {
                        Kind::Ident => is_keyword_before_operand(word(i - 1)),
                        Kind::Number | Kind::Literal => false,
                        // `(void *)&&l`: a `)` after `*` closes a cast, not an operand.
                        Kind::Punct if word(i - 1) == ")" => i >= 2 && word(i - 2) == "*",
                        Kind::Punct => !matches!(word(i - 1), "]" | "++" | "--"),
                    },
                };
                if unary {
                    let lab = toks[i + 1];
                    reps.push((t.start, t.end, format!("{}(", LABEL_ADDRESS)));
                    reps.push((lab.end, lab.end, ")".to_string()));
                    i += 2;
                    continue;
                }
            }
            (Kind::Ident, "goto") if word(i + 1) == "*" => {
                // `goto *e;` up to the `;` at the same bracket depth.
                let mut depth = 0i32;
                let mut j = i + 2;
                while j < toks.len() {
                    match word(j) {
                        "(" | "[" | "{" => depth += 1,
                        ")" | "]" | "}" => depth -= 1,
                        ";" if depth == 0 => break,
                        _ => {}
                    }
                    j += 1;
                }
                if j < toks.len() {
                    reps.push((t.start, toks[i + 1].end, format!("{}(", COMPUTED_GOTO)));
                    reps.push((toks[j].start, toks[j].start, ")".to_string()));
                    i = j;
                    continue;
                }
            }
            (Kind::Ident, "__builtin_types_compatible_p") if word(i + 1) == "(" => {
                // As `_Generic((T1*)0, T2*: 1, default: 0)`: the builder compares the two types.
                if let Some(close) = matching(text, &toks, i + 1) {
                    let mut depth = 0i32;
                    let mut comma = None;
                    for (j, _) in toks.iter().enumerate().take(close).skip(i + 2) {
                        match word(j) {
                            "(" | "[" | "{" => depth += 1,
                            ")" | "]" | "}" => depth -= 1,
                            "," if depth == 0 => comma = Some(j),
                            _ => {}
                        }
                    }
                    if let Some(c) = comma {
                        let t1 = &text[toks[i + 2].start..toks[c].start];
                        let t2 = &text[toks[c].end..toks[close].start];
                        // The builder's types do not tell `long` from `long long` of the same
                        // width, a typedef from its type, or `int[]` from `int[5]`: unless
                        // both are spelled alike, an answer of 1 (and for array and
                        // function types also 0) becomes unknown.
                        let exact = normalise_type(t1) == normalise_type(t2);
                        let shaped = [t1, t2].iter().any(|t| t.contains('[') || t.contains('('));
                        let s = if exact {
                            "(1)".to_string()
                        } else if shaped {
                            format!("{}(0,2)", TYPES_COMPATIBLE)
                        } else {
                            format!("{}(_Generic(({}*)0,{}*:1,default:0),1)", TYPES_COMPATIBLE, t1.trim(), t2.trim())
                        };
                        reps.push((t.start, toks[close].end, s));
                        i = close + 1;
                        continue;
                    }
                }
            }
            (Kind::Ident, "extern")
                if toks.get(i + 1).is_some_and(|n| n.kind == Kind::Ident && !is_keyword(word(i + 1)))
                    && word(i + 2) == "("
                    && matching(text, &toks, i + 2).is_some_and(|c| matches!(word(c + 1), ";" | ",")) =>
            {
                // `extern f();`: implicit `int`, which lang-c does not accept. A typedef name
                // before `(` (`extern T (*fp)(void);`) is followed by more than `;` or `,`.
                reps.push((toks[i + 1].start, toks[i + 1].start, "int ".to_string()));
            }
            (Kind::Ident, "__asm__" | "__asm" | "asm") if word(i + 1) == "(" && i > 0 && word(i - 1) == ")" => {
                // An asm label on a function declarator `T name(params) __asm__("label")`.
                if let (Some((label, after)), Some(open)) = (string_literals(text, &toks, i + 2), param_open(text, &toks, i - 1)) {
                    if word(after) == ")" && open > 0 && toks[open - 1].kind == Kind::Ident {
                        let name = word(open - 1).to_string();
                        if !same_function(&name, &label) && !is_keyword(&name) {
                            // The label's own name when the program declares or calls a
                            // function of that name (the two are one function), else a name
                            // no model knows (an external function).
                            let declared = toks.windows(2).any(|w| {
                                w[0].kind == Kind::Ident && text[w[0].start..w[0].end] == label && &text[w[1].start..w[1].end] == "("
                            });
                            let safe: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
                            renames.insert(name, if declared { label } else { format!("__cpals_asm_{}", safe) });
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !renames.is_empty() {
        // Every use of a renamed declaration's C name names the function of the label.
        for t in &toks {
            if t.kind == Kind::Ident {
                if let Some(n) = renames.get(&text[t.start..t.end]) {
                    reps.push((t.start, t.end, n.clone()));
                }
            }
        }
    }
    reps.sort_by_key(|r| (r.0, r.1));
    if int128 {
        reps.insert(0, (0, 0, format!("typedef long double {}; typedef long double {};\n", INT128, UINT128)));
    }
    apply(text, &reps)
}

/// The index of the `(` opening the parameter list that the `)` at `close` ends.
fn param_open(text: &str, toks: &[Tok], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=close).rev() {
        match &text[toks[j].start..toks[j].end] {
            ")" => depth += 1,
            "(" => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

fn apply(text: &str, reps: &[(usize, usize, String)]) -> (String, Edits) {
    if reps.is_empty() {
        return (text.to_string(), Edits::default());
    }
    let mut out = String::with_capacity(text.len() + 64 * reps.len());
    let mut edits = Edits::default();
    let mut pos = 0;
    for (s, e, r) in reps {
        if *s < pos {
            continue;
        }
        edits.segments.push((out.len(), pos, false));
        out.push_str(&text[pos..*s]);
        edits.segments.push((out.len(), *s, true));
        out.push_str(r);
        pos = *e;
    }
    edits.segments.push((out.len(), pos, false));
    out.push_str(&text[pos..]);
    (out, edits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_bom_are_blanked_with_the_same_length() {
        let t = "\u{FEFF}int x; // c\n/* a\nb */ int y; char *s = \"//\";\n";
        let b = blank_comments(t);
        assert_eq!(b.len(), t.len());
        assert!(b.starts_with("   int x;"));
        assert_eq!(b.lines().count(), t.lines().count());
        assert!(b.contains("\"//\""));
        assert!(!b.contains("/*"));
    }

    #[test]
    fn elvis_and_offsets() {
        let (t, e) = rewrite("int a = b ?: c;");
        assert_eq!(t, "int a = b ?__cpals_elvis: c;");
        assert_eq!(e.original(t.find(':').unwrap()), "int a = b ?: c;".find(':').unwrap());
        assert_eq!(e.original(t.find("__cpals").unwrap()), 11);
    }

    #[test]
    fn labels_as_values() {
        let (t, _) = rewrite("void *p = &&l1; if (a && b) goto *p; return &&x;");
        assert_eq!(t, "void *p = __cpals_label_address(l1); if (a && b) __cpals_computed_goto(p); return __cpals_label_address(x);");
        let (t, _) = rewrite("p = (void *)&&l; q = (a) && b;");
        assert_eq!(t, "p = (void *)__cpals_label_address(l); q = (a) && b;");
    }

    #[test]
    fn int128_runs() {
        let (t, _) = rewrite("unsigned __int128 a; __int128 b; __int128 unsigned c; signed __int128 d; __uint128_t e;");
        assert!(t.contains("__cpals_uint128 a; __cpals_int128 b; __cpals_uint128 c; __cpals_int128 d; __cpals_uint128 e;"), "{t}");
        assert!(t.starts_with("typedef long double __cpals_int128;"));
    }

    #[test]
    fn asm_labels_rename_only_real_redirections() {
        let (t, _) =
            rewrite("extern int scanf (const char *f, ...) __asm__ (\"\" \"__isoc99_scanf\"); int g(void) { return scanf(\"\"); }");
        assert!(!t.contains("__cpals_asm"), "{t}");
        let (t, _) = rewrite("int printf(const char *, ...) __asm__(\"system\"); int main(void) { printf(\"x\"); }");
        assert_eq!(t, "int __cpals_asm_system(const char *, ...) __asm__(\"system\"); int main(void) { __cpals_asm_system(\"x\"); }");
        let (t, _) = rewrite("int g(int); int f(int) __asm__(\"g\"); int main(void) { return f(1); }");
        assert_eq!(t, "int g(int); int g(int) __asm__(\"g\"); int main(void) { return g(1); }");
    }

    #[test]
    fn implicit_int_extern() {
        let (t, _) = rewrite("extern __VERIFIER_nondet_int(); extern int f(); extern size_t g(); extern T (*fp)(void);");
        assert_eq!(t, "extern int __VERIFIER_nondet_int(); extern int f(); extern size_t g(); extern T (*fp)(void);");
    }

    #[test]
    fn types_compatible() {
        let (t, _) = rewrite("int x = __builtin_types_compatible_p(int, unsigned);");
        assert_eq!(t, "int x = __cpals_types_compatible_p(_Generic((int*)0,unsigned*:1,default:0),1);");
        let (t, _) = rewrite("__builtin_types_compatible_p(int, const int)");
        assert_eq!(t, "(1)");
        let (t, _) = rewrite("__builtin_types_compatible_p(int[], int[5])");
        assert!(t.ends_with(",2)"), "{t}");
    }
}
