//! `[pure]` SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka
//! 3.9 serves them: the credential derivation of
//! `clients/.../security/scram/internals/ScramFormatter.java`, the
//! credential string of `ScramCredentialUtils.java`, the messages of
//! `ScramMessages.java` and the server exchange of `ScramSaslServer.java`
//! (only gs2 flag `n`; the server rebuilds client-first-bare from the
//! parsed fields; it checks that the final nonce ends with its own and
//! proves the client with `H(ClientSignature XOR proof) == StoredKey`).
//! Hashes, HMAC and PBKDF2 are ring's.

use std::num::NonZeroU32;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};

use super::MechStep;
use crate::config::sasl::SaslMechanism;

/// `ScramMechanism.minIterations()` (both mechanisms).
pub const MIN_ITERATIONS: i32 = 4096;
/// `ScramMechanism.maxIterations()` (AlterUserScramCredentials' bound).
pub const MAX_ITERATIONS: i32 = 16384;

/// A stored SCRAM credential (`ScramCredential`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

/// Kafka's mechanism type in AlterUserScramCredentials /
/// DescribeUserScramCredentials (`ScramMechanism.type()`): 1 = SHA-256,
/// 2 = SHA-512; PLAIN has none.
pub fn mechanism_type(m: SaslMechanism) -> Option<i8> {
    match m {
        SaslMechanism::ScramSha256 => Some(1),
        SaslMechanism::ScramSha512 => Some(2),
        SaslMechanism::Plain | SaslMechanism::OAuthBearer => None,
    }
}

/// The SCRAM mechanism of a type number.
pub fn mechanism_of_type(t: i8) -> Option<SaslMechanism> {
    match t {
        1 => Some(SaslMechanism::ScramSha256),
        2 => Some(SaslMechanism::ScramSha512),
        _ => None,
    }
}

fn algorithms(
    m: SaslMechanism,
) -> (
    hmac::Algorithm,
    &'static digest::Algorithm,
    pbkdf2::Algorithm,
) {
    match m {
        SaslMechanism::ScramSha512 => (
            hmac::HMAC_SHA512,
            &digest::SHA512,
            pbkdf2::PBKDF2_HMAC_SHA512,
        ),
        // PLAIN and OAUTHBEARER never reach here; SHA-256 is the other SCRAM.
        SaslMechanism::ScramSha256 | SaslMechanism::Plain | SaslMechanism::OAuthBearer => (
            hmac::HMAC_SHA256,
            &digest::SHA256,
            pbkdf2::PBKDF2_HMAC_SHA256,
        ),
    }
}

fn hmac(m: SaslMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    let (alg, _, _) = algorithms(m);
    hmac::sign(&hmac::Key::new(alg, key), data)
        .as_ref()
        .to_vec()
}

/// HMAC with the mechanism's hash (`ScramFormatter.hmac`).
pub fn hmac_of(m: SaslMechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac(m, key, data)
}

fn hash(m: SaslMechanism, data: &[u8]) -> Vec<u8> {
    let (_, alg, _) = algorithms(m);
    digest::digest(alg, data).as_ref().to_vec()
}

/// `Hi(password, salt, i)` = PBKDF2 with one block of the HMAC's size
/// (`ScramFormatter.hi`; the password's UTF-8 bytes, no SASLprep).
pub fn salted_password(m: SaslMechanism, password: &[u8], salt: &[u8], iterations: i32) -> Vec<u8> {
    let (_, d, alg) = algorithms(m);
    let mut out = vec![0u8; d.output_len()];
    let rounds = u32::try_from(iterations)
        .ok()
        .and_then(NonZeroU32::new)
        .unwrap_or(NonZeroU32::MIN);
    pbkdf2::derive(alg, rounds, salt, password, &mut out);
    out
}

/// The credential stored for a salted password (`ScramFormatter`:
/// StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
/// HMAC(SaltedPassword, "Server Key")).
pub fn credential_from_salted(
    m: SaslMechanism,
    salted: &[u8],
    salt: &[u8],
    iterations: i32,
) -> ScramCredential {
    let client_key = hmac(m, salted, b"Client Key");
    ScramCredential {
        salt: salt.to_vec(),
        stored_key: hash(m, &client_key),
        server_key: hmac(m, salted, b"Server Key"),
        iterations,
    }
}

/// The credential of `password` with `salt` and `iterations`.
pub fn credential(
    m: SaslMechanism,
    password: &str,
    salt: &[u8],
    iterations: i32,
) -> ScramCredential {
    let salted = salted_password(m, password.as_bytes(), salt, iterations);
    credential_from_salted(m, &salted, salt, iterations)
}

impl ScramCredential {
    /// `ScramCredentialUtils.credentialToString`:
    /// `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`.
    pub fn to_kafka_string(&self) -> String {
        format!(
            "salt={},stored_key={},server_key={},iterations={}",
            B64.encode(&self.salt),
            B64.encode(&self.stored_key),
            B64.encode(&self.server_key),
            self.iterations
        )
    }

    /// `ScramCredentialUtils.credentialFromString`: split on `,`, then on
    /// the first `=`; exactly the four keys.
    pub fn parse(text: &str) -> Result<ScramCredential, String> {
        let mut salt = None;
        let mut stored = None;
        let mut server = None;
        let mut iterations = None;
        let mut count = 0;
        for part in text.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("invalid credential field {part:?}"))?;
            count += 1;
            let b64 = |v: &str| B64.decode(v).map_err(|e| format!("{k}: {e}"));
            match k {
                "salt" => salt = Some(b64(v)?),
                "stored_key" => stored = Some(b64(v)?),
                "server_key" => server = Some(b64(v)?),
                "iterations" => {
                    iterations = Some(v.parse::<i32>().map_err(|e| format!("iterations: {e}"))?)
                }
                other => return Err(format!("unexpected credential field {other:?}")),
            }
        }
        match (salt, stored, server, iterations) {
            (Some(salt), Some(stored_key), Some(server_key), Some(iterations)) if count == 4 => {
                Ok(ScramCredential {
                    salt,
                    stored_key,
                    server_key,
                    iterations,
                })
            }
            _ => Err("a credential needs salt, stored_key, server_key and iterations".into()),
        }
    }
}

/// Compare in time independent of where the bytes differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// `ScramFormatter.username`: `=2C` → `,`, `=3D` → `=`; any other `=`
/// is invalid (the message pattern's SASLNAME).
fn unescape_saslname(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(t) = tail.strip_prefix("=2C") {
            out.push(',');
            rest = t;
        } else if let Some(t) = tail.strip_prefix("=3D") {
            out.push('=');
            rest = t;
        } else {
            return None;
        }
    }
    out.push_str(rest);
    Some(out)
}

fn printable(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

fn valid_value(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x01..=0x7f).contains(&b) && b != b',')
}

/// A parsed client-first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    pub authzid: String,
    pub saslname: String,
    pub nonce: String,
    /// `k=v` extensions in the order sent.
    pub extensions: Vec<(String, String)>,
}

impl ClientFirst {
    /// `ScramMessages.ClientFirstMessage` (its pattern, by hand).
    pub fn parse(msg: &str) -> Option<ClientFirst> {
        let rest = msg.strip_prefix("n,")?;
        let (authz, rest) = rest.split_once(',')?;
        let authzid = match authz {
            "" => String::new(),
            a => a
                .strip_prefix("a=")
                .filter(|v| unescape_saslname(v).is_some())?
                .to_owned(),
        };
        let mut parts = rest.split(',');
        let mut first = parts.next()?;
        if let Some(reserved) = first.strip_prefix("m=") {
            if !valid_value(reserved) {
                return None;
            }
            first = parts.next()?;
        }
        let saslname = first.strip_prefix("n=")?;
        unescape_saslname(saslname).filter(|n| !n.is_empty())?;
        let nonce = parts.next()?.strip_prefix("r=")?;
        if !printable(nonce) {
            return None;
        }
        let mut extensions = Vec::new();
        for ext in parts {
            let (k, v) = ext.split_once('=')?;
            if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphabetic()) || !valid_value(v) {
                return None;
            }
            extensions.push((k.to_owned(), v.to_owned()));
        }
        Some(ClientFirst {
            authzid,
            saslname: saslname.to_owned(),
            nonce: nonce.to_owned(),
            extensions,
        })
    }

    /// `clientFirstMessageBare` as the server rebuilds it.
    pub fn bare(&self) -> String {
        let mut s = format!("n={},r={}", self.saslname, self.nonce);
        for (k, v) in &self.extensions {
            s.push(',');
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s
    }
}

/// A parsed client-final message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinal {
    pub channel_binding: Vec<u8>,
    pub nonce: String,
    pub proof: Vec<u8>,
}

impl ClientFinal {
    /// `ScramMessages.ClientFinalMessage`.
    pub fn parse(msg: &str) -> Option<ClientFinal> {
        let mut parts = msg.split(',');
        let channel = B64.decode(parts.next()?.strip_prefix("c=")?).ok()?;
        let nonce = parts.next()?.strip_prefix("r=")?;
        if !printable(nonce) {
            return None;
        }
        let rest: Vec<&str> = parts.collect();
        let (last, exts) = rest.split_last()?;
        for ext in exts {
            let (k, v) = ext.split_once('=')?;
            if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphabetic()) || !valid_value(v) {
                return None;
            }
        }
        let proof = B64.decode(last.strip_prefix("p=")?).ok()?;
        Some(ClientFinal {
            channel_binding: channel,
            nonce: nonce.to_owned(),
            proof,
        })
    }

    /// `clientFinalMessageWithoutProof`.
    pub fn without_proof(&self) -> String {
        format!("c={},r={}", B64.encode(&self.channel_binding), self.nonce)
    }
}

/// Where a server exchange is.
#[derive(Debug, Clone)]
enum ScramState {
    ReceiveClientFirst,
    ReceiveClientFinal {
        username: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
        credential: ScramCredential,
    },
    Done,
}

/// One SCRAM server exchange (`ScramSaslServer`).
#[derive(Debug, Clone)]
pub struct ScramServer {
    mechanism: SaslMechanism,
    state: ScramState,
}

/// The generic failure (Kafka replaces a plain `SaslException` with it so
/// that user existence does not leak).
fn generic(log: String) -> MechStep {
    MechStep::Failed {
        client_message: None,
        log,
    }
}

impl ScramServer {
    pub fn new(mechanism: SaslMechanism) -> Self {
        Self {
            mechanism,
            state: ScramState::ReceiveClientFirst,
        }
    }

    /// The next client token. `lookup` finds the stored credential of a
    /// user for this mechanism; `server_nonce` is fresh randomness the
    /// driver drew (printable, no `,`).
    pub fn on_token(
        &mut self,
        token: &[u8],
        lookup: &dyn Fn(&str) -> Option<ScramCredential>,
        server_nonce: &str,
    ) -> MechStep {
        let state = std::mem::replace(&mut self.state, ScramState::Done);
        let Ok(msg) = std::str::from_utf8(token) else {
            return generic("SCRAM message is not UTF-8".into());
        };
        match state {
            ScramState::ReceiveClientFirst => self.on_client_first(msg, lookup, server_nonce),
            ScramState::ReceiveClientFinal {
                username,
                client_first_bare,
                server_first,
                nonce,
                credential,
            } => {
                let Some(fin) = ClientFinal::parse(msg) else {
                    return generic("Invalid SCRAM client final message format".into());
                };
                if !fin.nonce.ends_with(&nonce) {
                    return generic("Invalid client nonce in the final client message.".into());
                }
                let auth_message =
                    format!("{client_first_bare},{server_first},{}", fin.without_proof());
                let client_signature = hmac(
                    self.mechanism,
                    &credential.stored_key,
                    auth_message.as_bytes(),
                );
                if fin.proof.len() != client_signature.len() {
                    return generic("Invalid client credentials (proof length)".into());
                }
                let client_key: Vec<u8> = client_signature
                    .iter()
                    .zip(&fin.proof)
                    .map(|(a, b)| a ^ b)
                    .collect();
                if !constant_time_eq(&hash(self.mechanism, &client_key), &credential.stored_key) {
                    return generic(format!("Invalid client credentials for user {username}"));
                }
                let server_signature = hmac(
                    self.mechanism,
                    &credential.server_key,
                    auth_message.as_bytes(),
                );
                MechStep::Complete {
                    response: format!("v={}", B64.encode(server_signature)).into_bytes(),
                    authorization_id: username,
                }
            }
            ScramState::Done => generic("unexpected SCRAM message after the exchange".into()),
        }
    }

    fn on_client_first(
        &mut self,
        msg: &str,
        lookup: &dyn Fn(&str) -> Option<ScramCredential>,
        server_nonce: &str,
    ) -> MechStep {
        let Some(first) = ClientFirst::parse(msg) else {
            return generic("Invalid SCRAM client first message format".into());
        };
        // ScramSaslServer: delegation tokens (tokenauth=true) are a separate
        // credential cache shardlog does not keep.
        if first
            .extensions
            .iter()
            .any(|(k, v)| k == "tokenauth" && v.eq_ignore_ascii_case("true"))
        {
            return generic("delegation token authentication is not supported".into());
        }
        let Some(username) = unescape_saslname(&first.saslname) else {
            return generic("invalid SCRAM user name".into());
        };
        let authzid = unescape_saslname(&first.authzid).unwrap_or_default();
        if !authzid.is_empty() && authzid != username {
            return MechStep::Failed {
                client_message: Some(
                    "Authentication failed: Client requested an authorization id that is \
                     different from username"
                        .into(),
                ),
                log: format!("authorization id {authzid:?} differs from user {username:?}"),
            };
        }
        let Some(credential) = lookup(&username) else {
            return generic(format!(
                "no {} credential for user {username}",
                self.mechanism.name()
            ));
        };
        if credential.iterations < MIN_ITERATIONS {
            return generic(format!(
                "Iterations {} is less than the minimum {MIN_ITERATIONS} for {}",
                credential.iterations,
                self.mechanism.name()
            ));
        }
        let nonce = format!("{}{server_nonce}", first.nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        self.state = ScramState::ReceiveClientFinal {
            username,
            client_first_bare: first.bare(),
            server_first: server_first.clone(),
            nonce,
            credential,
        };
        MechStep::Challenge(server_first.into_bytes())
    }
}

#[cfg(test)]
mod tests;
