//! `[pure]` The principal of a TLS client certificate (Kafka 3.9,
//! `clients/.../security/ssl/SslPrincipalMapper.java`, KIP-371, and
//! `DefaultKafkaPrincipalBuilder`): the subject DN rendered as Java's
//! `X500Principal.getName()` (RFC 2253, `sun.security.x509.AVA` /
//! `RDN.toRFC2253String`), then mapped by `ssl.principal.mapping.rules`.

use regex::Regex;
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use crate::config::ConfigError;

/// KIP-371's rule grammar, `SslPrincipalMapper.RULE_PATTERN`, compiled as
/// Java compiles it (Rust's regex is leftmost-first as java.util.regex).
const RULE_PATTERN: &str = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)";

/// One mapping rule.
#[derive(Debug, Clone)]
enum Rule {
    Default,
    Map {
        /// The rule's regex as written (for `replaceAll`).
        pattern: Regex,
        /// The same, anchored at both ends (`Matcher.matches`).
        whole: Regex,
        replacement: String,
        lower: bool,
        upper: bool,
    },
}

/// `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

fn invalid(rules: &str, reason: String) -> ConfigError {
    ConfigError::InvalidValue {
        key: "ssl.principal.mapping.rules".into(),
        value: rules.into(),
        reason,
    }
}

impl PrincipalMapper {
    /// Parse the rules (`SslPrincipalMapper.splitRules` + `parseRules`):
    /// comma-separated `DEFAULT` or `RULE:regex/replacement/[L|U]`.
    pub fn parse(rules: &str) -> Result<Self, ConfigError> {
        let splitter = Regex::new(&format!(r"\s*({RULE_PATTERN})\s*(,\s*|$)"))
            .map_err(|e| invalid(rules, e.to_string()))?;
        let parser = Regex::new(&format!("^(?:{RULE_PATTERN})"))
            .map_err(|e| invalid(rules, e.to_string()))?;
        let mut parsed = Vec::new();
        let trimmed = rules.trim();
        // Matcher.find: after an empty match, the next search starts one
        // character further.
        let mut at = 0;
        while at <= trimmed.len() {
            let Some(caps) = splitter.captures_at(trimmed, at) else {
                break;
            };
            let (Some(whole), Some(rule)) = (caps.get(0), caps.get(1)) else {
                break;
            };
            at = if whole.end() == whole.start() {
                whole.end()
                    + trimmed[whole.end()..]
                        .chars()
                        .next()
                        .map_or(1, char::len_utf8)
            } else {
                whole.end()
            };
            let rule = rule.as_str();
            let Some(m) = parser.captures(rule) else {
                return Err(invalid(rules, format!("Invalid rule: {rule}")));
            };
            let end = m.get(0).map_or(0, |g| g.end());
            if end != rule.len() {
                return Err(invalid(
                    rules,
                    format!(
                        "Invalid rule: `{rule}`, unmatched substring: `{}`",
                        &rule[end..]
                    ),
                ));
            }
            // Empty rules are ignored.
            if m.get(1).is_some() {
                parsed.push(Rule::Default);
            } else if let (Some(pattern), Some(replacement)) = (m.get(2), m.get(4)) {
                let flag = m.get(6).map_or("", |g| g.as_str());
                let compile = |p: &str| {
                    Regex::new(p).map_err(|e| {
                        invalid(
                            rules,
                            format!(
                                "the regular expression {:?} is not supported: {e}",
                                pattern.as_str()
                            ),
                        )
                    })
                };
                parsed.push(Rule::Map {
                    pattern: compile(pattern.as_str())?,
                    whole: compile(&format!("^(?:{})$", pattern.as_str()))?,
                    replacement: replacement.as_str().to_owned(),
                    lower: flag == "L",
                    upper: flag == "U",
                });
            }
        }
        Ok(Self { rules: parsed })
    }

    /// The principal name for the RFC 2253 `dn`: the first rule that
    /// matches the whole DN (`SslPrincipalMapper.getName`); no match is an
    /// error (`NoMatchingRule`), which fails the connection's authentication.
    pub fn name_for(&self, dn: &str) -> Result<String, String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_owned()),
                Rule::Map {
                    pattern,
                    whole,
                    replacement,
                    lower,
                    upper,
                } => {
                    if !whole.is_match(dn) {
                        continue;
                    }
                    let name = replace_all(pattern, dn, replacement)?;
                    return Ok(if *lower {
                        name.to_lowercase()
                    } else if *upper {
                        name.to_uppercase()
                    } else {
                        name
                    });
                }
            }
        }
        Err(format!("No rules apply to {dn}, rules {}", self.describe()))
    }

    /// The principal name of a client certificate (DER): the `User:` name.
    pub fn principal_for(&self, cert_der: &[u8]) -> Result<String, String> {
        self.name_for(&rfc2253_subject(cert_der)?)
    }

    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .rules
            .iter()
            .map(|r| match r {
                Rule::Default => "DEFAULT".to_owned(),
                Rule::Map {
                    pattern,
                    replacement,
                    lower,
                    upper,
                    ..
                } => format!(
                    "RULE:{}/{}{}",
                    pattern.as_str(),
                    replacement,
                    if *lower {
                        "/L"
                    } else if *upper {
                        "/U"
                    } else {
                        ""
                    }
                ),
            })
            .collect();
        format!("[{}]", parts.join(", "))
    }
}

/// `String.replaceAll(regex, replacement)` after Kafka's
/// `escapeLiteralBackReferences`: `$n` is group n (digits taken while the
/// number stays a group), a `$n` past the group count is literal text,
/// `${name}` a named group, `\x` the character x.
fn replace_all(re: &Regex, text: &str, replacement: &str) -> Result<String, String> {
    let groups = re.captures_len() - 1;
    let mut out = String::new();
    let mut last = 0;
    let mut at = 0;
    while at <= text.len() {
        let Some(caps) = re.captures_at(text, at) else {
            break;
        };
        let Some(m) = caps.get(0) else {
            break;
        };
        out.push_str(&text[last..m.start()]);
        expand(&caps, groups, replacement, &mut out)?;
        last = m.end();
        at = if m.start() == m.end() {
            m.end() + text[m.end()..].chars().next().map_or(1, char::len_utf8)
        } else {
            m.end()
        };
    }
    out.push_str(&text[last..]);
    Ok(out)
}

/// Java's `Matcher.appendReplacement` for one match.
fn expand(
    caps: &regex::Captures<'_>,
    groups: usize,
    replacement: &str,
    out: &mut String,
) -> Result<(), String> {
    let chars: Vec<char> = replacement.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let Some(next) = chars.get(i + 1) else {
                    return Err("character to be escaped is missing".into());
                };
                out.push(*next);
                i += 2;
            }
            '$' => {
                let Some(next) = chars.get(i + 1) else {
                    return Err("Illegal group reference: group index is missing".into());
                };
                if *next == '{' {
                    let Some(close) = chars[i + 2..].iter().position(|c| *c == '}') else {
                        return Err("named capturing group is missing trailing '}'".into());
                    };
                    let name: String = chars[i + 2..i + 2 + close].iter().collect();
                    let Some(g) = caps.name(&name) else {
                        return Err(format!("No group with name {{{name}}}"));
                    };
                    out.push_str(g.as_str());
                    i += close + 3;
                    continue;
                }
                let Some(first) = next.to_digit(10) else {
                    return Err("Illegal group reference".into());
                };
                let first = first as usize;
                if first > groups {
                    if groups == 0 {
                        return Err(format!("No group {first}"));
                    }
                    // escapeLiteralBackReferences made it `\$n`: literal.
                    out.push('$');
                    i += 1;
                    continue;
                }
                let mut group = first;
                i += 2;
                while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                    let wider = group * 10 + d as usize;
                    if wider > groups {
                        break;
                    }
                    group = wider;
                    i += 1;
                }
                out.push_str(caps.get(group).map_or("", |g| g.as_str()));
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(())
}

/// The subject DN of a certificate (DER) as Java's
/// `X509Certificate.getSubjectX500Principal().getName()` prints it.
pub fn rfc2253_subject(cert_der: &[u8]) -> Result<String, String> {
    let (_, cert) = X509Certificate::from_der(cert_der)
        .map_err(|e| format!("the certificate does not parse: {e}"))?;
    Ok(rfc2253(cert.subject()))
}

/// `X500Name.getRFC2253Name`: RDNs last to first, joined by `,`; the
/// values of a multi-valued RDN joined by `+` in encoded order.
pub fn rfc2253(name: &x509_parser::x509::X509Name<'_>) -> String {
    let rdns: Vec<String> = name
        .iter()
        .map(|rdn| {
            rdn.iter()
                .map(|ava| {
                    let oid = ava.attr_type().to_id_string();
                    let value = ava.attr_value();
                    ava_rfc2253(
                        &oid,
                        value.header.class() as u8,
                        value.header.is_constructed(),
                        value.header.tag().0,
                        value.data,
                    )
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    rdns.into_iter().rev().collect::<Vec<_>>().join(",")
}

/// The keywords `AVAKeyword` marks RFC 2253 compliant.
const KEYWORDS: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// `AVA.toRFC2253String` for one attribute: `class`, `constructed`, `tag`
/// and `data` are the value's DER header fields and contents.
fn ava_rfc2253(oid: &str, class: u8, constructed: bool, tag: u32, data: &[u8]) -> String {
    let keyword = KEYWORDS
        .iter()
        .find(|(o, _)| *o == oid)
        .map_or(oid, |(_, k)| *k);
    // isDerString(value, false): PrintableString, T61String, IA5String,
    // GeneralString, UTF8String, BMPString, UniversalString.
    let der_string = class == 0 && !constructed && [19, 20, 22, 27, 12, 30, 28].contains(&tag);
    if keyword.starts_with(|c: char| c.is_ascii_digit()) || !der_string {
        let mut der = header_bytes(class, constructed, tag, data.len());
        der.extend_from_slice(data);
        let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
        return format!("{keyword}=#{hex}");
    }
    // The contents are read as UTF-8 whatever the string type
    // (`new String(value.getDataBytes(), UTF_8)`).
    let text = String::from_utf8_lossy(data);
    let mut escaped: Vec<char> = Vec::new();
    for c in text.chars() {
        if ",=+<>#;\"\\".contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let space = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| space(c)).count();
    let trail = escaped.len() - escaped.iter().rev().take_while(|c| space(c)).count();
    let mut out = format!("{keyword}=");
    for (i, c) in escaped.iter().enumerate() {
        if i < lead || i >= trail {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

/// A DER identifier and length for the `#hex` form.
fn header_bytes(class: u8, constructed: bool, tag: u32, len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let first = (class << 6) | if constructed { 0x20 } else { 0 };
    if tag < 31 {
        out.push(first | tag as u8);
    } else {
        out.push(first | 0x1f);
        let mut groups = Vec::new();
        let mut t = tag;
        loop {
            groups.push((t & 0x7f) as u8);
            t >>= 7;
            if t == 0 {
                break;
            }
        }
        for (i, g) in groups.iter().rev().enumerate() {
            out.push(if i + 1 < groups.len() { g | 0x80 } else { *g });
        }
    }
    super::eckey::push_length(&mut out, len);
    out
}

/// The subject alternative names of a certificate as comparable strings
/// (`DNS:host`, `IP:10.0.0.1`, ...), for KIP-226's SAN check.
pub fn subject_alt_names(cert_der: &[u8]) -> Result<Vec<String>, String> {
    let (_, cert) = X509Certificate::from_der(cert_der)
        .map_err(|e| format!("the certificate does not parse: {e}"))?;
    let Some(san) = cert
        .subject_alternative_name()
        .map_err(|e| format!("bad subjectAltName extension: {e}"))?
    else {
        return Ok(Vec::new());
    };
    Ok(san
        .value
        .general_names
        .iter()
        .map(|name| match name {
            GeneralName::DNSName(d) => format!("DNS:{d}"),
            GeneralName::IPAddress(ip) => format!("IP:{}", hex_or_ip(ip)),
            GeneralName::RFC822Name(m) => format!("EMAIL:{m}"),
            GeneralName::URI(u) => format!("URI:{u}"),
            other => format!("{other}"),
        })
        .collect())
}

fn hex_or_ip(bytes: &[u8]) -> String {
    match bytes.len() {
        4 => core::net::Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string(),
        16 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(bytes);
            core::net::Ipv6Addr::from(a).to_string()
        }
        _ => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(rules: &str, dn: &str) -> Result<String, String> {
        PrincipalMapper::parse(rules)
            .map_err(|e| e.to_string())?
            .name_for(dn)
    }

    #[test]
    fn kafkas_mapper_examples() {
        // SslPrincipalMapperTest.testSslPrincipalMapper (Kafka 3.9).
        let rules = [
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
            "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
            "DEFAULT",
        ]
        .join(", ");
        let m = PrincipalMapper::parse(&rules).unwrap();
        assert_eq!(
            m.name_for("CN=Duke,OU=ServiceUsers,O=Org,C=US").unwrap(),
            "duke"
        );
        assert_eq!(
            m.name_for("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US")
                .unwrap(),
            "duke@sme"
        );
        assert_eq!(
            m.name_for("cn=duke,ou=JavaSoft,dc=oracle,dc=com").unwrap(),
            "DUKE@JAVASOFT"
        );
        assert_eq!(
            m.name_for("cN=duke,OU=JavaSoft,O=Sun Microsystems")
                .unwrap(),
            "DUKE"
        );
        assert_eq!(
            m.name_for("OU=JavaSoft,O=Sun Microsystems,C=US").unwrap(),
            "OU=JavaSoft,O=Sun Microsystems,C=US"
        );
    }

    #[test]
    fn rules_parse_as_kafka_parses_them() {
        for good in [
            "DEFAULT",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "RULE:^CN=(.*?),OU=(.*?)$/$1@$2/U,RULE:x/y/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/\\/$1\\//,DEFAULT",
            "",
        ] {
            assert!(PrincipalMapper::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "DEFAULTS",
            "RULE:",
            "RULE:x/y",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/LU",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/A",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,RULE:x",
            "RULE:(?<=a)b/$1/",
        ] {
            let err = PrincipalMapper::parse(bad).unwrap_err();
            assert!(
                err.to_string().contains("ssl.principal.mapping.rules"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn back_references_past_the_group_count_stay_literal() {
        assert_eq!(
            map("RULE:^CN=(.*?),OU=(.*?)$/$1$3/", "CN=a,OU=b").unwrap(),
            "a$3"
        );
        assert_eq!(
            map("RULE:^CN=(.*?),OU=(.*?)$/$12/", "CN=a,OU=b").unwrap(),
            "a2"
        );
        assert_eq!(
            map("RULE:^CN=(.*?),OU=(.*?)$/\\$1/", "CN=a,OU=b").unwrap(),
            "$1"
        );
        assert_eq!(
            map("RULE:^CN=(.*?),OU=(.*?)$/[$2]\\/x/", "CN=a,OU=b").unwrap(),
            "[b]/x"
        );
        // The regex must match the whole DN; the first matching rule wins.
        assert_eq!(map("RULE:CN=a/x/,RULE:^.*$/y/", "CN=ab").unwrap(), "y");
        // No rule matches: an error, not the DN.
        assert!(map("RULE:^CN=admin$/admin/", "CN=other").is_err());
        // replaceAll over a pattern that can match empty: Java's "XX".
        assert_eq!(map("RULE:.*/X/", "abc").unwrap(), "XX");
    }

    #[test]
    fn ava_values_render_as_java_does() {
        assert_eq!(
            ava_rfc2253("2.5.4.3", 0, false, 12, b"a,b+c"),
            "CN=a\\,b\\+c"
        );
        assert_eq!(ava_rfc2253("2.5.4.3", 0, false, 19, b" x "), "CN=\\ x\\ ");
        assert_eq!(ava_rfc2253("2.5.4.3", 0, false, 12, b"#1"), "CN=\\#1");
        assert_eq!(
            ava_rfc2253("1.2.840.113549.1.9.1", 0, false, 22, b"a@b"),
            "1.2.840.113549.1.9.1=#1603614062"
        );
        assert_eq!(ava_rfc2253("2.5.4.3", 0, false, 4, b"\x01"), "CN=#040101");
    }
}
