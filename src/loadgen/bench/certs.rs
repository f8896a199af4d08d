//! `[io]` `bench --security-protocol SSL`: a throwaway CA and a broker
//! certificate for 127.0.0.1 / localhost, made with the `openssl` CLI in
//! the bench's work directory (removed with it). The broker reads them as a
//! Kafka PEM keystore (`ssl.keystore.type=PEM`, one file with the PKCS#8
//! key and the chain, as Kafka's `DefaultSslEngineFactory` reads PEM
//! keystores) and a PEM truststore for its own
//! inter-broker connections; the load generator trusts the CA
//! (`--ssl-ca-location`).
//!
//! The `openssl` CLI rather than a certificate crate: it is what Kafka's
//! docs and the tests use to make keys, it is on every host that runs
//! Kafka tooling, and it keeps a certificate authority out of the broker's
//! dependencies for a benchmark's sake.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Where the bench's TLS files are.
#[derive(Debug, Clone)]
pub struct BenchTls {
    /// The CA certificate (PEM): the load generator's `ssl.ca.location`
    /// and the brokers' truststore.
    pub ca: PathBuf,
    /// PKCS#8 private key then certificate chain (PEM): the keystore.
    pub keystore: PathBuf,
}

/// Valid for two days: long enough for any bench, short for a key left
/// behind by `--keep`.
const DAYS: &str = "2";

impl BenchTls {
    /// Makes the CA and the broker certificate in `dir/tls/`.
    pub fn create(dir: &Path) -> Result<Self> {
        let dir = dir.join("tls");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let p = |name: &str| dir.join(name).display().to_string();
        std::fs::write(
            dir.join("broker.ext"),
            "basicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature,keyEncipherment\n\
             extendedKeyUsage=serverAuth,clientAuth\n\
             subjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )?;
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-sha256",
            "-days",
            DAYS,
            "-subj",
            "/CN=shardlog-bench-ca",
            "-keyout",
            &p("ca.key"),
            "-out",
            &p("ca.pem"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ])?;
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-sha256",
            "-subj",
            "/CN=localhost",
            "-keyout",
            &p("broker.key"),
            "-out",
            &p("broker.csr"),
        ])?;
        openssl(&[
            "x509",
            "-req",
            "-sha256",
            "-days",
            DAYS,
            "-in",
            &p("broker.csr"),
            "-CA",
            &p("ca.pem"),
            "-CAkey",
            &p("ca.key"),
            "-CAcreateserial",
            "-extfile",
            &p("broker.ext"),
            "-out",
            &p("broker.crt"),
        ])?;
        let key = std::fs::read_to_string(dir.join("broker.key"))?;
        if !key.contains("-----BEGIN PRIVATE KEY-----") {
            bail!(
                "openssl wrote a private key that is not unencrypted PKCS#8 ({})",
                p("broker.key")
            );
        }
        let chain = std::fs::read_to_string(dir.join("broker.crt"))?;
        let keystore = dir.join("broker-keystore.pem");
        std::fs::write(&keystore, format!("{key}{chain}"))?;
        Ok(Self {
            ca: dir.join("ca.pem"),
            keystore,
        })
    }

    /// The broker's keystore settings (every SSL listener).
    pub fn keystore_settings(&self) -> Vec<String> {
        vec![
            "ssl.keystore.type=PEM".into(),
            format!("ssl.keystore.location={}", self.keystore.display()),
        ]
    }

    /// A cluster's inter-broker traffic over the SSL listener: the brokers
    /// trust the CA (Kafka's endpoint identification checks the
    /// certificate's 127.0.0.1 SAN).
    pub fn inter_broker_settings(&self) -> Vec<String> {
        vec![
            "security.inter.broker.protocol=SSL".into(),
            "ssl.truststore.type=PEM".into(),
            format!("ssl.truststore.location={}", self.ca.display()),
        ]
    }
}

/// Runs `openssl ARGS`, failing with its output or, when it is missing,
/// with the package to install.
fn openssl(args: &[&str]) -> Result<()> {
    let out = match Command::new("openssl").args(args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "bench --security-protocol SSL makes its certificates with the openssl CLI, which is not installed: apt-get install openssl"
        ),
        Err(e) => return Err(e).context("running openssl"),
    };
    if !out.status.success() {
        bail!(
            "openssl {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
