//! An open document: its text, version and line index, incremental edits applied in order, and
//! the position mapping that moves results computed on an older version along with the edits
//! (so that stale results stay where their code went).

use std::path::PathBuf;

use tower_lsp::lsp_types::{Position, Range, TextDocumentContentChangeEvent, Url};

use crate::lsp::proto::LineIndex;

#[derive(Clone, Debug)]
pub struct Document {
    pub uri: Url,
    /// The path the engine names the buffer with (and preprocesses it next to).
    pub path: PathBuf,
    pub text: String,
    pub version: i32,
    pub index: LineIndex,
}

/// One replacement in LSP coordinates: `start..old_end` became `start..new_end`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub start: Position,
    pub old_end: Position,
    pub new_end: Position,
}

/// Why an edit was not applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditError {
    /// The version is not newer than the document's.
    StaleVersion { have: i32, got: i32 },
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::StaleVersion { have, got } => write!(f, "edit for version {got} ignored: the document is at version {have}"),
        }
    }
}

impl Document {
    pub fn new(uri: Url, path: PathBuf, text: String, version: i32) -> Document {
        let index = LineIndex::new(&text);
        Document { uri, path, text, version, index }
    }

    /// Applies the changes of one `didChange` in order. Returns the edits (for moving older
    /// results) or refuses a version that is not newer than the current one.
    pub fn apply(&mut self, version: i32, changes: &[TextDocumentContentChangeEvent]) -> Result<Vec<Edit>, EditError> {
        if version <= self.version {
            return Err(EditError::StaleVersion { have: self.version, got: version });
        }
        let mut edits = Vec::with_capacity(changes.len());
        for ch in changes {
            let edit = match ch.range {
                Some(r) => {
                    let (mut a, mut b) = (self.index.offset(&self.text, r.start), self.index.offset(&self.text, r.end));
                    if a > b {
                        std::mem::swap(&mut a, &mut b);
                    }
                    let start = self.position_of(a);
                    let old_end = self.position_of(b);
                    self.text.replace_range(a..b, &ch.text);
                    self.index = LineIndex::new(&self.text);
                    let new_end = self.position_of(a + ch.text.len());
                    Edit { start, old_end, new_end }
                }
                None => {
                    let edit = line_diff(&self.text, &ch.text);
                    self.text = ch.text.clone();
                    self.index = LineIndex::new(&self.text);
                    edit
                }
            };
            edits.push(edit);
        }
        self.version = version;
        Ok(edits)
    }

    /// The LSP position of a byte offset.
    pub fn position_of(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let before = &self.text[..floor_boundary(&self.text, offset)];
        let line = before.matches('\n').count() as u32;
        let start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        Position::new(line, crate::lsp::proto::utf16_len(&before[start..]))
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A full-text change as one edit covering only the lines that differ.
fn line_diff(old: &str, new: &str) -> Edit {
    let a: Vec<&str> = old.split('\n').collect();
    let b: Vec<&str> = new.split('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a.iter().rev().zip(b.iter().rev()).take(max_suffix).take_while(|(x, y)| x == y).count();
    Edit {
        start: Position::new(prefix as u32, 0),
        old_end: Position::new((a.len() - suffix) as u32, 0),
        new_end: Position::new((b.len() - suffix) as u32, 0),
    }
}

/// Where a position of the old text is after the edit (inside the replaced text: its start).
pub fn shift_position(p: Position, e: &Edit) -> Position {
    if p < e.start {
        p
    } else if p < e.old_end {
        e.start
    } else if p.line == e.old_end.line {
        Position::new(e.new_end.line, e.new_end.character + (p.character - e.old_end.character))
    } else {
        Position::new((p.line as i64 - e.old_end.line as i64 + e.new_end.line as i64).max(0) as u32, p.character)
    }
}

pub fn shift_range(r: Range, e: &Edit) -> Range {
    Range::new(shift_position(r.start, e), shift_position(r.end, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(l0: u32, c0: u32, l1: u32, c1: u32, text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(l0, c0), Position::new(l1, c1))),
            range_length: None,
            text: text.into(),
        }
    }

    fn doc(text: &str) -> Document {
        Document::new(Url::parse("file:///t.c").unwrap(), "/t.c".into(), text.into(), 1)
    }

    #[test]
    fn incremental_changes_apply_in_order() {
        let mut d = doc("int a;\nint b;\n");
        let edits = d.apply(2, &[change(1, 4, 1, 5, "bb"), change(0, 0, 0, 0, "// x\n")]).unwrap();
        assert_eq!(d.text, "// x\nint a;\nint bb;\n");
        assert_eq!(edits[1], Edit { start: Position::new(0, 0), old_end: Position::new(0, 0), new_end: Position::new(1, 0) });
        assert_eq!(d.apply(2, &[change(0, 0, 0, 0, "x")]), Err(EditError::StaleVersion { have: 2, got: 2 }));
        assert_eq!(d.text, "// x\nint a;\nint bb;\n");
    }

    #[test]
    fn utf16_positions_in_edits() {
        let mut d = doc("s = \"😀\"; t;\n");
        // Replace `t` (UTF-16 column 10: the emoji counts 2).
        d.apply(2, &[change(0, 10, 0, 11, "u")]).unwrap();
        assert_eq!(d.text, "s = \"😀\"; u;\n");
    }

    #[test]
    fn results_move_with_edits() {
        let e = Edit { start: Position::new(2, 0), old_end: Position::new(2, 0), new_end: Position::new(4, 0) };
        assert_eq!(shift_position(Position::new(1, 5), &e), Position::new(1, 5));
        assert_eq!(shift_position(Position::new(7, 3), &e), Position::new(9, 3));
        // Same-line edit: columns after it move.
        let e = Edit { start: Position::new(3, 2), old_end: Position::new(3, 4), new_end: Position::new(3, 7) };
        assert_eq!(shift_position(Position::new(3, 10), &e), Position::new(3, 13));
        assert_eq!(shift_position(Position::new(3, 3), &e), Position::new(3, 2));
        // A full-text change is reduced to the lines that differ.
        let e = line_diff("a\nb\nc\nd", "a\nX\nY\nc\nd");
        assert_eq!(shift_position(Position::new(3, 1), &e), Position::new(4, 1));
        assert_eq!(shift_position(Position::new(0, 1), &e), Position::new(0, 1));
    }
}
