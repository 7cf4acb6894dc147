//! Conversions between the engine's positions (1-based lines, 1-based byte columns) and LSP
//! positions (0-based lines, UTF-16 code units), and between file paths and URIs. This is the
//! only place the server converts positions (DESIGN.md: only the server speaks UTF-16).

use std::path::{Path, PathBuf};

use tower_lsp::lsp_types::{Position, Range, Url};

/// Byte offsets of the starts of a text's lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i + 1);
            }
        }
        LineIndex { starts }
    }

    pub fn line_count(&self) -> u32 {
        self.starts.len() as u32
    }

    /// The text of a 0-based line without its line terminator (`""` past the end).
    pub fn line<'t>(&self, text: &'t str, line: u32) -> &'t str {
        let Some(&start) = self.starts.get(line as usize) else { return "" };
        let end = self.starts.get(line as usize + 1).map(|&e| e - 1).unwrap_or(text.len());
        let s = text.get(start..end.max(start)).unwrap_or("");
        s.strip_suffix('\r').unwrap_or(s)
    }

    /// LSP position of an engine position (1-based line, 1-based byte column; column 0 or a
    /// column past the line's end clamps to the line's end).
    pub fn position(&self, text: &str, line: u32, col: u32) -> Position {
        if line == 0 {
            return Position::new(0, 0);
        }
        let l = (line - 1).min(self.line_count().saturating_sub(1));
        let lt = self.line(text, l);
        let mut byte = if col == 0 { lt.len() } else { (col as usize - 1).min(lt.len()) };
        while !lt.is_char_boundary(byte) {
            byte -= 1;
        }
        Position::new(l, utf16_len(&lt[..byte]))
    }

    /// The LSP range of an engine range; an empty or inverted range covers one character (or
    /// reaches the end of its line) so that editors can show it.
    pub fn range(&self, text: &str, line: u32, col: u32, end_line: u32, end_col: u32) -> Range {
        let start = self.position(text, line, col);
        let mut end = self.position(text, end_line.max(line), end_col);
        if end <= start {
            let lt = self.line(text, start.line);
            let len = utf16_len(lt);
            end = Position::new(start.line, (start.character + 1).min(len.max(start.character)));
        }
        Range::new(start, end)
    }

    /// Byte offset of an LSP position (clamped to the text; a character past a line's end
    /// means the line's end, as the protocol says).
    pub fn offset(&self, text: &str, pos: Position) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else { return text.len() };
        let lt = self.line(text, pos.line);
        let mut units = 0u32;
        for (i, c) in lt.char_indices() {
            if units >= pos.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        start + lt.len()
    }

    /// The position at the end of a 0-based line.
    pub fn line_end(&self, text: &str, line: u32) -> Position {
        Position::new(line, utf16_len(self.line(text, line)))
    }

    /// The position just past the text's last character.
    pub fn end(&self, text: &str) -> Position {
        let last = self.line_count().saturating_sub(1);
        self.line_end(text, last)
    }
}

pub fn utf16_len(s: &str) -> u32 {
    s.chars().map(|c| c.len_utf16() as u32).sum()
}

/// The file path a document URI names (`None` for URIs that are not `file:` paths).
pub fn uri_to_path(uri: &Url) -> Option<PathBuf> {
    if uri.scheme() != "file" {
        return None;
    }
    uri.to_file_path().ok()
}

/// The URI of a file the engine names in a position: the document itself, or a path relative
/// to the document's folder (headers it includes).
pub fn file_uri(file: &str, doc_path: &Path, doc_uri: &Url) -> Option<Url> {
    if file == doc_path.display().to_string() {
        return Some(doc_uri.clone());
    }
    let p = Path::new(file);
    let abs = if p.is_absolute() { p.to_path_buf() } else { doc_path.parent().unwrap_or(Path::new("/")).join(p) };
    Url::from_file_path(abs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units() {
        let text = "int a;\n  x = \"é😀\"; y\r\nlast";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_count(), 3);
        assert_eq!(idx.line(text, 1), "  x = \"é😀\"; y");
        // `y` is at byte column 17 (é is 2 bytes, 😀 is 4) and UTF-16 column 13 (😀 is 2 units).
        let col = idx.line(text, 1).find('y').unwrap() as u32 + 1;
        assert_eq!(idx.position(text, 2, col), Position::new(1, 13));
        assert_eq!(idx.offset(text, Position::new(1, 13)), text.find(" y").unwrap() + 1);
        // Past the end clamps; a column inside a multi-byte character rounds down.
        assert_eq!(idx.position(text, 9, 99), Position::new(2, 4));
        assert_eq!(idx.position(text, 2, 11), Position::new(1, 8));
        assert_eq!(idx.offset(text, Position::new(7, 0)), text.len());
        assert_eq!(idx.end(text), Position::new(2, 4));
    }

    #[test]
    fn empty_ranges_cover_a_character() {
        let text = "abc\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.range(text, 1, 2, 1, 2), Range::new(Position::new(0, 1), Position::new(0, 2)));
        assert_eq!(idx.range(text, 1, 1, 1, 4), Range::new(Position::new(0, 0), Position::new(0, 3)));
    }
}
