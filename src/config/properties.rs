//! `[pure]` Java `Properties` text (`server.properties`) and `--override
//! key=value` pairs, before any key is interpreted.

use super::ConfigError;

/// Parse `--override key=value`.
pub fn parse_override(text: &str) -> Result<(String, String), ConfigError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(ConfigError::Syntax {
            line: 0,
            text: text.to_owned(),
        }),
    }
}

/// Java `Properties` syntax: `#`/`!` comments, `key=value`, `key: value` or
/// `key value`, surrounding whitespace trimmed, `\` continues a line.
pub fn parse_properties(text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut pairs = Vec::new();
    let mut logical = String::new();
    let mut start_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        if logical.is_empty() {
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            start_line = i + 1;
        }
        match line.strip_suffix('\\') {
            Some(head) if !head.ends_with('\\') => logical.push_str(head),
            _ => {
                logical.push_str(line);
                pairs.push(split_pair(&logical, start_line)?);
                logical.clear();
            }
        }
    }
    if !logical.is_empty() {
        pairs.push(split_pair(&logical, start_line)?);
    }
    Ok(pairs)
}

fn split_pair(line: &str, line_no: usize) -> Result<(String, String), ConfigError> {
    let line = line.trim();
    // The key ends at the first unescaped '=', ':' or whitespace; whitespace
    // may be followed by one '=' or ':' (java.util.Properties.load).
    let (key, value) = match line.find(|c: char| c == '=' || c == ':' || c.is_whitespace()) {
        Some(at) => {
            let after = &line[at..];
            let value = if after.starts_with(char::is_whitespace) {
                let after = after.trim_start();
                after.strip_prefix(['=', ':']).unwrap_or(after)
            } else {
                // '=' and ':' are one byte long.
                &after[1..]
            };
            (&line[..at], value)
        }
        None => (line, ""),
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(ConfigError::Syntax {
            line: line_no,
            text: line.to_owned(),
        });
    }
    Ok((key.to_owned(), value.trim().to_owned()))
}
