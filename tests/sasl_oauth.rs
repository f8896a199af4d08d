//! SASL/OAUTHBEARER (SECURITY.md §3.6) and re-authentication (KIP-368,
//! §3.8) with real clients against one broker with Kafka's AclAuthorizer
//! and three listeners:
//! - PLAINTEXT, the admin's way in (`User:ANONYMOUS` is a super user);
//! - OAUTH (SASL_PLAINTEXT) with Kafka's default unsecured validator and
//!   `listener.name.oauth.oauthbearer.connections.max.reauth.ms=2000`;
//! - JWKS (SASL_PLAINTEXT) with KIP-768's `OAuthBearerValidatorCallbackHandler`,
//!   a JWKS file holding an RSA key made by `openssl` at test time, an
//!   expected audience and issuer.
//!
//! Checks:
//! - the Java client with an unsecured token (`unsecuredLoginStringClaim_sub`)
//!   produces one record at a time over ~8 s (four session lifetimes) and
//!   reads everything back; the broker logs its re-authentications, and no
//!   connection is closed for an expired session;
//! - the Java client reading a signed JWT from a file
//!   (`sasl.oauthbearer.token.endpoint.url=file:…`, Kafka's
//!   `AccessTokenRetrieverFactory` → `FileTokenRetriever`) and
//!   confluent-kafka with an `oauth_cb` handing it the same kind of token
//!   produce and read back over the JWKS listener;
//! - tokens signed by another key, expired, for another audience, and an
//!   unsecured (`alg: none`) token on the JWKS listener are refused with
//!   SASL_AUTHENTICATION_FAILED carrying `{"status":"invalid_token"}`;
//! - the principal is `User:<sub>`: `alice` has ACLs on the `oauth-`
//!   prefix, `mallory` none and is refused (TopicAuthorizationException).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use common::broker::new_log_dir;
use common::java::{kafka_tool, program, run_ok};
use common::zookeeper::free_port;
use common::{run_py_script, unique_topic, Broker};
use serde_json::{json, Value};

const ISSUER: &str = "https://idp.shardlog.test";
const LOGIN: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An RSA key made by openssl, and its JWK (kid `kid`).
struct RsaKey {
    pem: PathBuf,
    jwk: Value,
}

fn rsa_key(dir: &Path, kid: &str) -> RsaKey {
    let pem = dir.join(format!("{kid}.pem"));
    let p = pem.display().to_string();
    openssl(
        dir,
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            &p,
        ],
    );
    let out = Command::new("openssl")
        .args(["rsa", "-in", &p, "-noout", "-modulus"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = text.trim().strip_prefix("Modulus=").unwrap();
    let n: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let jwk = json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                     "n": URL_SAFE_NO_PAD.encode(n), "e": "AQAB"});
    RsaKey { pem, jwk }
}

fn now_s() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since.as_secs()).unwrap()
}

/// A JWT with `claims`, header kid `kid`, RS256-signed by `key` (openssl).
fn jwt(dir: &Path, key: &RsaKey, kid: &str, claims: &Value) -> String {
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": kid});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let (inp, sig) = (dir.join("input"), dir.join("sig"));
    std::fs::write(&inp, &input).unwrap();
    openssl(
        dir,
        &[
            "dgst",
            "-sha256",
            "-sign",
            &key.pem.display().to_string(),
            "-out",
            &sig.display().to_string(),
            &inp.display().to_string(),
        ],
    );
    let signature = std::fs::read(&sig).unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

fn claims(sub: &str, aud: &str, exp: i64) -> Value {
    json!({"sub": sub, "aud": aud, "iss": ISSUER, "iat": now_s() - 60, "exp": exp,
           "scope": "kafka"})
}

struct OAuthBroker {
    broker: Broker,
    dir: tempfile::TempDir,
    plaintext: String,
    unsecured: String,
    jwks: String,
    key: RsaKey,
}

fn start() -> OAuthBroker {
    let dir = tempfile::tempdir().unwrap();
    let key = rsa_key(dir.path(), "k1");
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [key.jwk]}).to_string()).unwrap();
    let (p0, p1, p2) = (free_port(), free_port(), free_port());
    let settings = [
        format!("listeners=PLAINTEXT://127.0.0.1:{p0},OAUTH://127.0.0.1:{p1},JWKS://127.0.0.1:{p2}"),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OAUTH:SASL_PLAINTEXT,JWKS:SASL_PLAINTEXT"
            .into(),
        "inter.broker.listener.name=PLAINTEXT".into(),
        "offsets.topic.replication.factor=1".into(),
        "offsets.topic.num.partitions=2".into(),
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer".into(),
        "super.users=User:ANONYMOUS".into(),
        "sasl.enabled.mechanisms=OAUTHBEARER".into(),
        format!("listener.name.oauth.oauthbearer.sasl.jaas.config={LOGIN} required;"),
        "listener.name.oauth.oauthbearer.connections.max.reauth.ms=2000".into(),
        format!("listener.name.jwks.oauthbearer.sasl.jaas.config={LOGIN} required;"),
        "listener.name.jwks.oauthbearer.sasl.server.callback.handler.class=\
         org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
            .into(),
        format!(
            "listener.name.jwks.sasl.oauthbearer.jwks.endpoint.url=file:{}",
            jwks.display()
        ),
        "listener.name.jwks.sasl.oauthbearer.expected.audience=kafka".into(),
        format!("listener.name.jwks.sasl.oauthbearer.expected.issuer={ISSUER}"),
    ];
    let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
    // Re-authentications are logged at info by server::sasl_conn.
    let broker = Broker::start_logging(
        new_log_dir(),
        &refs,
        Some("warn,shardlog::server::sasl_conn=info"),
    );
    OAuthBroker {
        broker,
        dir,
        plaintext: format!("127.0.0.1:{p0}"),
        unsecured: format!("127.0.0.1:{p1}"),
        jwks: format!("127.0.0.1:{p2}"),
        key,
    }
}

impl OAuthBroker {
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Java client properties logging in with an unsecured token for `sub`.
    fn java_unsecured(&self, sub: &str) -> PathBuf {
        self.write(
            &format!("unsecured-{sub}.properties"),
            &format!(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n\
                 sasl.jaas.config={LOGIN} required unsecuredLoginStringClaim_sub=\"{sub}\";\n"
            ),
        )
    }

    /// Java client properties reading the signed token from a file.
    fn java_token_file(&self, token: &str) -> PathBuf {
        let file = self.write("alice.jwt", token);
        self.write(
            "jwt.properties",
            &format!(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n\
                 sasl.jaas.config={LOGIN} required;\n\
                 sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
                 sasl.oauthbearer.token.endpoint.url=file:{}\n",
                file.display()
            ),
        )
    }

    /// librdkafka's settings with an oauth_cb handing over `token`.
    fn rdkafka(&self, name: &str, token: &str, sub: &str) -> String {
        let conf = json!({
            "bootstrap.servers": self.jwks,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "shardlog.oauth.token": token,
            "shardlog.oauth.principal": sub,
            "shardlog.oauth.expiry": now_s() + 3600,
        });
        self.write(name, &conf.to_string()).display().to_string()
    }

    fn acls(&self, args: &[&str]) {
        let mut all = vec!["--bootstrap-server", &self.plaintext];
        all.extend_from_slice(args);
        run_ok(
            kafka_tool("kafka.admin.AclCommand").args(&all),
            &format!("kafka-acls {args:?}"),
        );
    }
}

/// ClientCheck roundtrip with `props`; the report line, or the failure.
fn java_roundtrip(bootstrap: &str, props: &Path, extra: &[&str]) -> Result<Value, String> {
    let topic = unique_topic("oauth");
    let mut args = vec!["roundtrip", bootstrap, &topic, "1", "40"];
    args.extend_from_slice(extra);
    let out = program("ClientCheck")
        .args(&args)
        .env("SHARDLOG_CLIENT_CONFIG", props)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(serde_json::from_str(stdout.lines().last().unwrap()).unwrap())
}

fn assert_round_trip(r: &Value, what: &str) {
    assert_eq!(r["produce"]["delivered"], 40, "{what}: {r}");
    assert_eq!(r["produce"]["errors"], json!([]), "{what}: {r}");
    assert_eq!(r["consume"]["consumed"], 40, "{what}: {r}");
    assert_eq!(r["consume"]["missing"], 0, "{what}: {r}");
}

fn confluent_refused(conf: &str, what: &str) -> String {
    let r = run_py_script(
        &["confluent_kafka"],
        "sasl_clients.py",
        &["refused".into(), conf.into()],
    );
    assert_eq!(r["ok"], false, "{what}: {r}");
    r["errors"].to_string()
}

#[test]
fn oauthbearer_unsecured_and_jwks_logins_reauthentication_and_principals() {
    let b = start();
    // alice may do everything on topics named oauth-…; mallory nothing.
    b.acls(&[
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "All",
        "--topic",
        "oauth-",
        "--group",
        "sasl-oauth-",
        "--resource-pattern-type",
        "prefixed",
    ]);

    // --- Unsecured tokens, sessions of 2 s: one record every 200 ms.
    let alice = b.java_unsecured("alice");
    let r = java_roundtrip(&b.unsecured, &alice, &["shardlog.pace.ms=200"])
        .unwrap_or_else(|e| panic!("unsecured alice: {e}"));
    assert_round_trip(&r, "Java client, unsecured token, re-authenticating");
    let lines = b.broker.log_lines();
    let reauths = lines
        .iter()
        .filter(|l| l.contains("SASL re-authentication succeeded") && l.contains("User:alice"))
        .count();
    assert!(
        reauths >= 3,
        "the producer re-authenticated across its ~8 s ({reauths} times):\n{}",
        lines.join("\n")
    );
    assert!(
        !lines.iter().any(|l| l.contains("Disconnecting expired channel")),
        "no session expired under a re-authenticating client:\n{}",
        lines.join("\n")
    );

    // The principal is User:<sub>: mallory has no ACL.
    let mallory = b.java_unsecured("mallory");
    let err = java_roundtrip(&b.unsecured, &mallory, &[]).unwrap_err();
    assert!(
        err.contains("TopicAuthorizationException"),
        "mallory is refused by the authorizer: {err}"
    );

    // --- KIP-768: a token signed by the JWKS key, read from a file.
    let exp = now_s() + 3600;
    let good = jwt(b.dir.path(), &b.key, "k1", &claims("alice", "kafka", exp));
    let props = b.java_token_file(&good);
    let r = java_roundtrip(&b.jwks, &props, &[]).unwrap_or_else(|e| panic!("JWT alice: {e}"));
    assert_round_trip(&r, "Java client, signed token from a file");

    // confluent-kafka with an oauth_cb.
    let conf = b.rdkafka("good.json", &good, "alice");
    let topic = unique_topic("oauth-py");
    let r = run_py_script(
        &["confluent_kafka"],
        "sasl_clients.py",
        &["roundtrip".into(), conf, topic, "20".into()],
    );
    assert_eq!(r["delivered"], 20, "{r}");
    assert_eq!(r["errors"], json!([]), "{r}");
    assert_eq!(r["values"].as_array().map(Vec::len), Some(20), "{r}");

    // --- Bad tokens: SASL_AUTHENTICATION_FAILED with the JSON error.
    let other = rsa_key(b.dir.path(), "other");
    let unsecured_token = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims("alice", "kafka", exp).to_string())
    );
    for (name, token) in [
        (
            "another key",
            jwt(b.dir.path(), &other, "k1", &claims("alice", "kafka", exp)),
        ),
        (
            "expired",
            jwt(b.dir.path(), &b.key, "k1", &claims("alice", "kafka", now_s() - 600)),
        ),
        (
            "another audience",
            jwt(b.dir.path(), &b.key, "k1", &claims("alice", "billing", exp)),
        ),
        ("alg none", unsecured_token),
    ] {
        let conf = b.rdkafka(&format!("{}.json", name.replace(' ', "-")), &token, "alice");
        let errors = confluent_refused(&conf, name);
        assert!(
            errors.contains("invalid_token"),
            "{name}: the broker's OAuth error reaches the client: {errors}"
        );
    }
    let lines = b.broker.log_lines().join("\n");
    assert!(
        lines.contains("SASL authentication failed") && lines.contains("signature is invalid"),
        "refusals are logged with their reason:\n{lines}"
    );
}
