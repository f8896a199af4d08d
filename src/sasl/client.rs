//! `[pure]` The client side of PLAIN and SCRAM, as Kafka 3.9's
//! `PlainSaslClient` (via the JDK) and `ScramSaslClient` speak them: the
//! tokens a broker sends when it logs in to another broker
//! (`sasl.mechanism.inter.broker.protocol`, SECURITY.md §3.9). The client
//! nonce is the caller's randomness; the server's signature is checked.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::scram::{self, constant_time_eq};
use crate::config::sasl::SaslMechanism;

/// PLAIN's one token: `NUL user NUL password` (no authorization id).
pub fn plain_token(user: &str, password: &str) -> Vec<u8> {
    format!("\u{0}{user}\u{0}{password}").into_bytes()
}

/// `ScramFormatter.saslName`: `=` → `=3D`, `,` → `=2C`.
fn escape_saslname(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// One SCRAM client exchange.
#[derive(Debug, Clone)]
pub struct ScramClient {
    mechanism: SaslMechanism,
    password: String,
    client_first_bare: String,
    client_nonce: String,
    server_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// A client for `user`; `client_nonce` is fresh, printable, no `,`.
    pub fn new(mechanism: SaslMechanism, user: &str, password: &str, client_nonce: &str) -> Self {
        Self {
            mechanism,
            password: password.to_owned(),
            client_first_bare: format!("n={},r={client_nonce}", escape_saslname(user)),
            client_nonce: client_nonce.to_owned(),
            server_signature: None,
        }
    }

    /// The client-first message.
    pub fn first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// The client-final message answering the server-first `challenge`.
    pub fn on_server_first(&mut self, challenge: &[u8]) -> Result<Vec<u8>, String> {
        let text = std::str::from_utf8(challenge).map_err(|_| "server-first is not UTF-8")?;
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for part in text.split(',') {
            match part.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = Some(B64.decode(v).map_err(|e| format!("salt: {e}"))?),
                Some(("i", v)) => iterations = v.parse::<i32>().ok(),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err(format!("invalid SCRAM server-first message {text:?}"));
        };
        if !nonce.starts_with(&self.client_nonce) || nonce.len() == self.client_nonce.len() {
            return Err("the server's nonce does not extend the client's".into());
        }
        if iterations < scram::MIN_ITERATIONS {
            return Err(format!(
                "{iterations} iterations is fewer than {}",
                scram::MIN_ITERATIONS
            ));
        }
        let salted =
            scram::salted_password(self.mechanism, self.password.as_bytes(), &salt, iterations);
        let credential = scram::credential_from_salted(self.mechanism, &salted, &salt, iterations);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let client_signature = scram::hmac_of(
            self.mechanism,
            &credential.stored_key,
            auth_message.as_bytes(),
        );
        let client_key = scram::hmac_of(self.mechanism, &salted, b"Client Key");
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        self.server_signature = Some(scram::hmac_of(
            self.mechanism,
            &credential.server_key,
            auth_message.as_bytes(),
        ));
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Check the server-final message.
    pub fn on_server_final(&self, message: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(message).map_err(|_| "server-final is not UTF-8")?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(format!("the server refused: {e}"));
        }
        let signature = text
            .strip_prefix("v=")
            .and_then(|v| B64.decode(v.split(',').next().unwrap_or_default()).ok())
            .ok_or_else(|| format!("invalid SCRAM server-final message {text:?}"))?;
        match &self.server_signature {
            Some(expected) if constant_time_eq(expected, &signature) => Ok(()),
            _ => Err("the server's signature does not match".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::scram::ScramServer;
    use crate::sasl::MechStep;

    #[test]
    fn the_client_reproduces_rfc_7677_and_logs_in_to_the_server() {
        let mut client = ScramClient::new(
            SaslMechanism::ScramSha256,
            "user",
            "pencil",
            "rOprNGfwEbeRWgbNEkqO",
        );
        assert_eq!(client.first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let fin = client
            .on_server_first(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap();
        assert_eq!(
            String::from_utf8(fin).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert!(client
            .on_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .is_ok());
        assert!(client.on_server_final(b"v=AAAA").is_err());
    }

    #[test]
    fn client_and_server_agree_with_sha_512_and_an_escaped_name() {
        let cred = scram::credential(SaslMechanism::ScramSha512, "pw", b"some salt", 4096);
        let lookup = |u: &str| (u == "a,b=c").then(|| cred.clone());
        let mut server = ScramServer::new(SaslMechanism::ScramSha512);
        let mut client = ScramClient::new(SaslMechanism::ScramSha512, "a,b=c", "pw", "clientnonce");
        let MechStep::Challenge(first) = server.on_token(&client.first(), &lookup, "servernonce")
        else {
            panic!("first refused")
        };
        let fin = client.on_server_first(&first).unwrap();
        match server.on_token(&fin, &lookup, "unused") {
            MechStep::Complete {
                response,
                authorization_id,
            } => {
                assert_eq!(authorization_id, "a,b=c");
                client.on_server_final(&response).unwrap();
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(plain_token("u", "p"), b"\0u\0p");
    }
}
