//! `[pure]` The text of a `sasl.jaas.config` value, read as Kafka's
//! `clients/src/main/java/org/apache/kafka/common/security/JaasConfig.java`
//! reads it with a `java.io.StreamTokenizer`: entries
//! `<LoginModule class> <flag> key=value ... ;`, values quoted with `"` or
//! `'` (backslash escapes) or bare words, `//` and `/* */` comments.

/// One login module entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JaasEntry {
    pub login_module: String,
    /// `required`, `requisite`, `sufficient` or `optional` (lower case).
    pub flag: String,
    /// The options in the order written (a repeated key keeps its last
    /// value, as Kafka's `HashMap`).
    pub options: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Char(char),
}

/// Split `text` into StreamTokenizer-like tokens.
fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let is_word =
        |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '$' | '.') || !c.is_ascii();
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c == '"' || c == '\'' {
            let mut s = String::new();
            i += 1;
            loop {
                let Some(&ch) = chars.get(i) else {
                    return Err("unterminated quoted value in JAAS config".into());
                };
                i += 1;
                if ch == c {
                    break;
                }
                if ch == '\\' {
                    let Some(&esc) = chars.get(i) else {
                        return Err("unterminated quoted value in JAAS config".into());
                    };
                    i += 1;
                    s.push(match esc {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        other => other,
                    });
                } else {
                    s.push(ch);
                }
            }
            out.push(Token::Quoted(s));
        } else if is_word(c) {
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else {
            out.push(Token::Char(c));
            i += 1;
        }
    }
    Ok(out)
}

/// Every entry of `text` (Kafka's `JaasConfig` constructor and
/// `parseAppConfigurationEntry`, with its error messages).
pub fn parse(text: &str) -> Result<Vec<JaasEntry>, String> {
    let toks = tokens(text)?;
    let mut it = toks.into_iter();
    let mut entries = Vec::new();
    while let Some(first) = it.next() {
        let login_module = match first {
            Token::Word(w) | Token::Quoted(w) => w,
            Token::Char(c) => {
                return Err(format!(
                    "unexpected {c:?} where a login module was expected in JAAS config"
                ))
            }
        };
        let flag = match it.next() {
            Some(Token::Word(w)) => w.to_ascii_lowercase(),
            _ => return Err("Login module control flag not specified in JAAS config".into()),
        };
        if !matches!(
            flag.as_str(),
            "required" | "requisite" | "sufficient" | "optional"
        ) {
            return Err(format!(
                "Invalid login module control flag '{flag}' in JAAS config"
            ));
        }
        let mut options: Vec<(String, String)> = Vec::new();
        let mut terminated = false;
        while let Some(t) = it.next() {
            let key = match t {
                Token::Char(';') => {
                    terminated = true;
                    break;
                }
                Token::Word(w) | Token::Quoted(w) => w,
                Token::Char(c) => return Err(format!("unexpected {c:?} in JAAS config")),
            };
            let value = match (it.next(), it.next()) {
                (Some(Token::Char('=')), Some(Token::Word(v) | Token::Quoted(v))) => v,
                _ => {
                    return Err(format!(
                        "Value not specified for key '{key}' in JAAS config"
                    ))
                }
            };
            options.retain(|(k, _)| *k != key);
            options.push((key, value));
        }
        if !terminated {
            return Err("JAAS config entry not terminated by semi-colon".into());
        }
        entries.push(JaasEntry {
            login_module,
            flag,
            options,
        });
    }
    if entries.is_empty() {
        return Err("Login module not specified in JAAS config".into());
    }
    Ok(entries)
}

/// The one entry of a broker's `sasl.jaas.config` (Kafka's
/// `JaasContext.load`: a property must hold exactly one login module).
pub fn parse_single(text: &str) -> Result<JaasEntry, String> {
    let mut entries = parse(text)?;
    if entries.len() != 1 {
        return Err(format!(
            "JAAS config property contains {} login modules, should be 1 module",
            entries.len()
        ));
    }
    Ok(entries.remove(0))
}

impl JaasEntry {
    /// The value of option `key`.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_entry_with_users_parses_as_kafka_reads_it() {
        let e = parse_single(
            "org.apache.kafka.common.security.plain.PlainLoginModule required \
             username=\"admin\" password='admin-secret' // the broker\n \
             user_admin=\"admin-secret\" /* alice */ user_alice=\"a\\\"b\";",
        )
        .unwrap();
        assert_eq!(e.login_module, super::super::PLAIN_LOGIN_MODULE);
        assert_eq!(e.flag, "required");
        assert_eq!(e.option("username"), Some("admin"));
        assert_eq!(e.option("password"), Some("admin-secret"));
        assert_eq!(e.option("user_alice"), Some("a\"b"));
        assert_eq!(e.options.len(), 4);
    }

    #[test]
    fn malformed_entries_are_refused_with_kafkas_messages() {
        let m = "org.apache.kafka.common.security.scram.ScramLoginModule";
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "Login module not specified"),
            (m.to_owned(), "control flag not specified"),
            (format!("{m} maybe;"), "Invalid login module control flag"),
            (
                format!("{m} required a=;"),
                "Value not specified for key 'a'",
            ),
            (
                format!("{m} required a=\"b\""),
                "not terminated by semi-colon",
            ),
            (
                format!("{m} required; {m} required;"),
                "contains 2 login modules",
            ),
            (format!("{m} required a=\"b;"), "unterminated"),
        ];
        for (text, want) in cases {
            let err = parse_single(&text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        assert!(parse_single(&format!("{m} REQUIRED;")).is_ok());
    }
}
