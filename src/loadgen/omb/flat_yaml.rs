//! `[pure]` The YAML that OpenMessaging Benchmark workload files use: one
//! block mapping of scalars, `key: value` per line, `#` comments, plain,
//! 'single-quoted' or "double-quoted" values, an optional `---` first.
//! Anything else (nested mappings, sequences, flow collections, multi-line
//! scalars, anchors, tags) is refused with the line it is on, so a file
//! this reader cannot represent never parses into something else.

use std::collections::BTreeMap;

/// One value of the mapping.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// An empty value, `~` or `null` (YAML's null): an absent field.
    Null,
    /// Unquoted text (may be a number).
    Plain(String),
    /// Quoted text: always a string.
    Quoted(String),
}

impl Scalar {
    /// The text of a string field (a plain scalar such as
    /// `1 topic / 3 partitions` is a string too); `None` for null.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Scalar::Null => None,
            Scalar::Plain(s) | Scalar::Quoted(s) => Some(s),
        }
    }

    /// A non-negative decimal integer (YAML 1.2 core schema `int`, base 10).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::Plain(s) => s.strip_prefix('+').unwrap_or(s).parse().ok(),
            _ => None,
        }
    }

    /// A decimal integer that may be negative.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Scalar::Plain(s) => s.strip_prefix('+').unwrap_or(s).parse().ok(),
            _ => None,
        }
    }

    /// A YAML 1.2 core schema `float` (or `int`): `1`, `0.1`, `1e3`,
    /// `.inf`, `-.inf`, `.nan`.
    pub fn as_f64(&self) -> Option<f64> {
        let Scalar::Plain(s) = self else {
            return None;
        };
        match s.as_str() {
            ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Some(f64::INFINITY),
            "-.inf" | "-.Inf" | "-.INF" => Some(f64::NEG_INFINITY),
            ".nan" | ".NaN" | ".NAN" => Some(f64::NAN),
            // Rust also reads "inf" and "NaN", which YAML calls strings.
            t if t
                .bytes()
                .any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E') =>
            {
                None
            }
            t => t.parse().ok(),
        }
    }
}

/// The mapping of a flat YAML document, by key.
pub fn parse(text: &str) -> Result<BTreeMap<String, Scalar>, String> {
    let mut map = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let at = |what: &str| format!("line {line_no}: {what}");
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if i == 0 && (trimmed == "---" || trimmed.starts_with("--- #")) {
            continue;
        }
        if trimmed.len() != line.len() {
            return Err(at("nested values are not supported"));
        }
        let Some((key, rest)) = split_key(line) else {
            return Err(at("expected `key: value`"));
        };
        let value = scalar(rest.trim()).map_err(|e| at(&e))?;
        if map.insert(key.to_owned(), value).is_some() {
            return Err(at(&format!("duplicate key {key:?}")));
        }
    }
    Ok(map)
}

/// `key` and the rest of `line` after `key:` (the colon followed by a
/// space or the end of the line, as YAML reads a plain key).
fn split_key(line: &str) -> Option<(&str, &str)> {
    let mut from = 0;
    while let Some(pos) = line[from..].find(':') {
        let colon = from + pos;
        let after = &line[colon + 1..];
        if after.is_empty() || after.starts_with(' ') || after.starts_with('\t') {
            let key = line[..colon].trim_end();
            let plain_key = !key.is_empty()
                && !key.starts_with([
                    '-', '?', '"', '\'', '[', '{', '&', '*', '!', '|', '>', '%', '@',
                ]);
            return plain_key.then_some((key, after));
        }
        from = colon + 1;
    }
    None
}

/// The value after `key:`, its trailing comment removed.
fn scalar(text: &str) -> Result<Scalar, String> {
    let unsupported = |what: &str| Err(format!("{what} are not supported"));
    match text.chars().next() {
        None => Ok(Scalar::Null),
        Some('"') => quoted(text, '"').map(Scalar::Quoted),
        Some('\'') => quoted(text, '\'').map(Scalar::Quoted),
        Some('#') => Ok(Scalar::Null),
        Some('[' | '{') => unsupported("flow collections"),
        Some('|' | '>') => unsupported("block scalars"),
        Some('&' | '*' | '!') => unsupported("anchors, aliases and tags"),
        Some('-') if text == "-" || text.starts_with("- ") => unsupported("sequences"),
        Some(_) => {
            // A plain scalar ends at " #" (a comment).
            let value = text.find(" #").map_or(text, |c| &text[..c]).trim_end();
            Ok(match value {
                "~" | "null" | "Null" | "NULL" => Scalar::Null,
                _ => Scalar::Plain(value.to_owned()),
            })
        }
    }
}

/// A quoted scalar on one line and what may follow it (a comment only).
fn quoted(text: &str, quote: char) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        if c == quote {
            if quote == '\'' && text[i + 1..].starts_with('\'') {
                chars.next(); // '' is one ' inside single quotes
                out.push('\'');
                continue;
            }
            let tail = text[i + 1..].trim_start();
            if tail.is_empty() || tail.starts_with('#') {
                return Ok(out);
            }
            return Err("text after a quoted value".into());
        }
        if quote == '"' && c == '\\' {
            let escaped = match chars.next().map(|(_, e)| e) {
                Some('"') => '"',
                Some('\\') => '\\',
                Some('/') => '/',
                Some('n') => '\n',
                Some('t') => '\t',
                Some('0') => '\0',
                Some(e) => return Err(format!("escape \\{e} is not supported")),
                None => break,
            };
            out.push(escaped);
            continue;
        }
        out.push(c);
    }
    Err("unterminated quoted value".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> Scalar {
        Scalar::Plain(s.into())
    }

    #[test]
    fn a_flat_mapping_with_comments_quotes_and_nulls_parses() {
        let map = parse(
            "---\n# comment\nname: 1 topic / 3 partitions / 1kb\n\n\
             keyDistributor: \"KEY_ROUND_ROBIN\"  # trailing\n\
             payloadFile: 'payload/it''s.data'\nrate: 2000 # per second\n\
             empty:\ntilde: ~\nurl: http://x:1/y\nesc: \"a\\\"b\\\\c\"\n",
        )
        .unwrap();
        assert_eq!(map["name"], plain("1 topic / 3 partitions / 1kb"));
        assert_eq!(
            map["keyDistributor"],
            Scalar::Quoted("KEY_ROUND_ROBIN".into())
        );
        assert_eq!(
            map["payloadFile"],
            Scalar::Quoted("payload/it's.data".into())
        );
        assert_eq!(map["rate"].as_u64(), Some(2000));
        assert_eq!(map["empty"], Scalar::Null);
        assert_eq!(map["tilde"], Scalar::Null);
        assert_eq!(map["url"], plain("http://x:1/y"));
        assert_eq!(map["esc"].as_str(), Some("a\"b\\c"));
        assert_eq!(map.len(), 8);
    }

    #[test]
    fn numbers_follow_the_yaml_core_schema() {
        assert_eq!(plain("0.1").as_f64(), Some(0.1));
        assert_eq!(plain("1").as_f64(), Some(1.0));
        assert_eq!(plain("1e3").as_f64(), Some(1000.0));
        assert_eq!(plain("-.inf").as_f64(), Some(f64::NEG_INFINITY));
        assert!(plain(".nan").as_f64().unwrap().is_nan());
        assert_eq!(plain("inf").as_f64(), None, "a string in YAML");
        assert_eq!(plain("-1").as_u64(), None);
        assert_eq!(plain("-1").as_i64(), Some(-1));
        assert_eq!(plain("+7").as_u64(), Some(7));
        assert_eq!(plain("1.5").as_u64(), None);
        assert_eq!(
            Scalar::Quoted("1".into()).as_u64(),
            None,
            "a quoted 1 is a string"
        );
    }

    #[test]
    fn what_the_subset_cannot_represent_is_refused_with_its_line() {
        for (doc, line) in [
            ("a: 1\nb:\n  c: 2\n", "line 3"),
            ("a: [1, 2]\n", "line 1"),
            ("a:\n- 1\n", "line 2"),
            ("a: |\n", "line 1"),
            ("a: &x 1\n", "line 1"),
            ("a: 1\na: 2\n", "line 2"),
            ("just text\n", "line 1"),
            ("a: \"open\n", "line 1"),
            ("a: \"x\" y\n", "line 1"),
        ] {
            let err = parse(doc).unwrap_err();
            assert!(err.starts_with(line), "{doc:?}: {err}");
        }
    }
}
