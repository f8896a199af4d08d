//! TLS tests over key material made at test time.
