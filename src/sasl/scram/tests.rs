//! `[pure]` SCRAM test vectors: RFC 7677 §3 (SCRAM-SHA-256) and the
//! credential strings SECURITY.md §4.1 computed by Kafka's ScramFormatter
//! rules.

use super::*;

fn rfc7677_credential() -> ScramCredential {
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    credential(SaslMechanism::ScramSha256, "pencil", &salt, 4096)
}

#[test]
fn the_rfc_7677_exchange_proves_the_client_and_signs_the_server() {
    let cred = rfc7677_credential();
    let mut server = ScramServer::new(SaslMechanism::ScramSha256);
    let lookup = |u: &str| (u == "user").then(|| cred.clone());
    let step = server.on_token(
        b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        &lookup,
        "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    );
    let MechStep::Challenge(first) = step else {
        panic!("{step:?}")
    };
    assert_eq!(
        String::from_utf8(first).unwrap(),
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let step = server.on_token(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        &lookup,
        "unused",
    );
    match step {
        MechStep::Complete {
            response,
            authorization_id,
        } => {
            assert_eq!(
                String::from_utf8(response).unwrap(),
                "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
            );
            assert_eq!(authorization_id, "user");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wrong_proof_a_wrong_nonce_or_an_unknown_user_fail_without_telling_why() {
    let cred = rfc7677_credential();
    let lookup = |u: &str| (u == "user").then(|| cred.clone());
    let nonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    for last in [
        // One bit of the proof flipped.
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVU=",
        // Another server nonce.
        "c=biws,r=rOprNGfwEbeRWgbNEkqOxxx,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        "not a message",
    ] {
        let mut server = ScramServer::new(SaslMechanism::ScramSha256);
        assert!(matches!(
            server.on_token(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", &lookup, nonce),
            MechStep::Challenge(_)
        ));
        let step = server.on_token(last.as_bytes(), &lookup, nonce);
        assert!(
            matches!(step, MechStep::Failed { client_message: None, .. }),
            "{last}: {step:?}"
        );
    }
    let mut server = ScramServer::new(SaslMechanism::ScramSha256);
    let step = server.on_token(b"n,,n=bob,r=abc", &lookup, nonce);
    assert!(matches!(
        step,
        MechStep::Failed {
            client_message: None,
            ..
        }
    ));
    let mut server = ScramServer::new(SaslMechanism::ScramSha256);
    let step = server.on_token(b"n,a=bob,n=user,r=abc", &lookup, nonce);
    assert!(
        matches!(&step, MechStep::Failed { client_message: Some(m), .. } if m.contains("authorization id")),
        "{step:?}"
    );
    // Channel binding (gs2 flag p / y) is not accepted.
    let mut server = ScramServer::new(SaslMechanism::ScramSha256);
    let step = server.on_token(b"p=tls-unique,,n=user,r=abc", &lookup, nonce);
    assert!(matches!(step, MechStep::Failed { .. }));
    // Too few iterations stored.
    let weak = credential(SaslMechanism::ScramSha256, "pencil", b"salt", 4095);
    let weak_lookup = |_: &str| Some(weak.clone());
    let mut server = ScramServer::new(SaslMechanism::ScramSha256);
    let step = server.on_token(b"n,,n=user,r=abc", &weak_lookup, nonce);
    assert!(matches!(step, MechStep::Failed { .. }));
}

#[test]
fn credentials_match_kafkas_scram_formatter_and_its_string_form() {
    let salt = b"1xq8y3o5tj0zvd8uxfsnq8qk8c";
    let c256 = credential(SaslMechanism::ScramSha256, "alice-secret", salt, 4096);
    assert_eq!(
        c256.to_kafka_string(),
        "salt=MXhxOHkzbzV0ajB6dmQ4dXhmc25xOHFrOGM=,stored_key=9rXAm+KqPMiVjqkqjEmbifUwbwYJOcATv8U+zxtKiJc=,server_key=j7rzQchA7577WNuww3al2EipcZ0gXqLT05KA13S2hyc=,iterations=4096"
    );
    let c512 = credential(SaslMechanism::ScramSha512, "alice-secret", salt, 4096);
    assert_eq!(
        c512.to_kafka_string(),
        "salt=MXhxOHkzbzV0ajB6dmQ4dXhmc25xOHFrOGM=,stored_key=Qo1d/ld6JiE/arnEtNB8P7tPYV8QYKVv1/RdnhdKtHvaHsDbGCVFfGOo7DBXNvbM3wGn8JK9JogpYkTMrkjGEg==,server_key=2mZYgdoaWEoP6tLQDBcvhVtChqHEUveJWzgHRLXyF8YQJFRkJo1uQmKXY3SbYx1/+dMTtRebwdVZ2VL85Efuag==,iterations=4096"
    );
    assert_eq!(ScramCredential::parse(&c512.to_kafka_string()), Ok(c512));
    for bad in [
        "salt=AA==,stored_key=AA==,server_key=AA==",
        "salt=AA==,stored_key=AA==,server_key=AA==,iterations=x",
        "salt=AA==,stored_key=AA==,server_key=AA==,iterations=4096,extra=1",
        "salt=!!,stored_key=AA==,server_key=AA==,iterations=4096",
    ] {
        assert!(ScramCredential::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn client_first_messages_parse_as_kafkas_pattern_reads_them() {
    let m = ClientFirst::parse("n,a=al=2Cice,m=ext,n=al=3Dice,r=abc,tokenauth=true").unwrap();
    assert_eq!(m.authzid, "al=2Cice");
    assert_eq!(m.saslname, "al=3Dice");
    assert_eq!(m.bare(), "n=al=3Dice,r=abc,tokenauth=true");
    assert_eq!(unescape_saslname("al=3Dice=2C").as_deref(), Some("al=ice,"));
    for bad in [
        "",
        "n,,r=abc",
        "n,,n=a=b,r=abc",
        "n,,n=a,r=",
        "y,,n=a,r=b",
        "n,,n=a,r=b,1x=2",
    ] {
        assert!(ClientFirst::parse(bad).is_none(), "{bad}");
    }
}

#[test]
fn arbitrary_tokens_never_panic() {
    let cred = rfc7677_credential();
    let lookup = |_: &str| Some(cred.clone());
    for token in [
        &b"\xff\xfe"[..],
        b"n,,n=user,r=a",
        b",,,,",
        b"c=,r=,p=",
        b"n,",
    ] {
        let mut server = ScramServer::new(SaslMechanism::ScramSha512);
        let _ = server.on_token(token, &lookup, "n");
        let _ = server.on_token(token, &lookup, "n");
        let _ = server.on_token(token, &lookup, "n");
    }
}
