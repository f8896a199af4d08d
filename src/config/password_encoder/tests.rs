use super::*;

/// Values Kafka 3.9's `PasswordEncoder.encrypting(new Password("s3cret"), …)`
/// wrote (JDK 17): CBC with the defaults, GCM with a 256-bit key, and
/// PBKDF2WithHmacSHA1 with a 192-bit key. tests/password_encoder_interop.rs
/// runs Kafka's Java code at test time both ways.
const JAVA_CBC: &str = "initializationVector:0pbHm/t00Sv+wHpR5m+U9Q==,keyLength:128,salt:qrxfuQK8gKkwLO1MengyiX1miVvHgJrqpGdIjlDA6GAkGLSsd39GkJ17x7fuMMPw8ugqSZDvRNvM/6gVD7d+UuO8l5DE9aMhBCKGTxd3EiWwUPQy2a17jEwiziDZchh+OAVEBnDOfiKiLviiYngbJTs+/Fq/HTJIvDuNmiEuSngfb5fZ4Ktmo28TwC3Cl66b8iBbK/yKDSHmzqU83HILwTsD7Okyy7DpksfgltRw/Dyr+yHqZsZu7v6tPIZLgKq5r09ltpSLvQpU8/IPDVlGKuCnuwxKQz2T6mmfmYdD/y6136rhUh/tZKTyIDGpP7P+ER2T+mvoiyUc2ehi1dWRMA==,keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,iterations:4096,passwordLength:11,encryptedPassword:QnxRswXanAleNMH8XAexCg==";
const JAVA_GCM: &str = "initializationVector:Fpy0OKR29qSTWxLZ,keyLength:256,salt:6dBJp//LLe7UXHY6F21soaU7zoWHLOtEyRP7mAw8jyaddUzPEoqvZN50KTv6u2qtxEcCvWGKzBfkYF9Zx2vypyEVppuXeugJxFfdVdzGEsnoW6R9wkad6EW1doC9xOl2ACDrFbrUa/zEZNq7j1/9gZ1WODFTLnLjFEeZzW62ubkq7k8cva0agg+yZkrpDtsdQsWiQvxLFrIuil0i2MApc6NghZQ28XaogmLCc53PdXg7kdtMtcZ18mjOUDP+3yEnN0r0T4E8bEj+F3GnGKY4dEjkmH1cWuVYkJEHR/FADc1xe8AvV4eW3+YAG59x4/dvO7+YfWieEFmwS3XbjA1Z+g==,keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/GCM/NoPadding,authenticationTagLength:128,iterations:2048,passwordLength:6,encryptedPassword:0+q7LXdyYOfVvCVmaI5hdj55uWxG9w==";
const JAVA_SHA1: &str = "initializationVector:JhQdouJXm5eV0LK9VsFVnw==,keyLength:192,salt:Uc8EY6kSBKNUYYjgnR2F1HeMC74/hTrISgKAbtfR4qP6GjJxdbHeGnmShenAMI5D9PKxaU2ISa4qF22vaMf7rybc1FzQRUOwb4v6nuDZ3rANQV1KhBKIwYDXwHOEs+KLlhpSeDbK59Fj9ptsC/03noGUxKPcFH5Cw1Muq6rFQOa2aIx8CRkwlyQsdxi6uRmgESd98yPWuQ6bvyMIxR23HMKFNLSJPEO8LkjyAaQm1BsXBI1kK+19vwSVXr7gf3Blrc8ETCjMM3c6qPSfB6Qsvus9r2hglQLZBXuSEBYUw6wtM7mOnwUbs+16gO6i39zUiQ4MZzbp/HR0B5+DUQMYxw==,keyFactoryAlgorithm:PBKDF2WithHmacSHA1,cipherAlgorithm:AES/CBC/PKCS5Padding,iterations:1024,passwordLength:7,encryptedPassword:zOSgQLckf1Zxy0MkLhsBtw==";

fn encoder() -> PasswordEncoder {
    PasswordEncoder::new(
        "s3cret",
        None,
        DEFAULT_CIPHER,
        DEFAULT_KEY_LENGTH,
        DEFAULT_ITERATIONS,
    )
    .unwrap()
}

/// A deterministic byte source: 1, 2, 3, …
fn counter() -> impl FnMut(&mut [u8]) {
    let mut n = 0u8;
    move |buf: &mut [u8]| {
        for b in buf {
            n = n.wrapping_add(1);
            *b = n;
        }
    }
}

#[test]
fn values_written_by_kafka_decode() {
    let e = encoder();
    assert_eq!(e.decode(JAVA_CBC).unwrap(), "pässwörd-😀");
    assert_eq!(e.decode(JAVA_GCM).unwrap(), "gcm-pw");
    assert_eq!(e.decode(JAVA_SHA1).unwrap(), "sha1-pw");
}

#[test]
fn another_secret_does_not_decode() {
    let other = PasswordEncoder::new("wrong", None, DEFAULT_CIPHER, 128, 4096).unwrap();
    for v in [JAVA_CBC, JAVA_GCM, JAVA_SHA1] {
        let err = other.decode(v).unwrap_err();
        assert!(err.starts_with("Password could not be decoded"), "{err}");
    }
}

#[test]
fn encode_writes_kafkas_fields_and_decodes() {
    let e = encoder();
    let v = e.encode("pässwörd-😀", &mut counter()).unwrap();
    let map = parse_csv_map(&v);
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            CIPHER_ALGORITHM,
            ENCRYPTED_PASSWORD,
            INITIALIZATION_VECTOR,
            ITERATIONS,
            KEY_FACTORY_ALGORITHM,
            KEY_LENGTH,
            PASSWORD_LENGTH,
            SALT
        ]
    );
    assert_eq!(map[KEY_FACTORY_ALGORITHM], "PBKDF2WithHmacSHA512");
    assert_eq!(map[CIPHER_ALGORITHM], "AES/CBC/PKCS5Padding");
    assert_eq!(map[KEY_LENGTH], "128");
    assert_eq!(map[ITERATIONS], "4096");
    // Java's String.length(): the emoji is two UTF-16 units.
    assert_eq!(map[PASSWORD_LENGTH], "11");
    assert_eq!(STANDARD.decode(&map[SALT]).unwrap().len(), 256);
    assert_eq!(
        STANDARD.decode(&map[INITIALIZATION_VECTOR]).unwrap().len(),
        16
    );
    // 14 UTF-8 bytes + PKCS#5 padding = one 16-byte block.
    assert_eq!(STANDARD.decode(&map[ENCRYPTED_PASSWORD]).unwrap().len(), 16);
    assert_eq!(e.decode(&v).unwrap(), "pässwörd-😀");
    // Deterministic given the random bytes; different bytes, different value.
    assert_eq!(e.encode("pässwörd-😀", &mut counter()).unwrap(), v);
    let mut ones = |b: &mut [u8]| b.fill(1);
    assert_ne!(e.encode("pässwörd-😀", &mut ones).unwrap(), v);
}

#[test]
fn gcm_and_other_key_lengths_round_trip() {
    for (cipher, bits, kf) in [
        ("AES/GCM/NoPadding", 128, None),
        ("AES/GCM/NoPadding", 256, Some("PBKDF2WithHmacSHA256")),
        ("AES/CBC/PKCS5Padding", 192, Some("PBKDF2WithHmacSHA1")),
        ("AES/CBC/PKCS5Padding", 256, None),
    ] {
        let e = PasswordEncoder::new("k", kf, cipher, bits, 1024).unwrap();
        let v = e.encode("", &mut counter()).unwrap();
        assert_eq!(e.decode(&v).unwrap(), "", "{cipher} {bits}");
        let v = e.encode("a,b:c", &mut counter()).unwrap();
        assert_eq!(e.decode(&v).unwrap(), "a,b:c", "{cipher} {bits}");
        let map = parse_csv_map(&v);
        if cipher.contains("GCM") {
            assert_eq!(map[AUTHENTICATION_TAG_LENGTH], "128");
            assert_eq!(
                STANDARD.decode(&map[INITIALIZATION_VECTOR]).unwrap().len(),
                12
            );
        } else {
            assert!(!map.contains_key(AUTHENTICATION_TAG_LENGTH));
        }
    }
}

#[test]
fn decoding_uses_the_parameters_in_the_value() {
    // An encoder configured for GCM/256/SHA1 still decodes Kafka's CBC default.
    let e = PasswordEncoder::new(
        "s3cret",
        Some("PBKDF2WithHmacSHA1"),
        "AES/GCM/NoPadding",
        256,
        2000,
    )
    .unwrap();
    assert_eq!(e.decode(JAVA_CBC).unwrap(), "pässwörd-😀");
}

#[test]
fn a_tampered_value_is_refused() {
    let e = encoder();
    let length = JAVA_CBC.replace("passwordLength:11", "passwordLength:10");
    assert_eq!(
        e.decode(&length).unwrap_err(),
        "Password could not be decoded, sanity check of length failed"
    );
    for (from, to) in [
        ("keyLength:128", "keyLength:100"),
        ("iterations:4096", "iterations:x"),
    ] {
        assert!(e.decode(&JAVA_CBC.replace(from, to)).is_err(), "{to}");
    }
    // One bit of the GCM ciphertext flipped: the tag no longer matches.
    let mut map = parse_csv_map(JAVA_GCM);
    let mut ct = STANDARD.decode(&map[ENCRYPTED_PASSWORD]).unwrap();
    ct[0] ^= 1;
    map.insert(ENCRYPTED_PASSWORD.into(), STANDARD.encode(ct));
    let gcm: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    let gcm = gcm.join(",");
    assert_eq!(e.decode(&JAVA_GCM.replace(' ', "")).unwrap(), "gcm-pw");
    assert_eq!(e.decode(&gcm).unwrap_err(), "Password could not be decoded");
    assert!(e.decode("").is_err());
    assert!(e.decode("garbage").is_err());
}

#[test]
fn unsupported_settings_are_named() {
    let err = PasswordEncoder::new("k", Some("PBKDF2WithHmacMD5"), DEFAULT_CIPHER, 128, 4096)
        .unwrap_err();
    assert!(err.contains("PBKDF2WithHmacMD5"), "{err}");
    let err = PasswordEncoder::new("k", None, "DES/CBC/PKCS5Padding", 128, 4096).unwrap_err();
    assert!(err.contains("DES/CBC/PKCS5Padding"), "{err}");
    let err = PasswordEncoder::new("k", None, DEFAULT_CIPHER, 64, 4096).unwrap_err();
    assert!(err.contains("64"), "{err}");
}

#[test]
fn csv_map_as_kafkas_csv() {
    let m = parse_csv_map(" a : 1 , b:x:2,c:");
    assert_eq!(m["a"], "1");
    assert_eq!(m["b:x"], "2");
    assert_eq!(m["c"], "");
}

#[test]
fn a_password_is_hidden() {
    assert_eq!(format!("{:?}", Password("x".into())), "[hidden]");
    assert_eq!(Password("x".into()).show_value(), None);
    assert!(!format!("{:?}", encoder()).contains("s3cret"));
}

#[test]
fn the_keys_are_server_config_keys() {
    let props = "password.encoder.secret=s3cret\npassword.encoder.cipher.algorithm=AES/GCM/NoPadding\npassword.encoder.key.length=256\npassword.encoder.iterations=2048\npassword.encoder.keyfactory.algorithm=PBKDF2WithHmacSHA1\npassword.encoder.old.secret=old";
    let loaded = ServerConfig::from_properties(props, &[]).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let c = loaded.config;
    let secret = c.password_encoder_secret.clone().unwrap();
    let e = from_config(&c, &secret).unwrap();
    let v = e.encode("pw", &mut counter()).unwrap();
    let map = parse_csv_map(&v);
    assert_eq!(map[CIPHER_ALGORITHM], "AES/GCM/NoPadding");
    assert_eq!(map[KEY_LENGTH], "256");
    assert_eq!(map[ITERATIONS], "2048");
    assert_eq!(map[KEY_FACTORY_ALGORITHM], "PBKDF2WithHmacSHA1");
    // The secrets are PASSWORD-type: DescribeConfigs shows no value.
    let kvs = c.key_values();
    let kv = kvs.iter().find(|kv| kv.name == SECRET_CONFIG).unwrap();
    assert_eq!(kv.value, None);
    assert_eq!(kv.config_type, ConfigType::Password);
    assert!(kv.is_set);
}

#[test]
fn bad_encoder_settings_stop_the_start_naming_the_key() {
    for (line, key) in [
        ("password.encoder.key.length=4", KEY_LENGTH_CONFIG),
        ("password.encoder.key.length=100", KEY_LENGTH_CONFIG),
        ("password.encoder.iterations=1000", ITERATIONS_CONFIG),
        (
            "password.encoder.cipher.algorithm=DES/CBC/NoPadding",
            CIPHER_CONFIG,
        ),
        (
            "password.encoder.keyfactory.algorithm=PBKDF2WithHmacMD5",
            KEY_FACTORY_CONFIG,
        ),
    ] {
        let err = ServerConfig::from_properties(line, &[]).unwrap_err();
        assert!(err.to_string().contains(key), "{line}: {err}");
    }
}
