//! `[pure]` EC private keys as Java writes them. The JDK encodes an EC key
//! in PKCS#8 without the optional public key inside its `ECPrivateKey`
//! (RFC 5915 `[1] publicKey`), so keys made by `keytool -genkeypair
//! -keyalg EC` (and PEM keys exported from Java) lack it; ring refuses
//! such a key. The public key is the certificate's, so it is put back from
//! the leaf certificate; ring then checks that the two belong together.

use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use x509_parser::prelude::{FromDer, X509Certificate};

/// `id-ecPublicKey` (1.2.840.10045.2.1), DER contents of the OID.
const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];

/// One DER element: tag, the whole encoding, and the contents.
struct Tlv<'a> {
    tag: u8,
    whole: &'a [u8],
    contents: &'a [u8],
}

/// Read one element from the front of `input`; `None` if malformed.
fn read(input: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let tag = *input.first()?;
    let first = *input.get(1)?;
    let (len, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let bytes = input.get(2..2 + n)?;
        (
            bytes
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | usize::from(*b)),
            2 + n,
        )
    };
    let end = header.checked_add(len)?;
    let whole = input.get(..end)?;
    Some((
        Tlv {
            tag,
            whole,
            contents: &whole[header..],
        },
        &input[end..],
    ))
}

/// Encode one element.
fn write(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    push_length(&mut out, contents.len());
    out.extend_from_slice(contents);
    out
}

/// Append a DER length: short form below 0x80, else 0x80 | the count of
/// big-endian length bytes that follow (X.690 §8.1.3).
pub fn push_length(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
}

/// `key` with the EC public key of `leaf` added when it is a PKCS#8 EC key
/// without one; any other key is returned unchanged.
pub fn with_public_key(key: PrivateKeyDer<'static>, leaf: Option<&[u8]>) -> PrivateKeyDer<'static> {
    let (PrivateKeyDer::Pkcs8(pkcs8), Some(leaf)) = (&key, leaf) else {
        return key;
    };
    match complete(pkcs8.secret_pkcs8_der(), leaf) {
        Some(der) => PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)),
        None => key,
    }
}

fn complete(pkcs8: &[u8], leaf: &[u8]) -> Option<Vec<u8>> {
    // PrivateKeyInfo ::= SEQUENCE { version, AlgorithmIdentifier,
    //   privateKey OCTET STRING, [0] attributes OPTIONAL, ... }
    let (info, _) = read(pkcs8)?;
    let (version, rest) = read(info.contents)?;
    let (algorithm, rest) = read(rest)?;
    let (private_key, trailer) = read(rest)?;
    let (oid, _) = read(algorithm.contents)?;
    if info.tag != 0x30
        || oid.tag != 0x06
        || oid.contents != EC_PUBLIC_KEY
        || private_key.tag != 0x04
    {
        return None;
    }
    // ECPrivateKey ::= SEQUENCE { version 1, privateKey OCTET STRING,
    //   [0] parameters OPTIONAL, [1] publicKey BIT STRING OPTIONAL }
    let (ec, _) = read(private_key.contents)?;
    let mut fields = ec.contents;
    while !fields.is_empty() {
        let (field, rest) = read(fields)?;
        if field.tag == 0xa1 {
            return None; // already has its public key
        }
        fields = rest;
    }
    let (_, cert) = X509Certificate::from_der(leaf).ok()?;
    let public = &cert.public_key().subject_public_key.data;
    let mut bits = vec![0u8];
    bits.extend_from_slice(public);
    let mut ec_contents = ec.contents.to_vec();
    ec_contents.extend(write(0xa1, &write(0x03, &bits)));
    let mut info_contents = version.whole.to_vec();
    info_contents.extend_from_slice(algorithm.whole);
    info_contents.extend(write(0x04, &write(0x30, &ec_contents)));
    info_contents.extend_from_slice(trailer);
    Some(write(0x30, &info_contents))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip() {
        for len in [0usize, 5, 127, 128, 255, 256, 70_000] {
            let data = vec![7u8; len];
            let enc = write(0x04, &data);
            let (tlv, rest) = read(&enc).unwrap();
            assert_eq!((tlv.tag, tlv.contents.len(), rest.len()), (0x04, len, 0));
        }
        assert!(read(&[0x30, 0x85, 1, 1, 1, 1, 1]).is_none());
        assert!(read(&[0x30, 0x05, 1]).is_none());
    }

    #[test]
    fn other_keys_pass_unchanged() {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(vec![0x30, 0x00]));
        let out = with_public_key(key.clone_key(), Some(&[0x30, 0x00]));
        assert_eq!(out.secret_der(), key.secret_der());
    }
}
