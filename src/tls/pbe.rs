//! `[pure]` `ENCRYPTED PRIVATE KEY` decryption for PEM keystores, covering
//! the schemes Kafka 3.9 loads: `PemStore.privateKey` in
//! `clients/.../security/ssl/DefaultSslEngineFactory.java` hands the
//! `EncryptedPrivateKeyInfo` to the JDK's `SecretKeyFactory`, which on
//! JDK 17 knows the PKCS#12 PBE schemes (`openssl pkcs8 -topk8 -v1
//! PBE-SHA1-3DES`, `-v1 PBE-SHA1-RC2-40`, ...) and not PBES2. shardlog takes
//! both: PBES2 (PBKDF2/scrypt + AES/DES-EDE3) through the pkcs8 crate and
//! the PKCS#12 PBE schemes (RFC 7292 Appendix B.2 KDF over SHA-1, then
//! DES-EDE3-CBC or RC2-CBC, RFC 7292 Appendix C) and PBES1
//! pbeWithSHA1AndDES-CBC (RFC 8018 Section 6.1) here.

use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockCipherDecrypt, BlockModeDecrypt, KeyInit, KeyIvInit};
use pkcs12::kdf::{derive_key_utf8, Pkcs12KeyType};
use pkcs8::der::asn1::{ObjectIdentifier, OctetStringRef};
use pkcs8::der::{Decode, Reader, SliceReader};
use pkcs8::pkcs5::{self, pbes1, EncryptionScheme};
use sha1::{Digest, Sha1};

/// pkcs-12PbeIds (RFC 7292 Appendix C): pbeWithSHAAnd128BitRC4 (.1) and
/// pbeWithSHAAnd40BitRC4 (.2) are stream ciphers no JDK keystore writes.
const PBE_SHA_3DES: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.12.1.3");
const PBE_SHA_2DES: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.12.1.4");
const PBE_SHA_RC2_128: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.12.1.5");
const PBE_SHA_RC2_40: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.12.1.6");

/// Why a key did not decrypt.
#[derive(Debug, PartialEq, Eq)]
pub enum PbeError {
    /// Not an `EncryptedPrivateKeyInfo`, or a scheme shardlog does not
    /// know (the text names it).
    Unsupported(String),
    /// The scheme is known and the key did not decrypt: the password is
    /// wrong (or the data is damaged).
    Decrypt(String),
}

/// The PKCS#8 `PrivateKeyInfo` inside `der`, an `EncryptedPrivateKeyInfo`.
/// A key that decrypts to something other than a `PrivateKeyInfo` counts
/// as a wrong password (CBC padding alone passes one time in 256).
pub fn decrypt(der: &[u8], password: &str) -> Result<Vec<u8>, PbeError> {
    let plain = decrypt_any(der, password)?;
    pkcs8::PrivateKeyInfoRef::try_from(plain.as_slice())
        .map_err(|_| PbeError::Decrypt("the decrypted bytes are not a PKCS#8 key".into()))?;
    Ok(plain)
}

fn decrypt_any(der: &[u8], password: &str) -> Result<Vec<u8>, PbeError> {
    if let Ok(info) = pkcs8::EncryptedPrivateKeyInfoRef::try_from(der) {
        let data = info.encrypted_data.as_bytes();
        return match info.encryption_algorithm {
            EncryptionScheme::Pbes1(alg) => pbes1(&alg, data, password),
            scheme => scheme.decrypt(password, data).map_err(|e| match e {
                pkcs5::Error::DecryptFailed => PbeError::Decrypt(e.to_string()),
                other => PbeError::Unsupported(format!(
                    "the key's PBES2 parameters are not supported: {other}"
                )),
            }),
        };
    }
    let parsed = pkcs12_pbe(der).map_err(|e| {
        PbeError::Unsupported(format!(
            "not an encrypted PKCS#8 key (EncryptedPrivateKeyInfo): {e}"
        ))
    })?;
    let Pkcs12Pbe {
        oid,
        salt,
        iterations,
        data,
    } = parsed;
    match oid {
        PBE_SHA_3DES => cbc_decrypt::<des::TdesEde3>(data, password, salt, iterations, 24),
        PBE_SHA_2DES => cbc_decrypt::<des::TdesEde2>(data, password, salt, iterations, 16),
        PBE_SHA_RC2_128 => cbc_decrypt::<rc2::Rc2>(data, password, salt, iterations, 16),
        PBE_SHA_RC2_40 => cbc_decrypt::<rc2::Rc2>(data, password, salt, iterations, 5),
        other => Err(unknown_scheme(&other.to_string())),
    }
}

fn unknown_scheme(name: &str) -> PbeError {
    PbeError::Unsupported(format!(
        "the key is encrypted with {name}, which shardlog does not decrypt; it reads PBES2 \
         (openssl pkcs8 -topk8 -v2 aes-256-cbc), the PKCS#12 PBE schemes (openssl pkcs8 -topk8 \
         -v1 PBE-SHA1-3DES, the form Kafka on JDK 17 reads) and PBES1 pbeWithSHA1AndDES-CBC"
    ))
}

/// PBES1 (RFC 8018 Section 6.1): PBKDF1 over SHA-1 gives the DES key and
/// IV. MD5 and MD2 (and RC2 under PBES1) are not read.
fn pbes1(alg: &pbes1::Algorithm, data: &[u8], password: &str) -> Result<Vec<u8>, PbeError> {
    if alg.encryption != pbes1::EncryptionScheme::PbeWithSha1AndDesCbc {
        return Err(unknown_scheme(&format!(
            "PBES1 {:?} ({})",
            alg.encryption,
            alg.encryption.oid()
        )));
    }
    let iterations = alg.parameters.iteration_count;
    if iterations == 0 {
        return Err(PbeError::Unsupported(
            "the key's PBES1 iteration count is 0".into(),
        ));
    }
    let mut t = Sha1::new()
        .chain_update(password.as_bytes())
        .chain_update(alg.parameters.salt)
        .finalize();
    for _ in 1..iterations {
        t = Sha1::digest(t);
    }
    let cipher = cbc::Decryptor::<des::Des>::new_from_slices(&t[..8], &t[8..16])
        .map_err(|e| PbeError::Unsupported(format!("cipher setup: {e}")))?;
    cipher
        .decrypt_padded_vec::<Pkcs7>(data)
        .map_err(|_| PbeError::Decrypt("bad padding after decryption".into()))
}

/// An `EncryptedPrivateKeyInfo` whose algorithm has `pkcs-12PbeParams`
/// (`SEQUENCE { salt OCTET STRING, iterations INTEGER }`).
struct Pkcs12Pbe<'a> {
    oid: ObjectIdentifier,
    salt: &'a [u8],
    iterations: i32,
    data: &'a [u8],
}

fn pkcs12_pbe(der: &[u8]) -> Result<Pkcs12Pbe<'_>, pkcs8::der::Error> {
    let mut reader = SliceReader::new(der)?;
    let parsed = reader.sequence(|r| {
        let (oid, salt, iterations) = r.sequence(|alg| {
            let oid = ObjectIdentifier::decode(alg)?;
            let (salt, iterations) = alg.sequence(|params| {
                let salt = <&OctetStringRef>::decode(params)?;
                let iterations = i32::decode(params)?;
                Ok::<_, pkcs8::der::Error>((salt.as_bytes(), iterations))
            })?;
            Ok::<_, pkcs8::der::Error>((oid, salt, iterations))
        })?;
        let data = <&OctetStringRef>::decode(r)?.as_bytes();
        Ok::<_, pkcs8::der::Error>(Pkcs12Pbe {
            oid,
            salt,
            iterations,
            data,
        })
    })?;
    reader.finish()?;
    Ok(parsed)
}

/// RFC 7292 Appendix B.2 (SHA-1, the password as a BMPString with its
/// trailing zero) for the key (ID 1) and the 8-byte IV (ID 2), then CBC
/// with PKCS#5 padding.
fn cbc_decrypt<C>(
    data: &[u8],
    password: &str,
    salt: &[u8],
    iterations: i32,
    key_len: usize,
) -> Result<Vec<u8>, PbeError>
where
    C: BlockCipherDecrypt + KeyInit,
{
    if !(1..=10_000_000).contains(&iterations) {
        return Err(PbeError::Unsupported(format!(
            "the key's PBE iteration count {iterations} is out of range"
        )));
    }
    let kdf_err = |e: pkcs8::der::Error| PbeError::Decrypt(format!("the password: {e}"));
    let key = derive_key_utf8::<Sha1>(
        password,
        salt,
        Pkcs12KeyType::EncryptionKey,
        iterations,
        key_len,
    )
    .map_err(kdf_err)?;
    let iv = derive_key_utf8::<Sha1>(password, salt, Pkcs12KeyType::Iv, iterations, 8)
        .map_err(kdf_err)?;
    let cipher = cbc::Decryptor::<C>::new_from_slices(&key, &iv)
        .map_err(|e| PbeError::Unsupported(format!("cipher setup: {e}")))?;
    cipher
        .decrypt_padded_vec::<Pkcs7>(data)
        .map_err(|_| PbeError::Decrypt("bad padding after decryption".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_unsupported_not_a_password_error() {
        assert!(matches!(
            decrypt(b"\x30\x03\x02\x01\x00", "x"),
            Err(PbeError::Unsupported(_))
        ));
    }
}
