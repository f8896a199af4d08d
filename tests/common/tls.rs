//! Key material for the SSL tests, made at test time in a temp dir with
//! `openssl` and the JDK's `keytool` (as an operator would make it for
//! Kafka, see Kafka's docs "Encryption and Authentication using SSL"):
//! - a CA (`ca.pem`, EC P-256) and a second, unrelated CA;
//! - per broker name a certificate signed by the CA with SAN
//!   `DNS:localhost,IP:127.0.0.1`, in every keystore form the broker keys
//!   `ssl.keystore.type`/`location`/`password`, `ssl.key.password` accept
//!   (Kafka's `DefaultSslEngineFactory`): PKCS12 written by
//!   `openssl pkcs12 -export`, PKCS12 written by `keytool` (an RSA key made
//!   by `keytool -genkeypair`, signed by the CA), PEM (encrypted PKCS#8 key
//!   and the chain in one file; Kafka requires `ssl.key.password` for a
//!   PEM keystore file; the key encrypted as Kafka on JDK 17 reads it,
//!   PBE-SHA1-3DES) and JKS (`keytool -importkeystore`);
//! - truststores holding the CA: PKCS12 and JKS (`keytool -importcert`)
//!   and the PEM CA file;
//! - client certificates: one signed by the CA, one signed by the other CA,
//!   and one signed by the CA that expired in 2020 (`keytool -gencert
//!   -startdate`), each as PEM key + certificate (librdkafka, kafka-python)
//!   and PKCS12 (the Java client);
//! - the broker config lines of an SSL listener ([`Tls::broker_ssl`]) and a
//!   Java client's `client.properties` ([`Tls::java_client_properties`]).
//!
//! A missing `openssl` or `keytool` fails the test naming the install step.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

/// The password of every keystore, truststore and encrypted key here.
pub const PASSWORD: &str = "shardlog-test-pass";

/// How a broker's keystore is stored (the value of `ssl.keystore.type`
/// and which file `ssl.keystore.location` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// PKCS12 written by `openssl pkcs12 -export` (EC key, chain with the CA).
    Pkcs12Openssl,
    /// PKCS12 written by `keytool` (RSA key; the CA also as a trusted entry).
    Pkcs12Keytool,
    /// PEM: encrypted PKCS#8 key and certificate chain in one file.
    Pem,
    /// JKS written by `keytool -importkeystore` (for the Kafka peer).
    Jks,
}

/// A client's certificate: which one the client presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientCert {
    /// Signed by the CA the brokers trust.
    Valid,
    /// Signed by another CA.
    OtherCa,
    /// Signed by the brokers' CA, expired since 2020.
    Expired,
}

impl ClientCert {
    fn name(self) -> &'static str {
        match self {
            ClientCert::Valid => "client",
            ClientCert::OtherCa => "client-other-ca",
            ClientCert::Expired => "client-expired",
        }
    }
}

/// The key material of one test, in its own temp dir.
pub struct Tls {
    pub dir: tempfile::TempDir,
}

impl Tls {
    /// The CA, the other CA, a broker certificate for each of `brokers`
    /// (e.g. `["broker-1", "broker-2"]`, used as CN), the truststores and
    /// the three client certificates.
    pub fn make(brokers: &[&str]) -> Tls {
        assert_tools();
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tls dir");
        let tls = Tls { dir };
        tls.make_ca("ca", "shardlog-test-ca");
        tls.make_ca("other-ca", "shardlog-other-ca");
        for b in brokers {
            tls.make_broker(b);
        }
        tls.make_truststores();
        tls.make_client(ClientCert::Valid.name(), "ca", "CN=client,O=shardlog-tests");
        tls.make_client(
            ClientCert::OtherCa.name(),
            "other-ca",
            "CN=client-other-ca,O=shardlog-tests",
        );
        tls.make_expired_client();
        tls
    }

    /// Only the CA and, for each of `brokers`, the openssl-made forms
    /// ([`Store::Pkcs12Openssl`], [`Store::Pem`]): no JVM runs, for tests
    /// that need one SSL listener and clients trusting the CA, nothing else
    /// (no truststore files, client certificates or other CA).
    pub fn make_pem(brokers: &[&str]) -> Tls {
        assert_openssl();
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tls dir");
        let tls = Tls { dir };
        tls.make_ca("ca", "shardlog-test-ca");
        for b in brokers {
            tls.make_broker_openssl(b);
        }
        tls
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn p_str(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// `ca.pem`: the CA certificate the brokers and clients trust.
    pub fn ca_pem(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// The other CA's certificate (a client trusting it rejects the brokers).
    pub fn other_ca_pem(&self) -> PathBuf {
        self.path("other-ca.pem")
    }

    /// `(type, file)` of broker `name`'s keystore in `store` form.
    pub fn keystore(&self, name: &str, store: Store) -> (&'static str, PathBuf) {
        match store {
            Store::Pkcs12Openssl => ("PKCS12", self.path(&format!("{name}.p12"))),
            Store::Pkcs12Keytool => ("PKCS12", self.path(&format!("{name}-keytool.p12"))),
            Store::Pem => ("PEM", self.path(&format!("{name}-keystore.pem"))),
            Store::Jks => ("JKS", self.path(&format!("{name}.jks"))),
        }
    }

    /// `(type, file)` of the truststore matching `store`'s format.
    pub fn truststore(&self, store: Store) -> (&'static str, PathBuf) {
        match store {
            Store::Pkcs12Openssl | Store::Pkcs12Keytool => ("PKCS12", self.path("truststore.p12")),
            Store::Pem => ("PEM", self.ca_pem()),
            Store::Jks => ("JKS", self.path("truststore.jks")),
        }
    }

    /// The broker config lines of an SSL listener for broker `name`:
    /// keystore and truststore in `store` form, each key prefixed with
    /// `prefix` (`""`, or `listener.name.<listener lower-case>.`, SECURITY.md
    /// §1.1), plus `ssl.client.auth` when given.
    pub fn broker_ssl(
        &self,
        name: &str,
        store: Store,
        prefix: &str,
        client_auth: Option<&str>,
    ) -> Vec<String> {
        let (ks_type, ks) = self.keystore(name, store);
        let (ts_type, ts) = self.truststore(store);
        let mut lines = vec![
            format!("{prefix}ssl.keystore.type={ks_type}"),
            format!("{prefix}ssl.keystore.location={}", ks.display()),
            format!("{prefix}ssl.key.password={PASSWORD}"),
            format!("{prefix}ssl.truststore.type={ts_type}"),
            format!("{prefix}ssl.truststore.location={}", ts.display()),
        ];
        // Kafka's DefaultSslEngineFactory refuses a password with a PEM
        // keystore file ("only key password may be specified"); a PEM
        // truststore file needs none either.
        if store != Store::Pem {
            lines.push(format!("{prefix}ssl.keystore.password={PASSWORD}"));
            lines.push(format!("{prefix}ssl.truststore.password={PASSWORD}"));
        }
        if let Some(auth) = client_auth {
            lines.push(format!("{prefix}ssl.client.auth={auth}"));
        }
        lines
    }

    /// PEM files of a client certificate: `(certificate, key)`; the key is
    /// unencrypted PKCS#8.
    pub fn client_pem(&self, cert: ClientCert) -> (PathBuf, PathBuf) {
        let n = cert.name();
        (
            self.path(&format!("{n}.pem")),
            self.path(&format!("{n}.key")),
        )
    }

    /// The PKCS12 keystore of a client certificate (password [`PASSWORD`]).
    pub fn client_p12(&self, cert: ClientCert) -> PathBuf {
        self.path(&format!("{}.p12", cert.name()))
    }

    /// A Java client's `client.properties` (`--command-config`,
    /// `--producer.config`, `--consumer.config`): SSL trusting `trust_ca`
    /// (the CA's PKCS12 truststore, or the other CA's PEM file), with
    /// `cert`'s keystore when given.
    pub fn java_client_properties(&self, trust_ca: bool, cert: Option<ClientCert>) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let file = self.path(&format!(
            "client-{}.properties",
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let mut text = String::from("security.protocol=SSL\n");
        if trust_ca {
            text.push_str(&format!(
                "ssl.truststore.type=PKCS12\nssl.truststore.location={}\n\
                 ssl.truststore.password={PASSWORD}\n",
                self.p_str("truststore.p12")
            ));
        } else {
            text.push_str(&format!(
                "ssl.truststore.type=PEM\nssl.truststore.location={}\n",
                self.other_ca_pem().display()
            ));
        }
        if let Some(c) = cert {
            text.push_str(&format!(
                "ssl.keystore.type=PKCS12\nssl.keystore.location={}\n\
                 ssl.keystore.password={PASSWORD}\nssl.key.password={PASSWORD}\n",
                self.client_p12(c).display()
            ));
        }
        std::fs::write(&file, text).expect("client.properties");
        file
    }

    /// librdkafka's settings (confluent-kafka, kcat `-X`): SSL trusting the
    /// CA (or the other CA), with `cert` when given.
    pub fn librdkafka_conf(&self, trust_ca: bool, cert: Option<ClientCert>) -> Vec<String> {
        let ca = if trust_ca {
            self.ca_pem()
        } else {
            self.other_ca_pem()
        };
        let mut v = vec![
            "security.protocol=SSL".to_string(),
            format!("ssl.ca.location={}", ca.display()),
        ];
        if let Some(c) = cert {
            let (pem, key) = self.client_pem(c);
            v.push(format!("ssl.certificate.location={}", pem.display()));
            v.push(format!("ssl.key.location={}", key.display()));
        }
        v
    }

    /// `serial=...` of a certificate as `openssl x509 -serial` prints it.
    pub fn serial(&self, cert_pem: &Path) -> String {
        let out = openssl(&[
            "x509",
            "-noout",
            "-serial",
            "-in",
            &cert_pem.display().to_string(),
        ]);
        out.trim().trim_start_matches("serial=").to_owned()
    }

    /// Another certificate for broker `name` (made by [`Tls::make`]): the
    /// same subject DN and SANs, a new EC key and serial, signed by the CA,
    /// as `<file>.p12` (PKCS12 by `openssl pkcs12 -export`, password
    /// [`PASSWORD`]) and `<file>.pem` — what an operator rotating a
    /// broker's certificate makes (KIP-226 accepts it: Kafka's
    /// `SslFactory.CertificateEntries` compares DN and SANs).
    pub fn reissue_broker(&self, name: &str, file: &str) -> PathBuf {
        self.key_and_csr(file, &format!("/CN={name}/O=shardlog-tests"));
        self.sign(file, "ca", true);
        self.export_p12(file, "ca");
        self.path(&format!("{file}.p12"))
    }

    // -----------------------------------------------------------------
    // making the material
    // -----------------------------------------------------------------

    fn make_ca(&self, name: &str, cn: &str) {
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &self.p_str(&format!("{name}.key")),
            "-out",
            &self.p_str(&format!("{name}.pem")),
            "-days",
            "30",
            "-subj",
            &format!("/CN={cn}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
    }

    /// An X.509 v3 extension file for a leaf certificate.
    fn ext_file(&self, name: &str, server: bool) -> String {
        let file = self.p_str(&format!("{name}.ext"));
        let mut text = String::from(
            "[v3]\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n\
             extendedKeyUsage=serverAuth,clientAuth\n",
        );
        if server {
            text.push_str("subjectAltName=DNS:localhost,IP:127.0.0.1\n");
        }
        std::fs::write(&file, text).expect("ext file");
        file
    }

    /// Sign `<name>.csr` with CA `ca` into `<name>.pem`.
    fn sign(&self, name: &str, ca: &str, server: bool) {
        let ext = self.ext_file(name, server);
        openssl(&[
            "x509",
            "-req",
            "-in",
            &self.p_str(&format!("{name}.csr")),
            "-CA",
            &self.p_str(&format!("{ca}.pem")),
            "-CAkey",
            &self.p_str(&format!("{ca}.key")),
            "-set_serial",
            &random_serial(),
            "-days",
            "30",
            "-sha256",
            "-extfile",
            &ext,
            "-extensions",
            "v3",
            "-out",
            &self.p_str(&format!("{name}.pem")),
        ]);
    }

    /// An EC key (`<name>.key`, PKCS#8) and its CSR (`<name>.csr`).
    fn key_and_csr(&self, name: &str, subject: &str) {
        openssl(&[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &self.p_str(&format!("{name}.key")),
            "-out",
            &self.p_str(&format!("{name}.csr")),
            "-subj",
            subject,
        ]);
    }

    /// `openssl pkcs12 -export` of `<name>.pem` + `<name>.key` (+ the CA).
    fn export_p12(&self, name: &str, ca: &str) {
        openssl(&[
            "pkcs12",
            "-export",
            "-in",
            &self.p_str(&format!("{name}.pem")),
            "-inkey",
            &self.p_str(&format!("{name}.key")),
            "-certfile",
            &self.p_str(&format!("{ca}.pem")),
            "-name",
            name,
            "-out",
            &self.p_str(&format!("{name}.p12")),
            "-passout",
            &format!("pass:{PASSWORD}"),
        ]);
    }

    fn make_broker(&self, name: &str) {
        self.make_broker_openssl(name);
        self.make_broker_keytool(name);
    }

    /// openssl: EC key, PKCS12 and PEM forms.
    fn make_broker_openssl(&self, name: &str) {
        self.key_and_csr(name, &format!("/CN={name}/O=shardlog-tests"));
        self.sign(name, "ca", true);
        self.export_p12(name, "ca");
        let enc_key = self.p_str(&format!("{name}-enc.key"));
        // PKCS#12 PBE (pbeWithSHAAnd3-KeyTripleDES-CBC): the encrypted
        // PKCS#8 form Kafka 3.9's PemStore.privateKey decrypts on JDK 17
        // (SecretKeyFactory of EncryptedPrivateKeyInfo.getAlgName(): a
        // PBES2 key fails there with "PBES2 SecretKeyFactory not available").
        openssl(&[
            "pkcs8",
            "-topk8",
            "-v1",
            "PBE-SHA1-3DES",
            "-in",
            &self.p_str(&format!("{name}.key")),
            "-out",
            &enc_key,
            "-passout",
            &format!("pass:{PASSWORD}"),
        ]);
        let mut pem = std::fs::read_to_string(&enc_key).expect("encrypted key");
        pem.push_str(&std::fs::read_to_string(self.path(&format!("{name}.pem"))).expect("cert"));
        pem.push_str(&std::fs::read_to_string(self.ca_pem()).expect("ca"));
        std::fs::write(self.path(&format!("{name}-keystore.pem")), pem).expect("pem keystore");
    }

    /// keytool: JKS from the openssl PKCS12, and a keytool-made PKCS12.
    fn make_broker_keytool(&self, name: &str) {
        keytool(&[
            "-importkeystore",
            "-srckeystore",
            &self.p_str(&format!("{name}.p12")),
            "-srcstoretype",
            "PKCS12",
            "-srcstorepass",
            PASSWORD,
            "-destkeystore",
            &self.p_str(&format!("{name}.jks")),
            "-deststoretype",
            "JKS",
            "-deststorepass",
            PASSWORD,
            "-destkeypass",
            PASSWORD,
            "-noprompt",
        ]);
        self.make_keytool_broker(name);
    }

    /// keytool: an RSA key pair, its CSR signed by the CA, the chain
    /// imported back (CA first, as a trusted entry).
    fn make_keytool_broker(&self, name: &str) {
        let kt = format!("{name}-keytool");
        let store = self.p_str(&format!("{kt}.p12"));
        let san = "SAN=dns:localhost,ip:127.0.0.1";
        keytool(&[
            "-genkeypair",
            "-alias",
            name,
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-dname",
            &format!("CN={name},OU=keytool,O=shardlog-tests"),
            "-ext",
            san,
            "-validity",
            "30",
            "-storetype",
            "PKCS12",
            "-keystore",
            &store,
            "-storepass",
            PASSWORD,
            "-keypass",
            PASSWORD,
        ]);
        keytool(&[
            "-certreq",
            "-alias",
            name,
            "-keystore",
            &store,
            "-storepass",
            PASSWORD,
            "-ext",
            san,
            "-file",
            &self.p_str(&format!("{kt}.csr")),
        ]);
        self.sign(&kt, "ca", true);
        keytool(&[
            "-importcert",
            "-alias",
            "ca",
            "-file",
            &self.p_str("ca.pem"),
            "-keystore",
            &store,
            "-storepass",
            PASSWORD,
            "-noprompt",
        ]);
        keytool(&[
            "-importcert",
            "-alias",
            name,
            "-file",
            &self.p_str(&format!("{kt}.pem")),
            "-keystore",
            &store,
            "-storepass",
            PASSWORD,
            "-noprompt",
        ]);
    }

    fn make_truststores(&self) {
        for (file, kind) in [("truststore.p12", "PKCS12"), ("truststore.jks", "JKS")] {
            keytool(&[
                "-importcert",
                "-alias",
                "ca",
                "-file",
                &self.p_str("ca.pem"),
                "-keystore",
                &self.p_str(file),
                "-storetype",
                kind,
                "-storepass",
                PASSWORD,
                "-noprompt",
            ]);
        }
    }

    fn make_client(&self, name: &str, ca: &str, dname: &str) {
        let subject = format!("/{}", dname.replace(',', "/"));
        self.key_and_csr(name, &subject);
        self.sign(name, ca, false);
        self.export_p12(name, ca);
    }

    /// Signed by the CA with `keytool -gencert -startdate` (validity 2020-01-01
    /// to 2020-01-03): the CA key goes into a PKCS12 keytool reads first.
    fn make_expired_client(&self) {
        let name = ClientCert::Expired.name();
        self.key_and_csr(name, "/CN=client-expired/O=shardlog-tests");
        openssl(&[
            "pkcs12",
            "-export",
            "-in",
            &self.p_str("ca.pem"),
            "-inkey",
            &self.p_str("ca.key"),
            "-name",
            "ca",
            "-out",
            &self.p_str("ca-signer.p12"),
            "-passout",
            &format!("pass:{PASSWORD}"),
        ]);
        keytool(&[
            "-gencert",
            "-keystore",
            &self.p_str("ca-signer.p12"),
            "-storetype",
            "PKCS12",
            "-storepass",
            PASSWORD,
            "-alias",
            "ca",
            "-infile",
            &self.p_str(&format!("{name}.csr")),
            "-outfile",
            &self.p_str(&format!("{name}.pem")),
            "-rfc",
            "-startdate",
            "2020/01/01 00:00:00",
            "-validity",
            "2",
            "-ext",
            "EKU=clientAuth,serverAuth",
        ]);
        self.export_p12(name, "ca");
    }
}

fn random_serial() -> String {
    // Distinct serials per certificate (a rotation test tells them apart).
    let mut bytes = [0u8; 8];
    getrandom_bytes(&mut bytes);
    format!(
        "0x{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

fn getrandom_bytes(buf: &mut [u8]) {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .expect("/dev/urandom");
    buf[0] &= 0x7f; // a positive serial
    buf[0] |= 0x01;
}

fn tool_runs(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn assert_openssl() {
    assert!(
        tool_runs("openssl", "version"),
        "openssl missing: run `apt-get install -y --no-install-recommends openssl`"
    );
}

fn assert_tools() {
    assert_openssl();
    assert!(
        tool_runs("keytool", "-help"),
        "keytool missing: run `bash tests/run.sh` \
         (apt-get install -y --no-install-recommends openjdk-17-jdk-headless)"
    );
}

/// Run `openssl args`; its stdout, or fail the test with its output.
pub fn openssl(args: &[&str]) -> String {
    run("openssl", args)
}

/// Run `keytool args` (-J flags keep the short-lived JVM small).
pub fn keytool(args: &[&str]) -> String {
    let mut all = vec!["-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1"];
    all.extend_from_slice(args);
    run("keytool", &all)
}

fn run(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Named clients (one principal each, for the ACL tests).
impl Tls {
    /// Another client certificate signed by the CA, subject `dname` (e.g.
    /// `CN=alice`): `<name>.pem`, `<name>.key`, `<name>.p12`. Kafka's
    /// principal for it is `User:<dname>` (RFC 2253, default mapping rule).
    pub fn add_client(&self, name: &str, dname: &str) {
        self.make_client(name, "ca", dname);
    }

    /// A Java client's `client.properties` presenting client `name`'s
    /// certificate (made by [`Tls::add_client`]), trusting the CA.
    pub fn java_properties_of(&self, name: &str) -> PathBuf {
        let file = self.path(&format!("client-{name}.properties"));
        let text = format!(
            "security.protocol=SSL\n\
             ssl.truststore.type=PKCS12\nssl.truststore.location={}\n\
             ssl.truststore.password={PASSWORD}\n\
             ssl.keystore.type=PKCS12\nssl.keystore.location={}\n\
             ssl.keystore.password={PASSWORD}\nssl.key.password={PASSWORD}\n",
            self.p_str("truststore.p12"),
            self.p_str(&format!("{name}.p12")),
        );
        std::fs::write(&file, text).expect("client.properties");
        file
    }

    /// tests/py's tls.json for client `name`: the CA, its certificate and key.
    pub fn py_tls_of(&self, name: &str) -> PathBuf {
        let file = self.path(&format!("py-{name}.json"));
        let body = serde_json::json!({
            "cafile": self.ca_pem(),
            "certfile": self.path(&format!("{name}.pem")),
            "keyfile": self.path(&format!("{name}.key")),
        });
        std::fs::write(&file, body.to_string()).expect("tls.json");
        file
    }
}
