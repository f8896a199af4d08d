use super::*;

fn entity(user: Option<Option<&str>>, client: Option<Option<&str>>) -> QuotaEntity {
    QuotaEntity {
        user: user.map(|n| n.map(str::to_owned)),
        client_id: client.map(|n| n.map(str::to_owned)),
    }
}

fn configs(rows: &[(QuotaEntity, f64)]) -> QuotaConfigs {
    let mut c = QuotaConfigs::default();
    for (e, v) in rows {
        c.entities
            .entry(e.clone())
            .or_default()
            .insert(PRODUCER_BYTE_RATE.into(), *v);
    }
    c
}

#[test]
fn names_are_sanitized_as_kafka_does_and_paths_round_trip() {
    assert_eq!(sanitize("app-1_x.y"), "app-1_x.y");
    assert_eq!(sanitize("a b*c/é"), "a%20b%2Ac%2F%C3%A9");
    assert_eq!(desanitize("a%20b%2Ac%2F%C3%A9").as_deref(), Some("a b*c/é"));
    assert_eq!(desanitize("bad%2"), None);
    for e in [
        entity(Some(Some("alice")), Some(Some("c 1"))),
        entity(Some(None), Some(None)),
        entity(Some(Some("bob")), None),
        entity(None, Some(None)),
        entity(None, Some(Some("prod"))),
    ] {
        let path = e.zk_path().unwrap();
        assert_eq!(QuotaEntity::from_zk_path(&path), Some(e), "{path}");
    }
    assert_eq!(
        entity(Some(None), Some(Some("c"))).zk_path().unwrap(),
        "users/<default>/clients/c"
    );
    assert_eq!(QuotaEntity::from_zk_path("topics/t"), None);
    assert_eq!(entity(None, None).zk_path(), None);
}

#[test]
fn resolution_follows_kafkas_precedence() {
    let c = configs(&[
        (entity(None, Some(None)), 1.0),
        (entity(None, Some(Some("a"))), 2.0),
        (entity(Some(None), None), 3.0),
        (entity(Some(Some("u")), None), 4.0),
        (entity(Some(Some("u")), Some(Some("a"))), 5.0),
    ]);
    let bound = |u: &str, cl: &str| c.resolve(PRODUCER_BYTE_RATE, u, cl).map(|a| a.bound);
    assert_eq!(bound("u", "a"), Some(5.0));
    assert_eq!(bound("u", "b"), Some(4.0));
    assert_eq!(bound("v", "a"), Some(3.0), "default user before client-id");
    let only_clients = configs(&[
        (entity(None, Some(None)), 1.0),
        (entity(None, Some(Some("a"))), 2.0),
    ]);
    let b = |cl: &str| only_clients.resolve(PRODUCER_BYTE_RATE, ANONYMOUS, cl);
    assert_eq!(b("a").unwrap().bound, 2.0);
    assert_eq!(b("a").unwrap().entity, entity(None, Some(Some("a"))));
    assert_eq!(b("z").unwrap().bound, 1.0);
    assert!(only_clients.resolve(CONSUMER_BYTE_RATE, "u", "a").is_none());
    assert!(QuotaConfigs::default()
        .resolve(PRODUCER_BYTE_RATE, "u", "a")
        .is_none());
}

#[test]
fn alter_entries_are_checked() {
    let e = |t: &str, n: Option<&str>| (t.to_owned(), n.map(str::to_owned));
    let set = |k: &str, v: f64| (k.to_owned(), Some(v));
    let ok = validate_alter(&[e(CLIENT_ID, Some("c"))], &[set(PRODUCER_BYTE_RATE, 5e6)]);
    assert_eq!(ok, Ok(entity(None, Some(Some("c")))));
    let code = |ent: &[(String, Option<String>)], ops: &[QuotaOp]| {
        validate_alter(ent, ops).map(|_| ()).map_err(|r| r.0)
    };
    let bad = Err(ErrorCode::INVALID_REQUEST);
    assert_eq!(code(&[e("ip", Some("1.2.3.4"))], &[]), bad);
    assert_eq!(code(&[e(USER, None), e(USER, Some("x"))], &[]), bad);
    assert_eq!(code(&[], &[]), bad);
    assert_eq!(code(&[e(USER, None)], &[set("retention.ms", 1.0)]), bad);
    assert_eq!(code(&[e(USER, None)], &[set(PRODUCER_BYTE_RATE, 1.5)]), bad);
    assert_eq!(
        code(&[e(USER, None)], &[set(CONSUMER_BYTE_RATE, -1.0)]),
        bad
    );
    assert_eq!(
        code(&[e(USER, None)], &[set(REQUEST_PERCENTAGE, 12.5)]),
        Ok(())
    );
    assert_eq!(
        code(
            &[e(USER, Some("u")), e(CLIENT_ID, None)],
            &[(PRODUCER_BYTE_RATE.into(), None)]
        ),
        Ok(())
    );
}

#[test]
fn describe_matches_exact_default_any_and_strict() {
    let c = configs(&[
        (entity(None, Some(None)), 1.0),
        (entity(None, Some(Some("a"))), 2.0),
        (entity(Some(Some("u")), Some(Some("a"))), 5.0),
    ]);
    let names = |comps: &[(&str, Match)], strict: bool| -> Vec<QuotaEntity> {
        let comps: Vec<(String, Match)> = comps
            .iter()
            .map(|(t, m)| (t.to_string(), m.clone()))
            .collect();
        describe(&c, &comps, strict)
            .unwrap()
            .into_iter()
            .map(|(e, _)| e)
            .collect()
    };
    assert_eq!(
        names(&[(CLIENT_ID, Match::Exact("a".into()))], false),
        vec![
            entity(None, Some(Some("a"))),
            entity(Some(Some("u")), Some(Some("a")))
        ]
    );
    assert_eq!(
        names(&[(CLIENT_ID, Match::Exact("a".into()))], true),
        vec![entity(None, Some(Some("a")))]
    );
    assert_eq!(
        names(&[(CLIENT_ID, Match::Default)], false),
        vec![entity(None, Some(None))]
    );
    assert_eq!(names(&[(CLIENT_ID, Match::Any)], true).len(), 2);
    assert_eq!(names(&[(USER, Match::Any)], false).len(), 1);
    assert_eq!(names(&[], false).len(), 3);
    let err = describe(&c, &[("ip".into(), Match::Any)], false).unwrap_err();
    assert_eq!(err.0, ErrorCode::INVALID_REQUEST);
}

#[test]
fn the_rate_reads_a_new_burst_over_ten_seconds_and_throttles_the_excess() {
    let mut r = Rate::default();
    // 5 MB in the first second of a 1 MB/s quota: the window is 10 s at
    // least, so the rate reads 0.5 MB/s and nothing is throttled.
    r.record(5e6, 0);
    assert_eq!(r.window_ms(500), 10_000);
    assert_eq!(throttle_ms(&mut r, 1e6, 500), 0);
    // 20 MB over the window: rate 2 MB/s, twice the bound → wait one
    // window's worth of the excess, (2 − 1) / 1 × 10 s.
    r.record(15e6, 900);
    assert_eq!(throttle_ms(&mut r, 1e6, 1000), 10_000);
    // Samples older than the window expire.
    assert_eq!(throttle_ms(&mut r, 1e6, 60_000), 0);
    assert_eq!(r.rate(60_000), 0.0);
    let mut s = Sensors::default();
    let applied = Applied {
        entity: entity(None, Some(Some("a"))),
        bound: 1e6,
    };
    assert_eq!(s.record(PRODUCER_BYTE_RATE, &applied, 1e6, 0), 0);
    assert!(s.record(PRODUCER_BYTE_RATE, &applied, 20e6, 100) > 0);
    // A refunded request leaves the account as it was.
    let before = s.record(PRODUCER_BYTE_RATE, &applied, 0.0, 100);
    assert!(s.record_or_refund(PRODUCER_BYTE_RATE, &applied, 50e6, 100, true) > before);
    assert_eq!(s.record(PRODUCER_BYTE_RATE, &applied, 0.0, 100), before);
    // Another key is another sensor.
    assert_eq!(s.record(CONSUMER_BYTE_RATE, &applied, 1e6, 100), 0);
}
