//! A small YAML writer for JSON-like values (the witnesses' format): block mappings and
//! sequences, every string double-quoted with JSON escapes (which YAML reads the same way),
//! keys in insertion order. Enough for data cpals produces; not a general YAML library.

use serde_json::Value;

/// The YAML text of `v` (a document without the `---` marker), ending with a newline.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Array(items) if !items.is_empty() => seq(&mut out, items, 0),
        Value::Object(map) if !map.is_empty() => mapping(&mut out, map, 0),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => serde_json::to_string(s).expect("a string serialises"),
        Value::Array(a) if a.is_empty() => "[]".into(),
        Value::Object(m) if m.is_empty() => "{}".into(),
        _ => unreachable!("collections are written in block style"),
    }
}

fn is_block(v: &Value) -> bool {
    matches!(v, Value::Array(a) if !a.is_empty()) || matches!(v, Value::Object(m) if !m.is_empty())
}

fn key(k: &str) -> String {
    // Plain keys for the identifiers the format uses, quoted otherwise (file names).
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !k.starts_with(|c: char| c.is_ascii_digit()) {
        k.to_string()
    } else {
        serde_json::to_string(k).expect("a string serialises")
    }
}

fn mapping(out: &mut String, map: &serde_json::Map<String, Value>, indent: usize) {
    for (k, v) in map {
        out.push_str(&" ".repeat(indent));
        out.push_str(&key(k));
        out.push(':');
        write_value(out, v, indent + 2);
    }
}

fn seq(out: &mut String, items: &[Value], indent: usize) {
    for v in items {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        match v {
            Value::Object(m) if !m.is_empty() => {
                // The first key goes on the dash's line, the others below it.
                let mut first = true;
                for (k, x) in m {
                    if first {
                        out.push(' ');
                        first = false;
                    } else {
                        out.push_str(&" ".repeat(indent + 2));
                    }
                    out.push_str(&key(k));
                    out.push(':');
                    write_value(out, x, indent + 4);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                seq(out, a, indent + 2);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn write_value(out: &mut String, v: &Value, indent: usize) {
    if is_block(v) {
        out.push('\n');
        match v {
            Value::Array(a) => seq(out, a, indent),
            Value::Object(m) => mapping(out, m, indent),
            _ => unreachable!(),
        }
    } else {
        out.push(' ');
        out.push_str(&scalar(v));
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::to_yaml;
    use serde_json::json;

    #[test]
    fn nested_sequences_of_mappings() {
        let v = json!([{ "entry_type": "x", "metadata": { "n": 1, "files": ["a.c"], "h": { "a.c": "ff" } },
                         "content": [{ "segment": [{ "waypoint": { "type": "target", "s": "q\"\\" } }] }] }]);
        let expected = "- entry_type: \"x\"\n  metadata:\n    n: 1\n    files:\n      - \"a.c\"\n    h:\n      \"a.c\": \"ff\"\n  content:\n    - segment:\n        - waypoint:\n            type: \"target\"\n            s: \"q\\\"\\\\\"\n";
        assert_eq!(to_yaml(&v), expected);
    }
}
