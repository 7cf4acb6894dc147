//! The C library models (DESIGN.md "Memory", "Library"; issue 23): C sources shipped with cpals
//! (`analysis-engine/libc/*.c`, embedded here) whose functions are linked into a program that
//! calls them without defining them, only those it calls (and the models they use).
//!
//! A model file is plain C without preprocessor directives, cut into units: `// @model NAME`
//! starts the unit defining `NAME` (with the static data it needs), `// @uses A B` names the
//! models it calls, `// @bytes` marks a model over `void *` buffers that is used only at a call
//! whose pointer arguments point to bytes (the CFA builder checks each call: with pointers to
//! wider types the typed memory model could not follow the bytes, and the call stays an
//! external function). The linked units are appended to the preprocessed text and the line map
//! gives their lines the model files' names below [`MODELS_FILE`] (`<cpals libc>/string.c`),
//! so positions in them (and the CFA builder's knowledge of which functions are models) come
//! from the line map like any other file's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use lang_c::ast::{Declarator, DeclaratorKind, Expression, ExternalDeclaration, TranslationUnit};
use lang_c::span::Span;
use lang_c::visit::Visit;

/// The folder the model files' names are in (a name no user's file has).
pub const MODELS_FILE: &str = "<cpals libc>";

/// Whether a file name (of a position, of a function) is one of the models'.
pub fn is_model_file(file: &str) -> bool {
    file.strip_prefix(MODELS_FILE).is_some_and(|rest| rest.starts_with('/'))
}

/// The model sources, in the order their units are appended.
const SOURCES: [(&str, &str); 5] = [
    ("string.c", include_str!("../../libc/string.c")),
    ("ctype.c", include_str!("../../libc/ctype.c")),
    ("stdlib.c", include_str!("../../libc/stdlib.c")),
    ("stdio.c", include_str!("../../libc/stdio.c")),
    ("args.c", include_str!("../../libc/args.c")),
];

/// The file name of the generated `scanf` conversions (below [`MODELS_FILE`]).
const SCANF_FILE: &str = "scanf.c";
/// The file name of the generated `sscanf` conversions (below [`MODELS_FILE`]).
const SSCANF_FILE: &str = "sscanf.c";

/// One unit of a model file.
#[derive(Debug)]
pub struct Model {
    pub name: String,
    /// The model file it comes from (`string.c`).
    pub file: &'static str,
    /// The line of the file the unit starts at.
    pub line: u32,
    /// Its text (the unit's lines, the `// @` lines included).
    pub text: String,
    pub uses: Vec<String>,
    /// Used only at calls whose pointer arguments point to bytes.
    pub bytes: bool,
}

/// Every model, by name.
pub fn models() -> &'static BTreeMap<String, Model> {
    static MODELS: OnceLock<BTreeMap<String, Model>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let mut out = BTreeMap::new();
        for (file, src) in SOURCES {
            let mut cur: Option<Model> = None;
            for (no, line) in src.split_inclusive('\n').enumerate() {
                if let Some(name) = line.trim().strip_prefix("// @model ") {
                    if let Some(m) = cur.take() {
                        out.insert(m.name.clone(), m);
                    }
                    let (name, line) = (name.trim().to_string(), no as u32 + 1);
                    cur = Some(Model { name, file, line, text: String::new(), uses: Vec::new(), bytes: false });
                }
                let Some(m) = cur.as_mut() else { continue };
                if let Some(uses) = line.trim().strip_prefix("// @uses ") {
                    m.uses.extend(uses.split_whitespace().map(str::to_string));
                }
                if line.trim() == "// @bytes" {
                    m.bytes = true;
                }
                m.text.push_str(line);
                if !line.ends_with('\n') {
                    m.text.push('\n');
                }
            }
            if let Some(m) = cur.take() {
                out.insert(m.name.clone(), m);
            }
        }
        // The text is appended after the preprocessor ran: its comments become blanks (lines
        // and columns stay).
        for m in out.values_mut() {
            m.text = super::rewrite::blank_comments(&m.text);
        }
        out
    })
}

/// Whether `name` has a model used only at calls with pointers to bytes (`memcpy`, …).
pub fn bytes_only(name: &str) -> bool {
    models().get(name).is_some_and(|m| m.bytes)
}

/// The models a translation unit needs: every function it names (calls or uses as a value)
/// without defining it and without declaring the name as an object at file scope, that has a
/// model, and the models those use, transitively.
pub fn needed(unit: &TranslationUnit) -> BTreeSet<String> {
    struct Names<'n> {
        used: &'n mut BTreeSet<String>,
        /// Uses of `stdin` in total, and as the stream of a call the models cover.
        stdin_uses: usize,
        stdin_modelled: usize,
        /// A call of a function that reads or moves standard input in a way the models do not
        /// cover (`ungetc`, `fread`, `scanf("%f")`, …).
        stdin_other: bool,
    }
    impl<'ast> Visit<'ast> for Names<'_> {
        fn visit_expression(&mut self, e: &'ast Expression, span: &'ast Span) {
            if let Expression::Identifier(id) = e {
                if models().contains_key(&id.node.name) {
                    self.used.insert(id.node.name.clone());
                }
                if id.node.name == "stdin" {
                    self.stdin_uses += 1;
                }
            }
            if let Expression::Call(c) = e {
                match stdin_call(&c.node) {
                    Some(Stdin::Scanf(_, 1)) => {}
                    Some(_) => self.stdin_modelled += 1,
                    None => {
                        if let Expression::Identifier(f) = &c.node.callee.node {
                            let getchar = f.node.name == "getchar" && c.node.arguments.is_empty();
                            self.stdin_other |= !getchar && touches_stdin(&f.node.name);
                        }
                    }
                }
                if let Some(Stdin::Scanf(convs, _)) = stdin_call(&c.node) {
                    self.used.insert(scanf_name(&convs));
                }
                if let Some(convs) = sscanf_call(&c.node) {
                    self.used.insert(sscanf_name(&convs));
                }
                if let Some(Stdin::Getchar) = stdin_call(&c.node) {
                    self.used.insert("getchar".into());
                }
                if let Some(Stdin::Fgets) = stdin_call(&c.node) {
                    self.used.insert("__cpals_fgets_stdin".into());
                }
                if let Some(Stdin::Fread) = stdin_call(&c.node) {
                    self.used.insert("__cpals_fread_stdin".into());
                }
            }
            lang_c::visit::visit_expression(self, e, span);
        }
    }
    let mut used = BTreeSet::new();
    let mut defined = BTreeSet::new();
    let mut names = Names { used: &mut used, stdin_uses: 0, stdin_modelled: 0, stdin_other: false };
    for ext in &unit.0 {
        match &ext.node {
            ExternalDeclaration::FunctionDefinition(fd) => {
                if let Some(n) = declarator_name(&fd.node.declarator.node) {
                    if n == "main" && main_takes_arguments(&fd.node.declarator.node) {
                        // `main(int argc, char **argv)`: the command line is an input (`libc/args.c`).
                        names.used.insert(ARGC_MODEL.to_string());
                        names.used.insert(ARGV_MODEL.to_string());
                    }
                    defined.insert(n);
                }
            }
            ExternalDeclaration::Declaration(d) => {
                // A file-scope object (not a function) with a model's name.
                for init in &d.node.declarators {
                    let dcl = &init.node.declarator.node;
                    let is_function = dcl.derived.iter().any(|dd| {
                        matches!(dd.node, lang_c::ast::DerivedDeclarator::Function(_) | lang_c::ast::DerivedDeclarator::KRFunction(_))
                    });
                    if !is_function {
                        if let Some(n) = declarator_name(dcl) {
                            defined.insert(n);
                        }
                    }
                }
            }
            ExternalDeclaration::StaticAssert(_) => {}
        }
        names.visit_external_declaration(&ext.node, &ext.span);
    }
    let stdin_exact = !names.stdin_other && names.stdin_uses == names.stdin_modelled;
    if !stdin_exact {
        // Standard input is also read (or moved) where the models do not see it: their view of
        // the stream would not be exact, so none of its functions is modelled (all external).
        used.retain(|n| !is_stdin_model(n));
    }
    let mut out = BTreeSet::new();
    let mut stack: Vec<String> = used.into_iter().filter(|n| !defined.contains(n)).collect();
    while let Some(n) = stack.pop() {
        if defined.contains(&n) || !out.insert(n.clone()) {
            continue;
        }
        if let Some(m) = models().get(&n) {
            stack.extend(m.uses.iter().cloned());
        }
        if n.starts_with(SCANF_PREFIX) {
            stack.extend(["__cpals_stdin_state".to_string(), "__cpals_stdin_next".to_string()]);
            if n.split('_').any(|t| t == "c") {
                stack.push("getchar".to_string());
            }
        }
    }
    out
}

/// The units of the models `names`, in the order of their files: the file name positions in
/// it have (below [`MODELS_FILE`]), the line it starts at there, and its text (whole lines).
pub fn units(names: &BTreeSet<String>) -> Vec<(String, u32, std::borrow::Cow<'static, str>)> {
    let mut out = Vec::new();
    for (file, _) in SOURCES {
        let mut in_file: Vec<&Model> = models().values().filter(|m| m.file == file && names.contains(&m.name)).collect();
        in_file.sort_by_key(|m| m.line);
        for m in in_file {
            out.push((format!("{}/{}", MODELS_FILE, file), m.line, std::borrow::Cow::Borrowed(m.text.as_str())));
        }
    }
    for n in names.iter().filter(|n| n.starts_with(SCANF_PREFIX)) {
        if let Some(text) = scanf_text(n) {
            out.push((format!("{}/{}", MODELS_FILE, SCANF_FILE), 1, std::borrow::Cow::Owned(text)));
        }
    }
    for n in names.iter().filter(|n| n.starts_with(SSCANF_PREFIX)) {
        if let Some(text) = sscanf_text(n) {
            out.push((format!("{}/{}", MODELS_FILE, SSCANF_FILE), 1, std::borrow::Cow::Owned(text)));
        }
    }
    out
}

/// Whether a model is one of standard input's (linked only when the models see every use of
/// the stream).
fn is_stdin_model(name: &str) -> bool {
    name == "getchar" || name == "__cpals_fgets_stdin" || name == "__cpals_fread_stdin" || name.starts_with(SCANF_PREFIX)
}

/// Functions of the C library that read standard input, may read it (a descriptor or stream
/// given as a value) or change what reading it gives. (Stream functions given `stdin` itself,
/// `fflush(stdin)`, or a stream variable that holds it are caught by the use of `stdin`.)
fn touches_stdin(name: &str) -> bool {
    let base = name.strip_prefix("__isoc99_").or_else(|| name.strip_prefix("__isoc23_")).unwrap_or(name);
    matches!(
        base,
        "scanf"
            | "fscanf"
            | "vscanf"
            | "vfscanf"
            | "getchar"
            | "getc"
            | "fgetc"
            | "_IO_getc"
            | "getchar_unlocked"
            | "getc_unlocked"
            | "fgetc_unlocked"
            | "fgets"
            | "fgets_unlocked"
            | "gets"
            | "getline"
            | "getdelim"
            | "__getdelim"
            | "fread"
            | "fread_unlocked"
            | "ungetc"
            | "read"
            | "readv"
            | "pread"
            | "fdopen"
            | "dup2"
            | "dup3"
            | "close"
    )
}

/// The prefix of the generated `scanf` models' names (`__cpals_scanf_d_lu`: one per list of
/// conversions, its text made by [`scanf_text`]).
pub const SCANF_PREFIX: &str = "__cpals_scanf_";

/// The prefix of the input functions of the standard input model (`libc/stdio.c`): the bytes
/// and numbers the user types, which harnesses turn back into text.
pub const STDIN_INPUT_PREFIX: &str = "__cpals_stdin_";

/// The input function whose values are not tracked (after a failed conversion): any value,
/// never confirming a counterexample.
pub const STDIN_UNMODELLED: &str = "__cpals_stdin_unmodelled";

/// A conversion of a `scanf` format that cpals models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Conv {
    /// `%d %i %u %o %x` with a length (`hh`, `h`, none, `l`, `ll`).
    Num { conv: char, len: &'static str },
    /// `%c` (one byte, no white space skipped).
    Char,
    /// `%s` with an optional width.
    Str(Option<u32>),
    /// `%[…]` (a scan set: the bytes it takes, NUL never) with an optional width; `sscanf`
    /// only (standard input's model does not track what follows it).
    Set(Box<[bool; 256]>, Option<u32>),
}

impl Conv {
    fn token(&self) -> String {
        match self {
            Conv::Num { conv, len } => format!("{}{}", len, conv),
            Conv::Char => "c".into(),
            Conv::Str(None) => "s".into(),
            Conv::Str(Some(w)) => format!("s{}", w),
            Conv::Set(set, w) => {
                // `S`, the set as 64 hexadecimal digits (bit b of the set is byte b), the width.
                let mut t = String::from("S");
                for nib in 0..64 {
                    let v = (0..4).fold(0u8, |acc, k| acc | (u8::from(set[nib * 4 + k]) << k));
                    t.push(char::from_digit(v as u32, 16).unwrap_or('0'));
                }
                if let Some(w) = w {
                    t.push_str(&format!("w{}", w));
                }
                t
            }
        }
    }

    fn from_token(t: &str) -> Option<Conv> {
        if t == "c" {
            return Some(Conv::Char);
        }
        if let Some(rest) = t.strip_prefix('S') {
            let (hex, w) = rest.split_once('w').map_or((rest, None), |(h, w)| (h, Some(w)));
            let width = match w {
                Some(w) => Some(w.parse().ok().filter(|&w: &u32| w > 0)?),
                None => None,
            };
            if hex.len() != 64 {
                return None;
            }
            let mut set = Box::new([false; 256]);
            for (nib, ch) in hex.chars().enumerate() {
                let v = ch.to_digit(16)?;
                for k in 0..4 {
                    set[nib * 4 + k] = v & (1 << k) != 0;
                }
            }
            set[0] = false;
            return Some(Conv::Set(set, width));
        }
        if let Some(w) = t.strip_prefix('s') {
            return if w.is_empty() { Some(Conv::Str(None)) } else { w.parse().ok().filter(|&w| w > 0).map(|w| Conv::Str(Some(w))) };
        }
        let conv = t.chars().last()?;
        let len = match &t[..t.len() - 1] {
            "hh" => "hh",
            "h" => "h",
            "" => "",
            "l" => "l",
            "ll" => "ll",
            _ => return None,
        };
        matches!(conv, 'd' | 'i' | 'u' | 'o' | 'x').then_some(Conv::Num { conv, len })
    }

    /// The C type the conversion stores, and the suffix of its input function (as
    /// `__VERIFIER_nondet_X` names types).
    fn c_type(&self) -> (&'static str, &'static str) {
        let Conv::Num { conv, len } = self else { return ("char", "char") };
        let signed = matches!(conv, 'd' | 'i');
        match (*len, signed) {
            ("hh", true) => ("signed char", "char"),
            ("hh", false) => ("unsigned char", "uchar"),
            ("h", true) => ("short", "short"),
            ("h", false) => ("unsigned short", "ushort"),
            ("l", true) => ("long", "long"),
            ("l", false) => ("unsigned long", "ulong"),
            ("ll", true) => ("long long", "longlong"),
            ("ll", false) => ("unsigned long long", "ulonglong"),
            (_, true) => ("int", "int"),
            (_, false) => ("unsigned int", "uint"),
        }
    }
}

/// The base a number of a conversion's input function is written in (`dec`, `oct`, `hex`,
/// `int` for `%i`, written in decimal unless the next byte needs another form).
fn num_base(conv: char) -> &'static str {
    match conv {
        'o' => "oct",
        'x' => "hex",
        'i' => "int",
        _ => "dec",
    }
}

/// The bytes of a narrow string literal's pieces (with their quotes), if it has only simple
/// escapes.
pub fn literal_bytes(pieces: &[String]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for p in pieces {
        let body = p.strip_prefix('"')?.strip_suffix('"')?;
        let mut it = body.bytes();
        while let Some(b) = it.next() {
            if b != b'\\' {
                out.push(b);
                continue;
            }
            out.push(match it.next()? {
                b'n' => b'\n',
                b't' => b'\t',
                b'r' => b'\r',
                b'v' => 0x0b,
                b'f' => 0x0c,
                b'\\' => b'\\',
                b'"' => b'"',
                b'\'' => b'\'',
                _ => return None,
            });
        }
    }
    Some(out)
}

/// The conversions of a `scanf` format cpals models: `%d %i %u %o %x %X` with `hh h l ll`,
/// `%c`, `%s` with a width, and white space before a conversion that skips it anyway. `None`
/// for anything else (floats, literal characters, `%*`, `%[`, `%n`, white space before `%c`
/// or at the end, which would consume input the model does not track).
pub fn scanf_format(fmt: &[u8]) -> Option<Vec<Conv>> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut space = false;
    while i < fmt.len() {
        let b = fmt[i];
        if b.is_ascii_whitespace() {
            space = true;
            i += 1;
            continue;
        }
        if b != b'%' {
            return None;
        }
        i += 1;
        let start = i;
        while i < fmt.len() && fmt[i].is_ascii_digit() {
            i += 1;
        }
        let width: Option<u32> = if i > start { Some(std::str::from_utf8(&fmt[start..i]).ok()?.parse().ok()?) } else { None };
        let len = if fmt[i..].starts_with(b"hh") {
            "hh"
        } else if fmt[i..].starts_with(b"ll") {
            "ll"
        } else if fmt[i..].starts_with(b"h") {
            "h"
        } else if fmt[i..].starts_with(b"l") {
            "l"
        } else {
            ""
        };
        i += len.len();
        let conv = *fmt.get(i)? as char;
        i += 1;
        let c = match conv {
            'd' | 'i' | 'u' | 'o' | 'x' | 'X' if width.is_none() => Conv::Num { conv: if conv == 'X' { 'x' } else { conv }, len },
            'c' if width.is_none() && len.is_empty() && !space => Conv::Char,
            's' if len.is_empty() && width != Some(0) => Conv::Str(width),
            '[' if len.is_empty() && width != Some(0) && !space => {
                let mut set = Box::new([false; 256]);
                let negated = fmt.get(i) == Some(&b'^');
                if negated {
                    i += 1;
                }
                let mut first = true;
                let mut prev: Option<u8> = None;
                loop {
                    let b = *fmt.get(i)?;
                    i += 1;
                    if b == b']' && !first {
                        break;
                    }
                    first = false;
                    if let (b'-', Some(lo), Some(&hi)) = (b, prev, fmt.get(i)) {
                        if hi != b']' {
                            // A range `a-z`; a reversed one is not modelled.
                            if lo > hi {
                                return None;
                            }
                            i += 1;
                            for c in lo..=hi {
                                set[c as usize] = true;
                            }
                            prev = None;
                            continue;
                        }
                    }
                    set[b as usize] = true;
                    prev = Some(b);
                }
                if negated {
                    for x in set.iter_mut() {
                        *x = !*x;
                    }
                }
                set[0] = false;
                Conv::Set(set, width)
            }
            _ => return None,
        };
        space = false;
        out.push(c);
    }
    if space || out.is_empty() || out.len() > 16 {
        return None;
    }
    Some(out)
}

/// The name of the generated model of `scanf` with these conversions.
pub fn scanf_name(convs: &[Conv]) -> String {
    let tokens: Vec<String> = convs.iter().map(Conv::token).collect();
    format!("{}{}", SCANF_PREFIX, tokens.join("_"))
}

/// A call that reads standard input, as the models see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stdin {
    /// `scanf(fmt, …)` or `fscanf(stdin, fmt, …)` with a literal format cpals models: its
    /// conversions and the index of the first pointer argument.
    Scanf(Vec<Conv>, usize),
    /// `getc(stdin)`, `fgetc(stdin)`.
    Getchar,
    /// `fgets(s, n, stdin)`.
    Fgets,
    /// `fread(p, size, n, stdin)` (a model for buffers of bytes only: the CFA builder makes
    /// another call unsupported, as the stream would not be exact after it).
    Fread,
}

/// Whether a call reads standard input in a way the models cover (by the callee's name and
/// its arguments: the stream is `stdin` itself, the format a literal).
pub fn stdin_call(call: &lang_c::ast::CallExpression) -> Option<Stdin> {
    let Expression::Identifier(id) = &call.callee.node else { return None };
    let is_stdin = |k: usize| matches!(call.arguments.get(k).map(|a| &a.node), Some(Expression::Identifier(s)) if s.node.name == "stdin");
    // Standard input's model does not track what follows a scan set (`%[`).
    let format = |k: usize| match call.arguments.get(k).map(|a| &a.node) {
        Some(Expression::StringLiteral(s)) => {
            literal_bytes(&s.node).and_then(|f| scanf_format(&f)).filter(|c| !c.iter().any(|c| matches!(c, Conv::Set(..))))
        }
        _ => None,
    };
    let args = call.arguments.len();
    match id.node.name.as_str() {
        "scanf" | "__isoc99_scanf" => format(0).filter(|c| c.len() + 1 == args).map(|c| Stdin::Scanf(c, 1)),
        "fscanf" | "__isoc99_fscanf" if is_stdin(0) => format(1).filter(|c| c.len() + 2 == args).map(|c| Stdin::Scanf(c, 2)),
        "getc" | "fgetc" | "_IO_getc" if args == 1 && is_stdin(0) => Some(Stdin::Getchar),
        "fgets" if args == 3 && is_stdin(2) => Some(Stdin::Fgets),
        "fread" if args == 4 && is_stdin(3) => Some(Stdin::Fread),
        _ => None,
    }
}

/// The C text of the generated model `name` ([`scanf_name`]): the conversions one after the
/// other, each storing through its pointer only when it succeeds, returning how many did
/// (or `EOF` when the input ends before the first).
pub fn scanf_text(name: &str) -> Option<String> {
    let convs: Vec<Conv> = name.strip_prefix(SCANF_PREFIX)?.split('_').map(Conv::from_token).collect::<Option<_>>()?;
    let mut s = String::new();
    let mut params = Vec::new();
    for (k, c) in convs.iter().enumerate() {
        if let Conv::Num { conv, .. } = c {
            let (ty, suffix) = c.c_type();
            let decl = format!("{} {}{}_{}(void);\n", ty, STDIN_INPUT_PREFIX, num_base(*conv), suffix);
            if !s.contains(&decl) {
                s.push_str(&decl);
            }
        }
        params.push(format!("{} *p{}", c.c_type().0, k));
    }
    s.push_str(&format!("int {}({}) {{\n    int o;\n    int i;\n    int c;\n", name, params.join(", ")));
    s.push_str("    i = 0;\n    c = 0;\n    o = 0;\n");
    for (k, c) in convs.iter().enumerate() {
        let ret = if k == 0 { "-1".to_string() } else { k.to_string() };
        match c {
            // Standard input's model takes no scan sets (`stdin_call`).
            Conv::Set(..) => return None,
            Conv::Num { conv, .. } => {
                let (ty, suffix) = c.c_type();
                let base = match conv {
                    'o' => 8,
                    'x' => 16,
                    'i' => 8,
                    _ => 10,
                };
                s.push_str(&format!("    o = __cpals_stdin_next(1);\n    if (o == 2) return {};\n    if (o != 0) return {};\n", ret, k));
                s.push_str(&format!(
                    "    {{\n        {ty} v;\n        if (__cpals_in_state == 3) v = ({ty})__cpals_stdin_unmodelled();\n        \
                     else {{ v = {}{}_{}(); __cpals_in_state = 1; __cpals_in_base = {base}; }}\n        *p{k} = v;\n    }}\n",
                    STDIN_INPUT_PREFIX,
                    num_base(*conv),
                    suffix
                ));
            }
            Conv::Char => {
                s.push_str(&format!("    c = getchar();\n    if (c == -1) return {};\n    *p{} = (char)c;\n", ret, k));
            }
            Conv::Str(width) => {
                // A word: non-white bytes up to the width; after it white space or the end
                // (or anything, when the width stopped it). Not tracked after a failure.
                let more = width.map(|w| format!("i < {} && ", w)).unwrap_or_default();
                s.push_str(&format!(
                    "    o = __cpals_stdin_next(0);\n    if (o == 2) return {ret};\n    i = 0;\n    do {{\n        \
                     if (__cpals_in_state == 3) c = (int)__cpals_stdin_unmodelled(); else c = __cpals_stdin_byte();\n        \
                     __cpals_assume(c > 0 && c <= 255 && c != ' ' && !(c >= '\\t' && c <= '\\r'));\n        \
                     p{k}[i] = (char)c;\n        i++;\n    \
                     }} while ({more}(__cpals_in_state == 3 ? __cpals_stdin_unmodelled() != 0 : __cpals_stdin_more() != 0));\n    \
                     p{k}[i] = 0;\n    if (__cpals_in_state != 3) __cpals_in_state = 4;\n"
                ));
                if let Some(w) = width {
                    s.push_str(&format!("    if (__cpals_in_state == 4 && i == {}) __cpals_in_state = 0;\n", w));
                }
            }
        }
    }
    s.push_str(&format!("    return {};\n}}\n", convs.len()));
    Some(s)
}

/// The model that chooses `main`'s `argc` (and fills in argv's strings), and the one that
/// gives `argv` (`libc/args.c`); the CFA builder passes their results to `main`.
pub const ARGC_MODEL: &str = "__cpals_argc";
pub const ARGV_MODEL: &str = "__cpals_argv";

/// The prefix of the command line model's input functions (the number of arguments and their
/// bytes), which harnesses turn back into a command line.
pub const ARGS_INPUT_PREFIX: &str = "__cpals_arg_";

/// The command line model's bounds (`libc/args.c`): at most this many strings in argv (the
/// program's name included), each of at most [`ARG_MAX_LEN`] bytes.
pub const ARGS_MAX: usize = 3;
pub const ARG_MAX_LEN: usize = 8;

/// The report's note on a program whose `main` gets a command line from the model: the
/// bounds its proofs assume.
pub fn args_note() -> String {
    format!(
        "`main`'s command line is an input of at most {} arguments after the program's name, each of at most {} bytes: what holds for such command lines is reported `unknown`, not proved",
        ARGS_MAX - 1,
        ARG_MAX_LEN
    )
}

/// Why a property proved over the modelled command line is not proved of the program.
pub fn args_bound() -> String {
    format!(
        "holds for command lines of at most {} arguments of at most {} bytes each; longer ones are not modelled",
        ARGS_MAX - 1,
        ARG_MAX_LEN
    )
}

/// Whether a function is an input of one of the models (standard input's bytes and numbers,
/// the command line's), which traces show and harnesses supply like `__VERIFIER_nondet_*`.
pub fn is_model_input(name: &str) -> bool {
    (name.starts_with(STDIN_INPUT_PREFIX) && name != STDIN_UNMODELLED) || name == "__cpals_arg_count" || name == "__cpals_arg_byte"
}

/// Whether a definition of `main` declares (at least) `argc` and `argv`.
fn main_takes_arguments(d: &Declarator) -> bool {
    let own = d.derived.iter().any(|dd| match &dd.node {
        lang_c::ast::DerivedDeclarator::Function(f) => f.node.parameters.len() >= 2,
        lang_c::ast::DerivedDeclarator::KRFunction(ids) => ids.len() >= 2,
        _ => false,
    });
    own || matches!(&d.kind.node, DeclaratorKind::Declarator(inner) if main_takes_arguments(&inner.node))
}

/// The prefix of the generated `sscanf` models' names (`__cpals_sscanf_d_s5`: one per list of
/// conversions, the same as `scanf`'s, its text made by [`sscanf_text`]).
pub const SSCANF_PREFIX: &str = "__cpals_sscanf_";

/// The name of the generated model of `sscanf` with these conversions.
pub fn sscanf_name(convs: &[Conv]) -> String {
    let tokens: Vec<String> = convs.iter().map(Conv::token).collect();
    format!("{}{}", SSCANF_PREFIX, tokens.join("_"))
}

/// The conversions of a call `sscanf(str, fmt, …)` with a literal format cpals models
/// ([`scanf_format`]) and one pointer per conversion.
pub fn sscanf_call(call: &lang_c::ast::CallExpression) -> Option<Vec<Conv>> {
    let Expression::Identifier(id) = &call.callee.node else { return None };
    if !matches!(id.node.name.as_str(), "sscanf" | "__isoc99_sscanf" | "__isoc23_sscanf") {
        return None;
    }
    let Some(Expression::StringLiteral(f)) = call.arguments.get(1).map(|a| &a.node) else { return None };
    literal_bytes(&f.node).and_then(|f| scanf_format(&f)).filter(|c| c.len() + 2 == call.arguments.len())
}

/// The C text of the generated model `name` ([`sscanf_name`]): glibc's `sscanf` reading the
/// string `s` with these conversions, each storing through its pointer only when it
/// succeeds; returns how many did, or `EOF` when the string ends before the first. A number
/// is read as glibc does (`strtol` or `strtoul` of the type's width, then converted to the
/// type): exact while its digits make less than 2^31 (where a 32-bit `long` saturates), any
/// value beyond (`__cpals_stdin_unmodelled`, which never confirms a counterexample).
pub fn sscanf_text(name: &str) -> Option<String> {
    let convs: Vec<Conv> = name.strip_prefix(SSCANF_PREFIX)?.split('_').map(Conv::from_token).collect::<Option<_>>()?;
    let mut params = vec!["const char *s".to_string()];
    for (k, c) in convs.iter().enumerate() {
        params.push(format!("{} *p{}", c.c_type().0, k));
    }
    let mut t = format!("long long {}(void);\n", STDIN_UNMODELLED);
    t.push_str(&format!("int {}({}) {{\n", name, params.join(", ")));
    t.push_str("    unsigned long i = 0;\n    unsigned long st = 0;\n    unsigned long n = 0;\n    unsigned long long acc = 0;\n");
    t.push_str("    int neg = 0;\n    int big = 0;\n    int b = 10;\n    int d = 0;\n    char c = 0;\n");
    let skip = "    while (s[i] == ' ' || (s[i] >= '\\t' && s[i] <= '\\r'))\n        i++;\n";
    for (k, c) in convs.iter().enumerate() {
        let ret = if k == 0 { "-1".to_string() } else { k.to_string() };
        match c {
            Conv::Num { conv, .. } => {
                let (ty, _) = c.c_type();
                t.push_str(skip);
                t.push_str(&format!("    if (s[i] == 0)\n        return {ret};\n"));
                t.push_str("    neg = 0;\n    acc = 0;\n    big = 0;\n");
                t.push_str("    if (s[i] == '-') {\n        neg = 1;\n        i++;\n    } else if (s[i] == '+')\n        i++;\n");
                let base = match conv {
                    'o' => "    b = 8;\n    st = i;\n".to_string(),
                    'x' => "    b = 16;\n    st = i;\n    if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))\n        i += 2;\n".to_string(),
                    'i' => "    b = 10;\n    st = i;\n    if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {\n        b = 16;\n        i += 2;\n    } \
                            else if (s[i] == '0')\n        b = 8;\n"
                        .to_string(),
                    _ => "    b = 10;\n    st = i;\n".to_string(),
                };
                t.push_str(&base);
                // The digits (a `0x` prefix counts as read: `0x` alone is 0).
                t.push_str(
                    "    while (1) {\n        c = s[i];\n        if (c >= '0' && c <= '9')\n            d = c - '0';\n        \
                     else if (c >= 'a' && c <= 'f')\n            d = c - 'a' + 10;\n        else if (c >= 'A' && c <= 'F')\n            \
                     d = c - 'A' + 10;\n        else\n            break;\n        if (d >= b)\n            break;\n        \
                     if (!big) {\n            acc = acc * b + d;\n            if (acc > 0x7fffffffULL)\n                big = 1;\n        }\n        \
                     i++;\n    }\n",
                );
                t.push_str(&format!("    if (i == st)\n        return {k};\n"));
                t.push_str(&format!(
                    "    if (big)\n        *p{k} = ({ty}){STDIN_UNMODELLED}();\n    else\n        *p{k} = ({ty})(neg ? -acc : acc);\n"
                ));
            }
            Conv::Char => {
                t.push_str(&format!("    if (s[i] == 0)\n        return {ret};\n    *p{k} = s[i];\n    i++;\n"));
            }
            Conv::Set(set, width) => {
                // No white space skipped; at least one byte of the set, else a failure.
                let full = width.map(|w| format!(" || n >= {}", w)).unwrap_or_default();
                let mut ranges = Vec::new();
                let mut b = 1;
                while b < 256 {
                    if !set[b] {
                        b += 1;
                        continue;
                    }
                    let lo = b;
                    while b < 256 && set[b] {
                        b += 1;
                    }
                    ranges.push(if lo == b - 1 { format!("u == {}", lo) } else { format!("(u >= {} && u <= {})", lo, b - 1) });
                }
                let test = if ranges.is_empty() { "0".to_string() } else { ranges.join(" || ") };
                t.push_str(&format!(
                    "    n = 0;\n    while (1) {{\n        unsigned char u = (unsigned char)s[i];\n        \
                     if (u == 0 || !({test}){full})\n            break;\n        p{k}[n] = s[i];\n        n++;\n        i++;\n    }}\n"
                ));
                t.push_str(&format!("    if (n == 0)\n        return s[i] == 0 ? {ret} : {k};\n    p{k}[n] = 0;\n"));
            }
            Conv::Str(width) => {
                let more = width.map(|w| format!(" && n < {}", w)).unwrap_or_default();
                t.push_str(skip);
                t.push_str(&format!("    if (s[i] == 0)\n        return {ret};\n    n = 0;\n"));
                t.push_str(&format!(
                    "    while (s[i] != 0 && s[i] != ' ' && !(s[i] >= '\\t' && s[i] <= '\\r'){more}) {{\n        p{k}[n] = s[i];\n        \
                     n++;\n        i++;\n    }}\n    p{k}[n] = 0;\n"
                ));
            }
        }
    }
    t.push_str(&format!("    return {};\n}}\n", convs.len()));
    Some(t)
}

fn declarator_name(d: &Declarator) -> Option<String> {
    match &d.kind.node {
        DeclaratorKind::Identifier(id) => Some(id.node.name.clone()),
        DeclaratorKind::Declarator(inner) => declarator_name(&inner.node),
        DeclaratorKind::Abstract => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_names_only_models_it_uses() {
        for m in models().values() {
            for u in &m.uses {
                assert!(models().contains_key(u), "`{}` uses `{}`, which has no model", m.name, u);
            }
        }
        assert!(models().contains_key("strlen") && models().contains_key("isdigit") && models().contains_key("atoi"));
        assert!(bytes_only("memcpy") && !bytes_only("strcpy"));
    }

    #[test]
    fn scanf_formats_are_modelled_only_when_every_directive_is() {
        let name = |f: &str| scanf_format(f.as_bytes()).map(|c| scanf_name(&c));
        assert_eq!(name("%d").as_deref(), Some("__cpals_scanf_d"));
        assert_eq!(name(" %lld %hhu\t%X %5s%c").as_deref(), Some("__cpals_scanf_lld_hhu_x_s5_c"));
        for bad in ["%f", "%lf", "%d,%d", "%d\n", " %c", "%*d", "%3d", "%[z-a]", " %[a]", "%[a", "%n", "%%", "", "%s %0s"] {
            assert_eq!(name(bad), None, "{bad}");
        }
        // Every generated name gives back its text, which declares its inputs with their types.
        let text = scanf_text("__cpals_scanf_lld_hhu_x_s5_c").unwrap();
        assert!(
            text.contains("long long __cpals_stdin_dec_longlong(void);") && text.contains("unsigned char *p1") && text.contains("i < 5")
        );
        assert_eq!(scanf_text("__cpals_scanf_d_q"), None);
        assert_eq!(literal_bytes(&["\"%d\\n\"".into(), "\" x\"".into()]).as_deref(), Some(&b"%d\n x"[..]));
        // `sscanf`'s models: the same conversions, the string first.
        let convs = scanf_format(b"%hhu %4s").unwrap();
        assert_eq!(sscanf_name(&convs), "__cpals_sscanf_hhu_s4");
        let text = sscanf_text("__cpals_sscanf_hhu_s4").unwrap();
        assert!(text.contains("int __cpals_sscanf_hhu_s4(const char *s, unsigned char *p0, char *p1)") && text.contains("n < 4"), "{text}");
        assert_eq!(sscanf_text("__cpals_sscanf_f"), None);
        // Scan sets: for `sscanf` only; the name gives the set back.
        let convs = scanf_format(b"%3[^]a-c]%c").unwrap();
        let Conv::Set(set, Some(3)) = &convs[0] else { panic!("{convs:?}") };
        assert!(!set[b']' as usize] && !set[b'b' as usize] && set[b'd' as usize] && !set[0]);
        let text = sscanf_text(&sscanf_name(&convs)).unwrap();
        assert!(text.contains("(u >= 1 && u <= 92) || (u >= 94 && u <= 96) || (u >= 100 && u <= 255)) || n >= 3)"), "{text}");
        assert_eq!(scanf_text(&scanf_name(&convs)), None);
    }
}
