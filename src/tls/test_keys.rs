//! Key material for the tests, made at test time by openssl and keytool.
