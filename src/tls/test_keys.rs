//! Key material for the TLS tests, made at test time by `openssl` and the
//! JDK's `keytool` in a temporary directory: a CA and an unrelated CA, a
//! broker certificate with SANs (PEM, encrypted PKCS#8, PKCS12 from openssl
//! and from keytool, JKS), a second broker certificate with the same
//! identity (rotation), ones with another DN or SANs, a client certificate,
//! an expired client certificate (keytool `-startdate`), an RSA broker
//! keystore made entirely by keytool, truststores.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::tls::settings::SslSettings;

const SCRIPT: &str = r#"
set -e
ec() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "$@" 2>/dev/null; }
ec -x509 -days 3650 -keyout ca.key -out ca.pem -subj '/O=shardlog tests/CN=Test CA'
ec -x509 -days 3650 -keyout other-ca.key -out other-ca.pem -subj '/O=elsewhere/CN=Other CA'
sign() { # name subject ext
  ec -keyout "$1.key" -out "$1.csr" -subj "$2"
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  cat "$1.pem" ca.pem > "$1-chain.pem"
  cat "$1.key" "$1-chain.pem" > "$1-bundle.pem"
  openssl pkcs12 -export -in "$1.pem" -inkey "$1.key" -certfile ca.pem -name broker \
    -out "$1.p12" -passout pass:storepass
}
BROKER='basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:localhost,IP:127.0.0.1'
sign server '/C=US/ST=CA/L=Palo Alto/O=shardlog tests/OU=Brokers/CN=localhost' "$BROKER"
sign server2 '/C=US/ST=CA/L=Palo Alto/O=shardlog tests/OU=Brokers/CN=localhost' "$BROKER"
sign otherdn '/C=US/ST=CA/L=Palo Alto/O=shardlog tests/OU=Brokers/CN=broker-b' "$BROKER"
sign othersan '/C=US/ST=CA/L=Palo Alto/O=shardlog tests/OU=Brokers/CN=localhost' \
  "$(printf '%s\n' "$BROKER" | sed 's/^subjectAltName=.*/subjectAltName=DNS:other.example/')"
sign client '/O=shardlog tests/OU=Clients/CN=client1' 'basicConstraints=CA:FALSE
keyUsage=digitalSignature
extendedKeyUsage=clientAuth'
openssl pkcs8 -topk8 -in server.key -out server-enc.key -v2 aes-256-cbc -passout pass:keypass
cat server-enc.key server-chain.pem > server-enc-bundle.pem
openssl pkcs12 -export -nokeys -in ca.pem -out trust-openssl.p12 -passout pass:trustpass
# keytool: a PKCS12 truststore with a trusted-certificate entry, the broker
# keystore rewritten by keytool, a JKS copy, and an expired client
# certificate signed by the CA with a start date in the past.
KT="keytool -noprompt"
$KT -importcert -alias ca -file ca.pem -keystore trust.p12 -storetype PKCS12 -storepass trustpass >/dev/null 2>&1
$KT -importkeystore -srckeystore server.p12 -srcstoretype PKCS12 -srcstorepass storepass \
  -destkeystore server-kt.p12 -deststoretype PKCS12 -deststorepass storepass >/dev/null 2>&1
$KT -importkeystore -srckeystore server.p12 -srcstoretype PKCS12 -srcstorepass storepass \
  -destkeystore server.jks -deststoretype JKS -deststorepass storepass >/dev/null 2>&1
openssl pkcs12 -export -in ca.pem -inkey ca.key -name ca -out ca.p12 -passout pass:storepass
$KT -genkeypair -alias expired -keyalg EC -groupname secp256r1 -dname 'CN=expired,O=shardlog tests' \
  -keystore expired.p12 -storetype PKCS12 -storepass storepass >/dev/null 2>&1
$KT -certreq -alias expired -keystore expired.p12 -storepass storepass -file expired.csr >/dev/null 2>&1
$KT -gencert -alias ca -keystore ca.p12 -storetype PKCS12 -storepass storepass -infile expired.csr \
  -outfile expired.pem -rfc -startdate 2020/01/01 -validity 2 -ext EKU=clientAuth >/dev/null 2>&1
$KT -importcert -alias ca -file ca.pem -keystore expired.p12 -storepass storepass >/dev/null 2>&1
$KT -importcert -alias expired -file expired.pem -keystore expired.p12 -storepass storepass >/dev/null 2>&1
# The broker keystore as a Java user makes it: an RSA key from keytool,
# signed by the CA with SANs, the chain imported back.
$KT -genkeypair -alias broker -keyalg RSA -keysize 2048 -dname 'CN=localhost,OU=Brokers,O=shardlog tests' \
  -keystore rsa.p12 -storetype PKCS12 -storepass storepass >/dev/null 2>&1
$KT -certreq -alias broker -keystore rsa.p12 -storepass storepass -file rsa.csr >/dev/null 2>&1
$KT -gencert -alias ca -keystore ca.p12 -storetype PKCS12 -storepass storepass -infile rsa.csr \
  -outfile rsa.pem -rfc -validity 3650 -ext SAN=dns:localhost,ip:127.0.0.1 \
  -ext EKU=serverAuth,clientAuth >/dev/null 2>&1
$KT -importcert -alias ca -file ca.pem -keystore rsa.p12 -storepass storepass >/dev/null 2>&1
$KT -importcert -alias broker -file rsa.pem -keystore rsa.p12 -storepass storepass >/dev/null 2>&1
echo done
"#;

/// The generated files (kept for the whole test run).
pub struct TestKeys {
    dir: PathBuf,
}

/// A global because generating the keys takes several JVM starts; every
/// test of the binary reads the same files, none writes them.
static KEYS: OnceLock<TestKeys> = OnceLock::new();

/// The shared key material, made on first use.
pub fn keys() -> &'static TestKeys {
    KEYS.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("shardlog-tls-keys")
            .tempdir()
            .expect("tempdir")
            .keep();
        let out = Command::new("bash")
            .arg("-c")
            .arg(SCRIPT)
            .current_dir(&dir)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("done"),
            "key generation failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        TestKeys { dir }
    })
}

impl TestKeys {
    /// The path of a generated file.
    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// A generated file's text.
    pub fn text(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).expect("generated file")
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The DER of the first certificate of a PEM file.
    pub fn cert_der(&self, name: &str) -> Vec<u8> {
        use rustls_pki_types::pem::PemObject;
        rustls_pki_types::CertificateDer::from_pem_file(self.dir.join(name))
            .expect("a certificate")
            .to_vec()
    }
}

/// Settings resolved from `pairs` for listener `SSL`.
pub fn settings(pairs: &[(&str, &str)]) -> SslSettings {
    try_settings(pairs).expect("settings resolve")
}

/// As [`settings`], keeping the error.
pub fn try_settings(pairs: &[(&str, &str)]) -> Result<SslSettings, crate::config::ConfigError> {
    let map: std::collections::BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    SslSettings::resolve("SSL", &|k: &str| map.get(k).cloned())
}

/// The broker's PEM keystore (key + chain in one file) and the CA as a
/// PEM truststore, as `ssl.*` pairs.
pub fn pem_broker(k: &TestKeys) -> Vec<(&'static str, String)> {
    vec![
        ("ssl.keystore.type", "PEM".into()),
        ("ssl.keystore.location", k.path("server-bundle.pem")),
        ("ssl.truststore.type", "PEM".into()),
        ("ssl.truststore.location", k.path("ca.pem")),
    ]
}

/// Borrow owned pairs as `&str` pairs.
pub fn borrow<'a>(pairs: &'a [(&'a str, String)]) -> Vec<(&'a str, &'a str)> {
    pairs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Java's `getSubjectX500Principal().getName()` for each PEM file, one line
/// each; `None` when no `java` is installed.
pub fn java_dns(k: &TestKeys, files: &[&str]) -> Option<Vec<String>> {
    let src = k.dir().join("Dn.java");
    std::fs::write(
        &src,
        "import java.io.*; import java.security.cert.*;\n\
         public class Dn { public static void main(String[] a) throws Exception {\n\
           for (String f : a) { try (InputStream in = new FileInputStream(f)) {\n\
             X509Certificate c = (X509Certificate) CertificateFactory.getInstance(\"X.509\").generateCertificate(in);\n\
             System.out.println(c.getSubjectX500Principal().getName()); } } } }\n",
    )
    .ok()?;
    let out = Command::new("java")
        .arg(&src)
        .args(files.iter().map(|f| k.path(f)))
        .env(
            "JAVA_TOOL_OPTIONS",
            "-Dfile.encoding=UTF-8 -Dstdout.encoding=UTF-8",
        )
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect(),
    )
}
