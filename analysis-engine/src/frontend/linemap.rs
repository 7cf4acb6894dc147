//! Maps byte offsets of the preprocessed text back to file, line and column of the user's
//! source, through the `# N "file"` line markers that `cc -E` leaves in its output.

use std::sync::Arc;

/// A position in a user's source file: 1-based line, 1-based byte column.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SrcPos {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
}

/// One line of the preprocessed text and where it came from.
#[derive(Clone, Debug)]
struct LineEntry {
    /// Byte offset of the line's first character in the preprocessed text.
    pp_offset: usize,
    file: u32,
    line: u32,
    /// Whether the line is a line marker (no token is on it).
    marker: bool,
    /// For a line of the user's file whose text is not the source line's (a macro expanded in
    /// it, whitespace collapsed, a system header's macro splitting it into fragments): the
    /// source column (1-based) of each byte of the line and of its end; `None` when the
    /// columns are the text's own.
    cols: Option<Box<[u32]>>,
}

/// Offset-to-position table for one preprocessed buffer.
#[derive(Clone, Debug)]
pub struct LineMap {
    files: Vec<Arc<str>>,
    lines: Vec<LineEntry>,
    /// Edits of the text pass: offsets of the parsed text are mapped through them first.
    edits: super::rewrite::Edits,
}

impl LineMap {
    /// Builds the map. With `follow_markers` false (already preprocessed `.i` input) the lines
    /// of the text itself are reported, as tools that read `.i` files (witness validators) expect.
    pub fn new(pp: &str, default_file: &str, follow_markers: bool) -> LineMap {
        let mut files: Vec<Arc<str>> = vec![Arc::from(default_file)];
        let mut lines = Vec::new();
        let mut cur_file = 0u32;
        let mut cur_line = 1u32;
        let mut offset = 0usize;
        for raw in pp.split_inclusive('\n') {
            let text = raw.trim_end_matches(['\n', '\r']);
            let marker = if follow_markers { parse_marker(text) } else { None };
            match marker {
                Some((line, file)) => {
                    // The marker line itself maps to the position it announces; no token is on it.
                    let idx = match files.iter().position(|f| &**f == file) {
                        Some(i) => i as u32,
                        None => {
                            files.push(Arc::from(file));
                            (files.len() - 1) as u32
                        }
                    };
                    lines.push(LineEntry { pp_offset: offset, file: idx, line, marker: true, cols: None });
                    cur_file = idx;
                    cur_line = line;
                }
                None => {
                    lines.push(LineEntry { pp_offset: offset, file: cur_file, line: cur_line, marker: false, cols: None });
                    cur_line = cur_line.saturating_add(1);
                }
            }
            offset += raw.len();
        }
        if lines.is_empty() {
            lines.push(LineEntry { pp_offset: 0, file: 0, line: 1, marker: false, cols: None });
        }
        LineMap { files, lines, edits: Default::default() }
    }

    /// The map for the text `edits` made of the text the map was built on.
    pub fn with_edits(mut self, edits: super::rewrite::Edits) -> LineMap {
        self.edits = edits;
        self
    }

    /// Maps the lines of `text`, appended to the mapped text at `pp_offset` (the end of what is
    /// mapped so far, at a line's start), to `file` from line `first_line` on (the C library
    /// models, [`super::models`]).
    pub fn append(&mut self, pp_offset: usize, text: &str, file: &str, first_line: u32) {
        let idx = match self.files.iter().position(|f| &**f == file) {
            Some(i) => i as u32,
            None => {
                self.files.push(Arc::from(file));
                (self.files.len() - 1) as u32
            }
        };
        let mut offset = pp_offset;
        for (k, raw) in text.split_inclusive('\n').enumerate() {
            self.lines.push(LineEntry { pp_offset: offset, file: idx, line: first_line + k as u32, marker: false, cols: None });
            offset += raw.len();
        }
    }

    /// Maps text appended at `pp_offset` (at a line's start) as `other` maps it (another file
    /// of the project, preprocessed on its own: its line markers, its headers).
    pub fn append_map(&mut self, pp_offset: usize, other: &LineMap) {
        let ids: Vec<u32> = other
            .files
            .iter()
            .map(|f| match self.files.iter().position(|g| g == f) {
                Some(i) => i as u32,
                None => {
                    self.files.push(f.clone());
                    (self.files.len() - 1) as u32
                }
            })
            .collect();
        for e in &other.lines {
            self.lines.push(LineEntry {
                pp_offset: pp_offset + e.pp_offset,
                file: ids[e.file as usize],
                line: e.line,
                marker: e.marker,
                cols: e.cols.clone(),
            });
        }
    }

    /// The source position of a byte offset of the parsed text.
    pub fn pos(&self, pp_offset: usize) -> SrcPos {
        let pp_offset = self.edits.original(pp_offset);
        let idx = match self.lines.binary_search_by(|e| e.pp_offset.cmp(&pp_offset)) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let e = &self.lines[idx];
        let off = pp_offset.saturating_sub(e.pp_offset);
        let col = match &e.cols {
            Some(cols) => cols[off.min(cols.len() - 1)],
            None => (off + 1) as u32,
        };
        SrcPos { file: self.files[e.file as usize].clone(), line: e.line, col }
    }

    /// Aligns the lines of the user's file in `pp` (the text the map was built on) with the
    /// lines of `source` (the buffer given to the preprocessor), so that every token maps to
    /// its own column. `cc -E` collapses whitespace, expands macros in place (`count < 16` for
    /// `count < CAPACITY`) and splits a line at a system header's macro (`assert`, `INT32_MAX`)
    /// into fragments, each after a marker and indented anew: without this, the columns of
    /// what follows are off and excerpts cut words. Tokens are matched in order (longest
    /// common subsequence), then tokens the expansion repeats (`assert`'s argument appears
    /// twice) where they occur in the line; a token of an expansion maps to the source text
    /// between its matched neighbours (the macro's name and arguments).
    pub fn aligned(mut self, pp: &str, source: &str) -> LineMap {
        let src_lines: Vec<&str> = source.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
        let mut i = 0;
        while i < self.lines.len() {
            let (file, line) = (self.lines[i].file, self.lines[i].line);
            let mut j = i + 1;
            while j < self.lines.len() && self.lines[j].file == file && self.lines[j].line == line {
                j += 1;
            }
            if file == 0 {
                if let Some(src) = (line as usize).checked_sub(1).and_then(|l| src_lines.get(l)) {
                    self.align_group(pp, i..j, src);
                }
            }
            i = j;
        }
        self
    }

    /// Aligns the fragments of one source line (entries `group`) with the line's text.
    fn align_group(&mut self, pp: &str, group: std::ops::Range<usize>, src: &str) {
        let text_of = |k: usize| {
            let start = self.lines[k].pp_offset;
            let end = self.lines.get(k + 1).map_or(pp.len(), |e| e.pp_offset);
            pp.get(start..end).unwrap_or("").trim_end_matches(['\n', '\r'])
        };
        let frags: Vec<usize> = group.filter(|&k| !self.lines[k].marker).collect();
        if frags.is_empty() || (frags.len() == 1 && text_of(frags[0]) == src) {
            return;
        }
        // Tokens of the fragments (fragment, start, end) and of the source line (start, end).
        let mut ptoks: Vec<(usize, usize, usize)> = Vec::new();
        for (fi, &k) in frags.iter().enumerate() {
            ptoks.extend(tokens(text_of(k), false).into_iter().map(|(a, b)| (fi, a, b)));
        }
        let stoks = tokens(src, true);
        if ptoks.len().saturating_mul(stoks.len()) > MAX_ALIGN_CELLS {
            return;
        }
        let ptext = |t: &(usize, usize, usize)| &text_of(frags[t.0])[t.1..t.2];
        let stext = |t: &(usize, usize)| &src[t.0..t.1];
        let (n, m) = (ptoks.len(), stoks.len());
        // Longest common subsequence, table of suffix lengths.
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        for a in (0..n).rev() {
            for b in (0..m).rev() {
                lcs[a * (m + 1) + b] = if ptext(&ptoks[a]) == stext(&stoks[b]) {
                    lcs[(a + 1) * (m + 1) + b + 1] + 1
                } else {
                    lcs[(a + 1) * (m + 1) + b].max(lcs[a * (m + 1) + b + 1])
                };
            }
        }
        let mut matched: Vec<Option<usize>> = vec![None; n];
        let (mut a, mut b) = (0, 0);
        while a < n && b < m {
            if ptext(&ptoks[a]) == stext(&stoks[b]) && lcs[a * (m + 1) + b] == lcs[(a + 1) * (m + 1) + b + 1] + 1 {
                matched[a] = Some(b);
                a += 1;
                b += 1;
            } else if lcs[(a + 1) * (m + 1) + b] >= lcs[a * (m + 1) + b + 1] {
                a += 1;
            } else {
                b += 1;
            }
        }
        // Runs the expansion repeats: the longest run of the source line each unmatched token
        // starts (a lone punctuator does not count, it would be a guess).
        let mut a = 0;
        while a < n {
            if matched[a].is_some() {
                a += 1;
                continue;
            }
            let mut best: Option<(usize, usize)> = None;
            for b in 0..m {
                let mut len = 0;
                while a + len < n && b + len < m && matched[a + len].is_none() && ptext(&ptoks[a + len]) == stext(&stoks[b + len]) {
                    len += 1;
                }
                if len > best.map_or(0, |x| x.1) {
                    best = Some((b, len));
                }
            }
            match best {
                Some((b, len)) if len >= 2 || is_word(ptext(&ptoks[a])) => {
                    for d in 0..len {
                        matched[a + d] = Some(b + d);
                    }
                    a += len;
                }
                _ => a += 1,
            }
        }
        // Source extent of each token: its own, or the source between its matched neighbours.
        let trim = |from: usize, to: usize| {
            let gap = &src[from..to];
            let s = from + (gap.len() - gap.trim_start().len());
            let e = (from + gap.trim_end().len()).max(s);
            (s, e)
        };
        let mut extent: Vec<(usize, usize, bool)> = Vec::with_capacity(n);
        for a in 0..n {
            match matched[a] {
                Some(b) => extent.push((stoks[b].0, stoks[b].1, true)),
                None => {
                    let prev = (0..a).rev().find_map(|x| matched[x]).map_or(0, |b| stoks[b].1);
                    let next = (a + 1..n).find_map(|x| matched[x]).map_or(src.len(), |b| stoks[b].0);
                    let (s, e) = trim(prev, next.max(prev));
                    extent.push((s, e, false));
                }
            }
        }
        // Per byte: a token's bytes to its source bytes (an expansion's first byte to the
        // start of what it stands for, the others to its end), other bytes to the end of the
        // token before them.
        let mut last: Option<usize> = None;
        let mut tok = 0;
        let mut tables = Vec::with_capacity(frags.len());
        for (fi, &k) in frags.iter().enumerate() {
            let text = text_of(k);
            let mut cols = vec![0u32; text.len() + 1];
            let mut at = 0;
            while tok < n && ptoks[tok].0 == fi {
                let (_, ts, te) = ptoks[tok];
                for (x, c) in cols.iter_mut().enumerate().take(ts).skip(at) {
                    *c = last.unwrap_or(x) as u32 + 1;
                }
                let (s, e, exact) = extent[tok];
                for (d, c) in cols[ts..te].iter_mut().enumerate() {
                    let col = if exact {
                        s + d
                    } else if d == 0 {
                        s
                    } else {
                        e
                    };
                    *c = col as u32 + 1;
                }
                last = Some(e);
                at = te;
                tok += 1;
            }
            for (x, c) in cols.iter_mut().enumerate().skip(at) {
                *c = last.unwrap_or(x) as u32 + 1;
            }
            tables.push((k, cols.into_boxed_slice()));
        }
        for (k, cols) in tables {
            self.lines[k].cols = Some(cols);
        }
    }

    /// The name the map reports for text outside any marker (the user's file).
    pub fn main_file(&self) -> &Arc<str> {
        &self.files[0]
    }
}

/// Most token pairs [`LineMap::aligned`] compares for one line (a line a macro made very
/// long keeps the columns of its text).
const MAX_ALIGN_CELLS: usize = 1 << 20;

/// Whether a token is an identifier, a number or a literal (not a punctuator).
fn is_word(t: &str) -> bool {
    t.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '"' || c == '\'')
}

/// C tokens of one line as byte ranges, roughly: identifiers and numbers (letters, digits,
/// `_`), string and character literals, and every other character alone. With `comments`,
/// comments are skipped (the preprocessor's output has none).
fn tokens(line: &str, comments: bool) -> Vec<(usize, usize)> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if comments && line[i..].starts_with("//") {
            break;
        } else if comments && line[i..].starts_with("/*") {
            i = line[i + 2..].find("*/").map_or(bytes.len(), |e| i + 2 + e + 2);
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let s = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((s, i));
        } else if c == b'"' || c == b'\'' {
            let s = i;
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(bytes.len());
            out.push((s, i));
        } else {
            let len = line[i..].chars().next().map_or(1, char::len_utf8);
            out.push((i, i + len));
            i += len;
        }
    }
    out
}

/// Parses a GNU line marker `# 12 "file.c" 1 3` or `#line 12 "file.c"`.
fn parse_marker(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
    let digits_end = rest.find(|c: char| !c.is_ascii_digit())?;
    if digits_end == 0 {
        return None;
    }
    let num: u32 = rest[..digits_end].parse().ok()?;
    let rest = rest[digits_end..].trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some((num, &rest[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_map_lines_and_columns() {
        let pp = "# 1 \"a.c\"\nint x;\n# 1 \"/usr/include/h.h\" 1 3\nint y;\n# 3 \"a.c\" 2\n  int z;\n";
        let map = LineMap::new(pp, "a.c", true);
        let x = pp.find("x;").unwrap();
        assert_eq!(map.pos(x), SrcPos { file: "a.c".into(), line: 1, col: 5 });
        let y = pp.find("y;").unwrap();
        assert_eq!(map.pos(y).file.as_ref(), "/usr/include/h.h");
        let z = pp.find("z;").unwrap();
        assert_eq!(map.pos(z), SrcPos { file: "a.c".into(), line: 3, col: 7 });
    }

    #[test]
    fn raw_lines_when_markers_ignored() {
        let pp = "# 7 \"orig.c\"\nint x;\n";
        let map = LineMap::new(pp, "t.i", false);
        let x = pp.find("x;").unwrap();
        assert_eq!(map.pos(x), SrcPos { file: "t.i".into(), line: 2, col: 5 });
    }

    /// The source text of the range `[start, end)` of `pp` under the aligned map.
    fn mapped(map: &LineMap, pp: &str, src: &str, start: usize, end: usize) -> String {
        let (a, b) = (map.pos(start), map.pos(end));
        assert_eq!(a.line, b.line, "{:?} {:?}", a, b);
        let line = src.lines().nth(a.line as usize - 1).unwrap();
        let _ = pp;
        line[a.col as usize - 1..b.col as usize - 1].to_string()
    }

    #[test]
    fn assert_fragments_map_to_the_argument() {
        // What gcc -E prints for `assert(i == 10 && s == 20);` on line 2.
        let src = "int f(void) {\n    assert(i == 10 && s == 20);\n}\n";
        let pp = "# 1 \"a.c\"\nint f(void) {\n    \n# 2 \"a.c\" 3 4\n ((void) sizeof ((\n# 2 \"a.c\"\n i == 10 && s == 20\n# 2 \"a.c\" 3 4\n ) ? 1 : 0), __extension__ ({ if (\n# 2 \"a.c\"\n i == 10 && s == 20\n# 2 \"a.c\" 3 4\n ) ; else __assert_fail (\n# 2 \"a.c\"\n \"i == 10 && s == 20\"\n# 2 \"a.c\" 3 4\n , \"a.c\", 2, __extension__ __PRETTY_FUNCTION__); }))\n# 2 \"a.c\"\n                           ;\n}\n";
        let map = LineMap::new(pp, "a.c", true).aligned(pp, src);
        // Both copies of the argument, and each of its operands.
        for copy in [pp.find(" i == 10").unwrap() + 1, pp.rfind(" i == 10").unwrap() + 1] {
            let whole = copy + "i == 10 && s == 20".len();
            assert_eq!(mapped(&map, pp, src, copy, whole), "i == 10 && s == 20");
            assert_eq!(mapped(&map, pp, src, copy, copy + 7), "i == 10");
            assert_eq!(mapped(&map, pp, src, copy + 11, whole), "s == 20");
        }
        // The expansion's own text maps within the line, never past its end.
        let expansion = pp.find("((void)").unwrap();
        assert!(map.pos(expansion).col as usize <= src.lines().nth(1).unwrap().len() + 1);
        let semi = pp.rfind(';').unwrap();
        assert_eq!(map.pos(semi), SrcPos { file: "a.c".into(), line: 2, col: 31 });
    }

    #[test]
    fn expanded_macros_and_collapsed_spaces_keep_source_columns() {
        let src = "#define CAPACITY 16\nint f(int count) {\n  if (count  <  CAPACITY) count++; /* c */ return  count;\n}\n";
        let pp = "# 1 \"a.c\"\n\nint f(int count) {\n  if (count < 16) count++; return count;\n}\n";
        let map = LineMap::new(pp, "a.c", true).aligned(pp, src);
        let cond = pp.find("count < 16").unwrap();
        assert_eq!(mapped(&map, pp, src, cond, cond + "count < 16".len()), "count  <  CAPACITY");
        let inc = pp.find("count++").unwrap();
        assert_eq!(mapped(&map, pp, src, inc, inc + 7), "count++");
        let ret = pp.find("return count").unwrap();
        assert_eq!(mapped(&map, pp, src, ret, ret + "return count".len()), "return  count");
        // An unchanged line keeps its own columns.
        let f = pp.find("f(int").unwrap();
        assert_eq!(map.pos(f), SrcPos { file: "a.c".into(), line: 2, col: 5 });
    }
}
