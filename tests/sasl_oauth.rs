//! SASL/OAUTHBEARER (SECURITY.md §3.6) and re-authentication (KIP-368,
//! §3.8) with real clients against one broker with Kafka's AclAuthorizer
//! and three listeners:
//! - PLAINTEXT, the admin's way in (`User:ANONYMOUS` is a super user);
//! - OAUTH (SASL_PLAINTEXT) with Kafka's default unsecured validator and
//!   `listener.name.oauth.oauthbearer.connections.max.reauth.ms=1500`;
//! - JWKS (SASL_PLAINTEXT) with KIP-768's `OAuthBearerValidatorCallbackHandler`,
//!   a JWKS file holding an RSA key made by `openssl` at test time, an
//!   expected audience and issuer;
//! - JWKSHTTP (SASL_PLAINTEXT), the same validator with its JWKS fetched
//!   from `python3 -m http.server` and re-read every 300 ms;
//! - JWKSHTTPS (SASL_PLAINTEXT), the same over https: Python's
//!   `http.server` in an `ssl` context with a certificate of a CA made by
//!   `openssl` at test time, trusted through the `ssl.truststore.*`
//!   options of the listener's JAAS entry (Kafka's `JaasOptionsUtils`).
//!
//! Checks:
//! - the Java client with an unsecured token (`unsecuredLoginStringClaim_sub`)
//!   produces one record at a time over ~6 s (four session lifetimes) and
//!   reads everything back; the broker logs its re-authentications, and no
//!   connection is closed for an expired session;
//! - the Java client reading a signed JWT from a file
//!   (`sasl.oauthbearer.token.endpoint.url=file:…`, Kafka's
//!   `AccessTokenRetrieverFactory` → `FileTokenRetriever`) and
//!   confluent-kafka with an `oauth_cb` handing it the same kind of token
//!   produce and read back over the JWKS listener;
//! - over JWKSHTTP a token of a key added to the served JWKS is accepted
//!   once a refresh fetched it, and the removed key's token refused;
//! - over JWKSHTTPS the Java client with a signed token produces and reads
//!   back, a token of a key the JWKS lacks is refused; once the https
//!   server is gone the refresh failure is logged and the last keys kept;
//!   a broker whose https JWKS endpoint is not trusted does not start
//!   (Kafka's `RefreshingHttpsJwks.init` fails the configure);
//! - tokens signed by another key, expired, for another audience, and an
//!   unsecured (`alg: none`) token on the JWKS listener are answered with
//!   the challenge `{"status":"invalid_token"}`, then, after the client's
//!   `\x01`, SASL_AUTHENTICATION_FAILED with that message (raw
//!   SaslHandshake / SaslAuthenticate frames); the Java client sees it too;
//! - the principal is `User:<sub>`: `alice` is a super user, `mallory`
//!   has no ACL and is refused (TopicAuthorizationException);
//! - on raw frames: SaslAuthenticate v1 announces `session_lifetime_ms`,
//!   re-authenticating as another principal is refused with Kafka's
//!   message, and after the session's 1.5 s a Metadata request closes
//!   the connection without an answer ("Disconnecting expired channel").

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Buf;
use common::broker::new_log_dir;
use common::java::program;
use common::zookeeper::free_port;
use common::{request_frame, round_trip, run_py_script, unique_topic, Broker};
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

/// `python3 -m http.server` serving a folder (killed on drop).
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    fn start(dir: &Path) -> HttpServer {
        let port = free_port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        // Ready when it accepts a connection (bounded).
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return HttpServer { child, port };
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        panic!("http.server did not listen on {port}");
    }
}

impl HttpServer {
    /// Python's `http.server` over TLS with `cert` / `key` (PEM).
    fn start_https(dir: &Path, cert: &Path, key: &Path) -> HttpServer {
        let port = free_port();
        let script = "import http.server, ssl, sys, os\n\
                      os.chdir(sys.argv[1])\n\
                      srv = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[2])), \
                      http.server.SimpleHTTPRequestHandler)\n\
                      ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
                      ctx.load_cert_chain(sys.argv[3], sys.argv[4])\n\
                      srv.socket = ctx.wrap_socket(srv.socket, server_side=True)\n\
                      srv.serve_forever()\n";
        let child = Command::new("python3")
            .args(["-c", script])
            .arg(dir)
            .arg(port.to_string())
            .arg(cert)
            .arg(key)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 https server");
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return HttpServer { child, port };
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        panic!("the https server did not listen on {port}");
    }
}

/// A CA and a certificate for 127.0.0.1 signed by it (EC P-256, openssl):
/// `(ca.pem, cert.pem, key.pem)`.
fn https_keys(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=test-idp-ca"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "idp.key", "-out", "idp.csr"]);
    openssl(dir, &csr);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "idp.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "idp.pem",
        ],
    );
    (dir.join("ca.pem"), dir.join("idp.pem"), dir.join("idp.key"))
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct OAuthBroker {
    broker: Broker,
    http: HttpServer,
    https: Option<HttpServer>,
    jwks_https: String,
    served: PathBuf,
    jwks_http: String,
    dir: tempfile::TempDir,
    unsecured: String,
    jwks: String,
    key: RsaKey,
}

fn start() -> OAuthBroker {
    let dir = tempfile::tempdir().unwrap();
    let key = rsa_key(dir.path(), "k1");
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [key.jwk]}).to_string()).unwrap();
    // The JWKS of the JWKSHTTP listener, served over HTTP from its own
    // folder (rotated by the test).
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    std::fs::write(
        served.join("jwks.json"),
        json!({"keys": [key.jwk]}).to_string(),
    )
    .unwrap();
    let http = HttpServer::start(&served);
    let (ca, cert, cert_key) = https_keys(dir.path());
    let https = HttpServer::start_https(dir.path(), &cert, &cert_key);
    let (p0, p1, p2, p3, p4) = (
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
    );
    let settings = [
        format!(
            "listeners=PLAINTEXT://127.0.0.1:{p0},OAUTH://127.0.0.1:{p1},JWKS://127.0.0.1:{p2},\
             JWKSHTTP://127.0.0.1:{p3},JWKSHTTPS://127.0.0.1:{p4}"
        ),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OAUTH:SASL_PLAINTEXT,\
         JWKS:SASL_PLAINTEXT,JWKSHTTP:SASL_PLAINTEXT,JWKSHTTPS:SASL_PLAINTEXT"
            .into(),
        "inter.broker.listener.name=PLAINTEXT".into(),
        "offsets.topic.replication.factor=1".into(),
        "offsets.topic.num.partitions=2".into(),
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer".into(),
        // alice (the sub of her tokens) may do everything, mallory nothing.
        "super.users=User:ANONYMOUS;User:alice".into(),
        "sasl.enabled.mechanisms=OAUTHBEARER".into(),
        format!("listener.name.oauth.oauthbearer.sasl.jaas.config={LOGIN} required;"),
        "listener.name.oauth.oauthbearer.connections.max.reauth.ms=1500".into(),
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
        format!("listener.name.jwkshttp.oauthbearer.sasl.jaas.config={LOGIN} required;"),
        "listener.name.jwkshttp.oauthbearer.sasl.server.callback.handler.class=\
         org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
            .into(),
        format!(
            "listener.name.jwkshttp.sasl.oauthbearer.jwks.endpoint.url=http://127.0.0.1:{}/jwks.json",
            http.port
        ),
        // Re-read every 300 ms: the rotation below is seen quickly.
        "listener.name.jwkshttp.sasl.oauthbearer.jwks.endpoint.refresh.ms=300".into(),
        // The https JWKS (the test's folder, jwks.json holds k1), trusted
        // through the JAAS entry's ssl.* options.
        format!(
            "listener.name.jwkshttps.oauthbearer.sasl.jaas.config={LOGIN} required \
             ssl.truststore.type=\"PEM\" ssl.truststore.location=\"{}\";",
            ca.display()
        ),
        "listener.name.jwkshttps.oauthbearer.sasl.server.callback.handler.class=\
         org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
            .into(),
        format!(
            "listener.name.jwkshttps.sasl.oauthbearer.jwks.endpoint.url=https://127.0.0.1:{}/jwks.json",
            https.port
        ),
        "listener.name.jwkshttps.sasl.oauthbearer.jwks.endpoint.refresh.ms=300".into(),
        "listener.name.jwkshttps.sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=300".into(),
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
        unsecured: format!("127.0.0.1:{p1}"),
        jwks: format!("127.0.0.1:{p2}"),
        jwks_http: format!("127.0.0.1:{p3}"),
        jwks_https: format!("127.0.0.1:{p4}"),
        http,
        https: Some(https),
        served,
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
    fn java_token_file(&self, name: &str, token: &str) -> PathBuf {
        let file = self.write(&format!("{name}.jwt"), token);
        self.write(
            &format!("{name}.properties"),
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
}

/// ClientCheck roundtrip with `props`; the report line, or the failure.
fn java_roundtrip(
    bootstrap: &str,
    props: &Path,
    count: usize,
    extra: &[&str],
) -> Result<Value, String> {
    let topic = unique_topic("oauth");
    let count = count.to_string();
    let mut args = vec!["roundtrip", bootstrap, &topic, "1", &count];
    args.extend_from_slice(extra);
    let out = program("ClientCheck")
        .args(&args)
        .env("SHARDLOG_CLIENT_CONFIG", props)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(serde_json::from_str(stdout.lines().last().unwrap()).unwrap())
}

fn assert_round_trip(r: &Value, count: usize, what: &str) {
    assert_eq!(r["produce"]["delivered"], count, "{what}: {r}");
    assert_eq!(r["produce"]["errors"], json!([]), "{what}: {r}");
    assert_eq!(r["consume"]["consumed"], count, "{what}: {r}");
    assert_eq!(r["consume"]["missing"], 0, "{what}: {r}");
}

#[test]
fn oauthbearer_unsecured_and_jwks_logins_reauthentication_and_principals() {
    let b = start();
    // --- Unsecured tokens, sessions of 1.5 s: one record every 200 ms.
    let alice = b.java_unsecured("alice");
    let r = java_roundtrip(&b.unsecured, &alice, 30, &["shardlog.pace.ms=200"])
        .unwrap_or_else(|e| panic!("unsecured alice: {e}"));
    assert_round_trip(&r, 30, "Java client, unsecured token, re-authenticating");
    let lines = b.broker.log_lines();
    let reauths = lines
        .iter()
        .filter(|l| l.contains("SASL re-authentication succeeded") && l.contains("User:alice"))
        .count();
    assert!(
        reauths >= 3,
        "the producer re-authenticated across its ~6 s ({reauths} times):\n{}",
        lines.join("\n")
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("Disconnecting expired channel")),
        "no session expired under a re-authenticating client:\n{}",
        lines.join("\n")
    );

    // The principal is User:<sub>: mallory has no ACL.
    let mallory = b.java_unsecured("mallory");
    let err = java_roundtrip(&b.unsecured, &mallory, 1, &[]).unwrap_err();
    assert!(
        err.contains("TopicAuthorizationException"),
        "mallory is refused by the authorizer: {err}"
    );

    // --- KIP-768: a token signed by the JWKS key, read from a file.
    let exp = now_s() + 3600;
    let good = jwt(b.dir.path(), &b.key, "k1", &claims("alice", "kafka", exp));
    let props = b.java_token_file("good", &good);
    let r = java_roundtrip(&b.jwks, &props, 20, &[]).unwrap_or_else(|e| panic!("JWT alice: {e}"));
    assert_round_trip(&r, 20, "Java client, signed token from a file");

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

    jwks_over_http_and_its_rotation(&b, &good, exp);
    let mut b = b;
    jwks_over_https(&mut b, &good, exp);

    bad_tokens_are_refused(&b, &good, exp);
    // (log_lines hands over the lines logged since the last call.)
    let lines = b.broker.log_lines().join("\n");
    assert!(
        lines.contains("SASL authentication failed") && lines.contains("signature is invalid"),
        "refusals are logged with their reason:\n{lines}"
    );
    session_expiry_and_principal_change(&b);
}

/// Over JWKSHTTP: the JWKS fetched over HTTP, and its rotation seen by a
/// refresh (`sasl.oauthbearer.jwks.endpoint.refresh.ms=300`).
fn jwks_over_http_and_its_rotation(b: &OAuthBroker, good: &str, exp: i64) {
    assert_eq!(raw_login(&b.jwks_http, good), (0, String::new()));
    let rotated = rsa_key(b.dir.path(), "k2");
    let token2 = jwt(b.dir.path(), &rotated, "k2", &claims("alice", "kafka", exp));
    assert_eq!(
        raw_login(&b.jwks_http, &token2).0,
        58,
        "k2 is not served yet"
    );
    std::fs::write(
        b.served.join("jwks.json"),
        json!({"keys": [rotated.jwk]}).to_string(),
    )
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while raw_login(&b.jwks_http, &token2).0 != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the rotated JWKS was never fetched (http.server on {})",
            b.http.port
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(raw_login(&b.jwks_http, good).0, 58, "k1 left the JWKS");
}

/// Over JWKSHTTPS: the Java client with a signed token, a token of an
/// unknown key refused; with the https server gone the refresh failure is
/// logged and the last keys kept; an untrusted endpoint stops a start.
fn jwks_over_https(b: &mut OAuthBroker, good: &str, exp: i64) {
    let props = b.java_token_file("good-https", good);
    let r = java_roundtrip(&b.jwks_https, &props, 5, &[])
        .unwrap_or_else(|e| panic!("JWT alice over the https JWKS: {e}"));
    assert_round_trip(&r, 5, "Java client, JWKS fetched over https");
    let stranger = rsa_key(b.dir.path(), "k3");
    let token = jwt(
        b.dir.path(),
        &stranger,
        "k3",
        &claims("alice", "kafka", exp),
    );
    assert_eq!(
        raw_login(&b.jwks_https, &token).0,
        58,
        "k3 is not in the JWKS"
    );
    drop(b.https.take());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut lines = Vec::new();
    while !lines
        .iter()
        .any(|l: &String| l.contains("JWKS refresh failed") && l.contains("JWKSHTTPS"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the failed https refresh is logged:\n{}",
            lines.join("\n")
        );
        lines.extend(b.broker.log_lines());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        raw_login(&b.jwks_https, good).0,
        0,
        "the last keys are kept"
    );
    // Not trusted (no truststore option: the system's CAs): no start.
    let url = "listener.name.jwkshttps.sasl.oauthbearer.jwks.endpoint.url";
    let https = HttpServer::start_https(
        b.dir.path(),
        &b.dir.path().join("idp.pem"),
        &b.dir.path().join("idp.key"),
    );
    let port = free_port();
    let err = refused_start(&[
        &format!("listeners=JWKSHTTPS://127.0.0.1:{port}"),
        "listener.security.protocol.map=JWKSHTTPS:SASL_PLAINTEXT",
        "inter.broker.listener.name=JWKSHTTPS",
        "sasl.enabled.mechanisms=OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol=OAUTHBEARER",
        &format!(
            "listener.name.jwkshttps.oauthbearer.sasl.jaas.config={LOGIN} required \
             unsecuredLoginStringClaim_sub=\"broker\";"
        ),
        "listener.name.jwkshttps.oauthbearer.sasl.server.callback.handler.class=\
         org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        &format!("{url}=https://127.0.0.1:{}/jwks.json", https.port),
    ]);
    assert!(
        err.contains(url.trim_start_matches("listener.name.jwkshttps."))
            && (err.contains("certificate") || err.contains("truststore")),
        "an untrusted https JWKS stops the start: {err}"
    );
}

/// Start a broker with `settings`; it must exit non-zero. Its stderr.
fn refused_start(settings: &[&str]) -> String {
    let dir = new_log_dir();
    let mut cmd = Command::new(common::broker::broker_bin());
    cmd.arg("broker");
    let log_dirs = format!("log.dirs={}", dir.path().display());
    for s in ["shardlog.shards=1", "broker.id=0", log_dirs.as_str()]
        .iter()
        .chain(settings)
    {
        cmd.args(["--override", s]);
    }
    let mut child = cmd
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn shardlog");
    let deadline = std::time::Instant::now() + common::broker::STARTUP_LIMIT;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the broker started with {settings:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{settings:?}: {stderr}");
    stderr
}

/// Bad tokens on the JWKS listener: the JSON error, then
/// SASL_AUTHENTICATION_FAILED; the Java client sees it too.
fn bad_tokens_are_refused(b: &OAuthBroker, good: &str, exp: i64) {
    let other = rsa_key(b.dir.path(), "other");
    let unsecured_token = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims("alice", "kafka", exp).to_string())
    );
    let forged = jwt(b.dir.path(), &other, "k1", &claims("alice", "kafka", exp));
    for (name, token) in [
        ("another key", forged.clone()),
        (
            "expired",
            jwt(
                b.dir.path(),
                &b.key,
                "k1",
                &claims("alice", "kafka", now_s() - 600),
            ),
        ),
        (
            "another audience",
            jwt(b.dir.path(), &b.key, "k1", &claims("alice", "billing", exp)),
        ),
        ("alg none", unsecured_token),
    ] {
        let (code, message) = raw_login(&b.jwks, &token);
        assert_eq!(code, 58, "{name}: SASL_AUTHENTICATION_FAILED ({message})");
        assert_eq!(message, r#"{"status":"invalid_token"}"#, "{name}");
    }
    // The good token passes the same raw exchange.
    assert_eq!(raw_login(&b.jwks, good), (0, String::new()));
    // The Java client with the forged token from a file.
    let props = b.java_token_file("forged", &forged);
    let err = java_roundtrip(&b.jwks, &props, 1, &[]).unwrap_err();
    assert!(
        err.contains("SaslAuthenticationException") && err.contains("invalid_token"),
        "the broker's OAuth error reaches the Java client: {err}"
    );
}

/// KIP-368 on raw frames over OAUTH (sessions of 1.5 s): the lifetime is
/// announced in SaslAuthenticate v1; re-authenticating as another
/// principal is refused; after the session ended, a request other than
/// SaslHandshake closes the connection without an answer.
fn session_expiry_and_principal_change(b: &OAuthBroker) {
    use kafka_protocol::messages::{ApiKey, MetadataRequest};
    let unsecured = |sub: &str| {
        format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
            URL_SAFE_NO_PAD.encode(json!({"sub": sub, "exp": now_s() + 600}).to_string())
        )
    };
    let metadata = request_frame(ApiKey::Metadata, 4, 9, &MetadataRequest::default());

    let mut s = std::net::TcpStream::connect(&b.unsecured).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let done = sasl_exchange(&mut s, &unsecured("alice"), 1);
    assert_eq!(done.error_code, 0);
    assert_eq!(done.session_lifetime_ms, 1500, "connections.max.reauth.ms");
    // Re-authenticating as mallory on the same connection.
    let refused = sasl_exchange(&mut s, &unsecured("mallory"), 10);
    assert_eq!(refused.error_code, 58);
    assert_eq!(
        refused.error_message.map(|m| m.to_string()).as_deref(),
        Some("Cannot change principals during re-authentication from User.alice: User.mallory")
    );

    let mut s = std::net::TcpStream::connect(&b.unsecured).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let done = sasl_exchange(&mut s, &unsecured("alice"), 1);
    assert_eq!(done.error_code, 0);
    assert!(
        read_frame_after(&mut s, &metadata).is_some(),
        "served in session"
    );
    // The session's own length, then a request: closed, no answer.
    std::thread::sleep(std::time::Duration::from_millis(1600));
    assert!(
        read_frame_after(&mut s, &metadata).is_none(),
        "a request after the session ended closes the connection"
    );
    // The close is logged (the line may trail the close a little).
    let mut lines = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !lines
        .iter()
        .any(|l: &String| l.contains("Disconnecting expired channel"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the close is logged:\n{}",
            lines.join("\n")
        );
        lines.extend(b.broker.log_lines());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Send `frame`; the answer, or `None` when the broker closed instead.
fn read_frame_after(s: &mut std::net::TcpStream, frame: &[u8]) -> Option<bytes::Bytes> {
    use std::io::Write;
    s.write_all(frame).ok()?;
    common::read_frame(s)
}

/// SaslHandshake v1 then SaslAuthenticate v1 with an OAUTHBEARER first
/// message for `token`: the final SaslAuthenticate answer.
fn sasl_exchange(
    s: &mut std::net::TcpStream,
    token: &str,
    id: i32,
) -> kafka_protocol::messages::SaslAuthenticateResponse {
    use kafka_protocol::messages::{
        ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    };
    use kafka_protocol::protocol::{Decodable, StrBytes};
    let hs =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("OAUTHBEARER"));
    let _ = round_trip(s, &request_frame(ApiKey::SaslHandshake, 1, id, &hs));
    let first = format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes();
    let req = SaslAuthenticateRequest::default().with_auth_bytes(first.into());
    let mut r = round_trip(s, &request_frame(ApiKey::SaslAuthenticate, 1, id + 1, &req));
    r.advance(4);
    SaslAuthenticateResponse::decode(&mut r, 1).unwrap()
}

/// Log in with `token` over raw SaslHandshake v1 / SaslAuthenticate v1
/// frames: `(0, "")` when accepted; for a refused token the server's
/// challenge is answered with `\x01` (RFC 7628) and the final
/// `(error_code, error_message)` returned.
fn raw_login(addr: &str, token: &str) -> (i16, String) {
    use kafka_protocol::messages::{
        ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
        SaslHandshakeResponse,
    };
    use kafka_protocol::protocol::{Decodable, StrBytes};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let hs =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("OAUTHBEARER"));
    let mut r = round_trip(&mut s, &request_frame(ApiKey::SaslHandshake, 1, 1, &hs));
    r.advance(4);
    assert_eq!(
        SaslHandshakeResponse::decode(&mut r, 1).unwrap().error_code,
        0
    );
    let mut authenticate = |bytes: Vec<u8>, id: i32| {
        let req = SaslAuthenticateRequest::default().with_auth_bytes(bytes.into());
        let mut r = round_trip(
            &mut s,
            &request_frame(ApiKey::SaslAuthenticate, 1, id, &req),
        );
        r.advance(4);
        SaslAuthenticateResponse::decode(&mut r, 1).unwrap()
    };
    let first = format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes();
    let answer = authenticate(first, 2);
    assert_eq!(answer.error_code, 0);
    if answer.auth_bytes.is_empty() {
        return (0, String::new());
    }
    let challenge = String::from_utf8_lossy(&answer.auth_bytes).into_owned();
    let last = authenticate(vec![1], 3);
    let message = last
        .error_message
        .map(|m| m.to_string())
        .unwrap_or_default();
    assert_eq!(message, challenge, "the failure repeats the challenge");
    (last.error_code, message)
}
