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
                    lines.push(LineEntry { pp_offset: offset, file: idx, line });
                    cur_file = idx;
                    cur_line = line;
                }
                None => {
                    lines.push(LineEntry { pp_offset: offset, file: cur_file, line: cur_line });
                    cur_line = cur_line.saturating_add(1);
                }
            }
            offset += raw.len();
        }
        if lines.is_empty() {
            lines.push(LineEntry { pp_offset: 0, file: 0, line: 1 });
        }
        LineMap { files, lines, edits: Default::default() }
    }

    /// The map for the text `edits` made of the text the map was built on.
    pub fn with_edits(mut self, edits: super::rewrite::Edits) -> LineMap {
        self.edits = edits;
        self
    }

    /// The source position of a byte offset of the parsed text.
    pub fn pos(&self, pp_offset: usize) -> SrcPos {
        let pp_offset = self.edits.original(pp_offset);
        let idx = match self.lines.binary_search_by(|e| e.pp_offset.cmp(&pp_offset)) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let e = &self.lines[idx];
        SrcPos { file: self.files[e.file as usize].clone(), line: e.line, col: (pp_offset.saturating_sub(e.pp_offset) + 1) as u32 }
    }

    /// The name the map reports for text outside any marker (the user's file).
    pub fn main_file(&self) -> &Arc<str> {
        &self.files[0]
    }
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
}
