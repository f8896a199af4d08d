//! `[pure]` Kafka's password encoder for dynamic password configs
//! (KIP-226; server-common `org/apache/kafka/security/
//! {EncryptingPasswordEncoder,PasswordEncoder,IvParamsEncoder,GcmParamsEncoder,
//! PasswordEncoderConfigs}.java`, used by core's `DynamicBrokerConfig.scala`
//! `toPersistentProps` / `fromPersistentProps`).
//!
//! A per-broker dynamic password (`listener.name.<l>.ssl.keystore.password`,
//! …) is stored in `/config/brokers/<id>` as a CSV map of `key:value` pairs:
//! `keyFactoryAlgorithm`, `cipherAlgorithm`, `keyLength`, `salt`,
//! `iterations`, `encryptedPassword`, `passwordLength`,
//! `initializationVector` (+ `authenticationTagLength` for GCM). The key is
//! PBKDF2(`password.encoder.secret` as UTF-8, 256 random salt bytes,
//! iterations, key length in bits); the plaintext is the password's UTF-8;
//! salt, IV and ciphertext are standard base64 with padding (Java's
//! `Base64.getEncoder()`); `passwordLength` is Java's `String.length()`
//! (UTF-16 units), checked on decode. Decoding uses the parameters stored
//! in the value, so values written with other settings still decode.
//!
//! The random bytes come from the caller (`random`), so encoding is
//! deterministic under test and this module does no I/O.

use std::collections::BTreeMap;
use std::fmt;

use aes_gcm::aead::{Aead, KeyInit};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};

use super::topic::ConfigType;
use super::{ConfigValue, ServerConfig};

/// `PasswordEncoder.KEY_FACTORY_ALGORITHM` … the CSV map's keys.
pub const KEY_FACTORY_ALGORITHM: &str = "keyFactoryAlgorithm";
pub const CIPHER_ALGORITHM: &str = "cipherAlgorithm";
pub const INITIALIZATION_VECTOR: &str = "initializationVector";
pub const KEY_LENGTH: &str = "keyLength";
pub const SALT: &str = "salt";
pub const ITERATIONS: &str = "iterations";
pub const ENCRYPTED_PASSWORD: &str = "encryptedPassword";
pub const PASSWORD_LENGTH: &str = "passwordLength";
/// `GcmParamsEncoder.AUTHENTICATION_TAG_LENGTH`.
pub const AUTHENTICATION_TAG_LENGTH: &str = "authenticationTagLength";

/// `PasswordEncoderConfigs`' keys.
pub const SECRET_CONFIG: &str = "password.encoder.secret";
pub const OLD_SECRET_CONFIG: &str = "password.encoder.old.secret";
pub const KEY_FACTORY_CONFIG: &str = "password.encoder.keyfactory.algorithm";
pub const CIPHER_CONFIG: &str = "password.encoder.cipher.algorithm";
pub const KEY_LENGTH_CONFIG: &str = "password.encoder.key.length";
pub const ITERATIONS_CONFIG: &str = "password.encoder.iterations";

/// `PasswordEncoderConfigs.PASSWORD_ENCODER_CIPHER_ALGORITHM_DEFAULT`.
pub const DEFAULT_CIPHER: &str = "AES/CBC/PKCS5Padding";
/// `PasswordEncoderConfigs.PASSWORD_ENCODER_KEY_LENGTH_DEFAULT` (bits).
pub const DEFAULT_KEY_LENGTH: i32 = 128;
/// `PasswordEncoderConfigs.PASSWORD_ENCODER_ITERATIONS_DEFAULT`.
pub const DEFAULT_ITERATIONS: i32 = 4096;
/// `EncryptingPasswordEncoder.encode`: `new byte[256]` of salt.
pub const SALT_BYTES: usize = 256;
/// The IV Java's `AES/CBC/*` cipher generates (one AES block).
const CBC_IV_BYTES: usize = 16;
/// The IV Java's `AES/GCM/*` cipher generates, and its tag length in bits.
const GCM_IV_BYTES: usize = 12;
const GCM_TAG_BITS: u32 = 128;

/// A PASSWORD-type config value (Kafka's `types.Password`): shown as
/// `[hidden]`, and with a null value by DescribeConfigs.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Password(pub String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Kafka's Password.toString.
        f.write_str("[hidden]")
    }
}

impl ConfigValue for Password {
    fn parse_value(text: &str) -> Result<Self, String> {
        Ok(Password(text.to_owned()))
    }
    fn show_value(&self) -> Option<String> {
        None
    }
    fn config_type() -> ConfigType {
        ConfigType::Password
    }
}

/// The PBKDF2 variants `SecretKeyFactory.getInstance` knows by these names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyFactory {
    Sha1,
    Sha256,
    Sha512,
}

impl KeyFactory {
    fn parse(name: &str) -> Result<Self, String> {
        // JCA algorithm names are case-insensitive.
        match name.to_ascii_uppercase().as_str() {
            "PBKDF2WITHHMACSHA1" => Ok(KeyFactory::Sha1),
            "PBKDF2WITHHMACSHA256" => Ok(KeyFactory::Sha256),
            "PBKDF2WITHHMACSHA512" => Ok(KeyFactory::Sha512),
            _ => Err(format!(
                "key factory algorithm {name} is not supported (PBKDF2WithHmacSHA512, PBKDF2WithHmacSHA256, PBKDF2WithHmacSHA1)"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            KeyFactory::Sha1 => "PBKDF2WithHmacSHA1",
            KeyFactory::Sha256 => "PBKDF2WithHmacSHA256",
            KeyFactory::Sha512 => "PBKDF2WithHmacSHA512",
        }
    }

    fn derive(self, secret: &str, salt: &[u8], iterations: u32, key: &mut [u8]) {
        let secret = secret.as_bytes();
        match self {
            KeyFactory::Sha1 => pbkdf2::pbkdf2_hmac::<sha1::Sha1>(secret, salt, iterations, key),
            KeyFactory::Sha256 => {
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(secret, salt, iterations, key);
            }
            KeyFactory::Sha512 => {
                pbkdf2::pbkdf2_hmac::<sha2::Sha512>(secret, salt, iterations, key);
            }
        }
    }
}

/// `AES/CBC/PKCS5Padding` or `AES/GCM/NoPadding` (Kafka picks the
/// `GcmParamsEncoder` for `AES/GCM/*`, the `IvParamsEncoder` otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Cbc,
    Gcm,
}

impl Mode {
    fn parse(name: &str) -> Result<Self, String> {
        match name.to_ascii_uppercase().as_str() {
            "AES/CBC/PKCS5PADDING" => Ok(Mode::Cbc),
            "AES/GCM/NOPADDING" => Ok(Mode::Gcm),
            _ => Err(format!(
                "cipher algorithm {name} is not supported (AES/CBC/PKCS5Padding, AES/GCM/NoPadding)"
            )),
        }
    }
}

/// The AES key length in bits: 128, 192 or 256.
fn aes_key_bytes(bits: i32) -> Result<usize, String> {
    match bits {
        128 | 192 | 256 => Ok(bits as usize / 8),
        _ => Err(format!(
            "key length {bits} is not an AES key length (128, 192, 256)"
        )),
    }
}

/// Kafka's `EncryptingPasswordEncoder` for one secret and set of settings.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordEncoder {
    secret: Password,
    key_factory: KeyFactory,
    cipher_algorithm: String,
    mode: Mode,
    key_length: i32,
    iterations: u32,
}

impl fmt::Debug for PasswordEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PasswordEncoder")
            .field("key_factory", &self.key_factory.name())
            .field("cipher_algorithm", &self.cipher_algorithm)
            .field("key_length", &self.key_length)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl PasswordEncoder {
    /// The encoder `password.encoder.*` configure: `key_factory` None is
    /// PBKDF2WithHmacSHA512 (`EncryptingPasswordEncoder.secretKeyFactory`;
    /// its SHA1 fallback is for JVMs without SHA512, always present here).
    /// Settings this encoder cannot carry out are an error naming them.
    pub fn new(
        secret: &str,
        key_factory: Option<&str>,
        cipher_algorithm: &str,
        key_length: i32,
        iterations: i32,
    ) -> Result<Self, String> {
        let key_factory = key_factory.map_or(Ok(KeyFactory::Sha512), KeyFactory::parse)?;
        let mode = Mode::parse(cipher_algorithm)?;
        aes_key_bytes(key_length)?;
        let iterations =
            u32::try_from(iterations).map_err(|_| format!("iterations {iterations} < 0"))?;
        Ok(PasswordEncoder {
            secret: Password(secret.to_owned()),
            key_factory,
            cipher_algorithm: cipher_algorithm.to_owned(),
            mode,
            key_length,
            iterations,
        })
    }

    /// Kafka's `encode`: `random` fills the salt (256 bytes) and the IV (16
    /// bytes for CBC, 12 for GCM as Java's cipher makes them).
    pub fn encode(
        &self,
        password: &str,
        random: &mut dyn FnMut(&mut [u8]),
    ) -> Result<String, String> {
        let mut salt = [0u8; SALT_BYTES];
        random(&mut salt);
        let mut iv = vec![
            0u8;
            match self.mode {
                Mode::Cbc => CBC_IV_BYTES,
                Mode::Gcm => GCM_IV_BYTES,
            }
        ];
        random(&mut iv);
        let mut key = vec![0u8; aes_key_bytes(self.key_length)?];
        self.key_factory
            .derive(&self.secret.0, &salt, self.iterations, &mut key);
        let encrypted = match self.mode {
            Mode::Cbc => cbc_encrypt(&key, &iv, password.as_bytes())?,
            Mode::Gcm => gcm_encrypt(&key, &iv, password.as_bytes())?,
        };
        let mut fields = vec![
            (KEY_FACTORY_ALGORITHM, self.key_factory.name().to_owned()),
            (CIPHER_ALGORITHM, self.cipher_algorithm.clone()),
            (KEY_LENGTH, self.key_length.to_string()),
            (SALT, STANDARD.encode(salt)),
            (ITERATIONS, self.iterations.to_string()),
            (ENCRYPTED_PASSWORD, STANDARD.encode(&encrypted)),
            (PASSWORD_LENGTH, password.encode_utf16().count().to_string()),
            (INITIALIZATION_VECTOR, STANDARD.encode(&iv)),
        ];
        if self.mode == Mode::Gcm {
            fields.push((AUTHENTICATION_TAG_LENGTH, GCM_TAG_BITS.to_string()));
        }
        Ok(fields
            .into_iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(","))
    }

    /// Kafka's `decode`: the algorithm, key length, salt, iterations and
    /// IV are the ones stored in `encoded`; only the secret is this
    /// encoder's. Errors carry Kafka's messages.
    pub fn decode(&self, encoded: &str) -> Result<String, String> {
        let params = parse_csv_map(encoded);
        let get = |k: &str| {
            params
                .get(k)
                .map(String::as_str)
                .ok_or_else(|| format!("Password could not be decoded: no {k}"))
        };
        let int = |k: &str| -> Result<i32, String> {
            get(k)?
                .parse::<i32>()
                .map_err(|_| format!("Password could not be decoded: {k} is not a number"))
        };
        let b64 = |k: &str| -> Result<Vec<u8>, String> {
            STANDARD
                .decode(get(k)?)
                .map_err(|_| format!("Password could not be decoded: {k} is not base64"))
        };
        let key_factory = match params.get(KEY_FACTORY_ALGORITHM) {
            Some(name) => KeyFactory::parse(name)?,
            None => KeyFactory::Sha512,
        };
        let mode = Mode::parse(get(CIPHER_ALGORITHM)?)?;
        let key_length = int(KEY_LENGTH)?;
        let salt = b64(SALT)?;
        let iterations = u32::try_from(int(ITERATIONS)?)
            .map_err(|_| "Password could not be decoded: negative iterations".to_owned())?;
        let encrypted = b64(ENCRYPTED_PASSWORD)?;
        let length = int(PASSWORD_LENGTH)?;
        let iv = b64(INITIALIZATION_VECTOR)?;
        let mut key = vec![0u8; aes_key_bytes(key_length)?];
        key_factory.derive(&self.secret.0, &salt, iterations, &mut key);
        let plain = match mode {
            Mode::Cbc => cbc_decrypt(&key, &iv, &encrypted),
            Mode::Gcm => {
                if int(AUTHENTICATION_TAG_LENGTH)? != GCM_TAG_BITS as i32 {
                    return Err(format!(
                        "Password could not be decoded: only a {GCM_TAG_BITS}-bit GCM tag is supported"
                    ));
                }
                gcm_decrypt(&key, &iv, &encrypted)
            }
        }
        .ok_or_else(|| "Password could not be decoded".to_owned())?;
        let password =
            String::from_utf8(plain).map_err(|_| "Password could not be decoded".to_owned())?;
        if i32::try_from(password.encode_utf16().count()) != Ok(length) {
            return Err("Password could not be decoded, sanity check of length failed".to_owned());
        }
        Ok(password)
    }
}

/// The encoder `password.encoder.*` configure with `secret` (the current
/// or the old one).
pub fn from_config(config: &ServerConfig, secret: &Password) -> Result<PasswordEncoder, String> {
    PasswordEncoder::new(
        &secret.0,
        config.password_encoder_keyfactory_algorithm.as_deref(),
        &config.password_encoder_cipher_algorithm,
        config.password_encoder_key_length,
        config.password_encoder_iterations,
    )
}

/// The `password.encoder.*` keys checked at start (`PasswordEncoderConfigs`:
/// key length at least 8, iterations at least 1024; and settings this
/// encoder carries out): the key, value and reason of the first problem.
pub fn validate_config(config: &ServerConfig) -> Result<(), (&'static str, String, String)> {
    let key_length = config.password_encoder_key_length;
    if key_length < 8 {
        return Err((
            KEY_LENGTH_CONFIG,
            key_length.to_string(),
            "Value must be at least 8".into(),
        ));
    }
    aes_key_bytes(key_length).map_err(|e| (KEY_LENGTH_CONFIG, key_length.to_string(), e))?;
    let iterations = config.password_encoder_iterations;
    if iterations < 1024 {
        return Err((
            ITERATIONS_CONFIG,
            iterations.to_string(),
            "Value must be at least 1024".into(),
        ));
    }
    let cipher = &config.password_encoder_cipher_algorithm;
    Mode::parse(cipher).map_err(|e| (CIPHER_CONFIG, cipher.clone(), e))?;
    if let Some(kf) = &config.password_encoder_keyfactory_algorithm {
        KeyFactory::parse(kf).map_err(|e| (KEY_FACTORY_CONFIG, kf.clone(), e))?;
    }
    Ok(())
}

/// Kafka's `Csv.parseCsvMap`: entries split on `,` (spaces around it
/// dropped), each at its last `:`, key and value trimmed.
pub fn parse_csv_map(text: &str) -> BTreeMap<String, String> {
    text.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| match e.rsplit_once(':') {
            Some((k, v)) => (k.trim().to_owned(), v.trim().to_owned()),
            None => (e.to_owned(), String::new()),
        })
        .collect()
}

fn cbc_encrypt(key: &[u8], iv: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
    let bad = |_| "AES key or IV of the wrong size".to_owned();
    Ok(match key.len() {
        16 => cbc::Encryptor::<aes::Aes128>::new_from_slices(key, iv)
            .map_err(bad)?
            .encrypt_padded_vec::<Pkcs7>(plain),
        24 => cbc::Encryptor::<aes::Aes192>::new_from_slices(key, iv)
            .map_err(bad)?
            .encrypt_padded_vec::<Pkcs7>(plain),
        _ => cbc::Encryptor::<aes::Aes256>::new_from_slices(key, iv)
            .map_err(bad)?
            .encrypt_padded_vec::<Pkcs7>(plain),
    })
}

fn cbc_decrypt(key: &[u8], iv: &[u8], encrypted: &[u8]) -> Option<Vec<u8>> {
    match key.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec::<Pkcs7>(encrypted)
            .ok(),
        24 => cbc::Decryptor::<aes::Aes192>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec::<Pkcs7>(encrypted)
            .ok(),
        _ => cbc::Decryptor::<aes::Aes256>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec::<Pkcs7>(encrypted)
            .ok(),
    }
}

type Aes192Gcm = aes_gcm::AesGcm<aes::Aes192, aes_gcm::aead::consts::U12>;

fn gcm_encrypt(key: &[u8], iv: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
    let nonce = iv
        .try_into()
        .map_err(|_| "GCM IV of the wrong size".to_owned())?;
    let bad = |_| "AES key of the wrong size".to_owned();
    let out = match key.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(key)
            .map_err(bad)?
            .encrypt(nonce, plain),
        24 => Aes192Gcm::new_from_slice(key)
            .map_err(bad)?
            .encrypt(nonce, plain),
        _ => aes_gcm::Aes256Gcm::new_from_slice(key)
            .map_err(bad)?
            .encrypt(nonce, plain),
    };
    out.map_err(|_| "AES/GCM encryption failed".to_owned())
}

fn gcm_decrypt(key: &[u8], iv: &[u8], encrypted: &[u8]) -> Option<Vec<u8>> {
    let nonce = iv.try_into().ok()?;
    match key.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(key)
            .ok()?
            .decrypt(nonce, encrypted)
            .ok(),
        24 => Aes192Gcm::new_from_slice(key)
            .ok()?
            .decrypt(nonce, encrypted)
            .ok(),
        _ => aes_gcm::Aes256Gcm::new_from_slice(key)
            .ok()?
            .decrypt(nonce, encrypted)
            .ok(),
    }
}

#[cfg(test)]
mod tests;
