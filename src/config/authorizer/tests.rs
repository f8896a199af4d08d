//! `[pure]` Unit tests of `config::authorizer`.

use super::*;

fn load(text: &str) -> Result<ServerConfig, ConfigError> {
    ServerConfig::from_properties(text, &[]).map(|l| l.config)
}

fn refused_key(text: &str) -> String {
    match load(text) {
        Err(ConfigError::InvalidValue { key, .. }) => key,
        other => panic!("{text}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_authorizer_shardlog_does_not_implement_stops_the_start() {
    for class in [
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "com.example.MyAuthorizer",
    ] {
        assert_eq!(
            refused_key(&format!("authorizer.class.name={class}")),
            "authorizer.class.name"
        );
    }
    let c = load("authorizer.class.name=").unwrap();
    assert!(!c.acl_authorizer_enabled());
    assert!(!c.authorizer_policy().enabled);
}

#[test]
fn kafkas_acl_authorizer_is_implemented() {
    let c = load(&format!(
        "authorizer.class.name={ACL_AUTHORIZER}\nsuper.users=User:admin\nallow.everyone.if.no.acl.found=true"
    ))
    .unwrap();
    let p = c.authorizer_policy();
    assert!(p.enabled && p.allow_everyone_if_no_acl_found);
    assert!(p.is_super_user("User:admin"));
    assert!(!p.is_super_user("User:Admin"));
}

#[test]
fn only_kafkas_default_principal_builder_is_accepted() {
    assert_eq!(
        refused_key("principal.builder.class=com.example.Builder"),
        "principal.builder.class"
    );
    assert_eq!(
        refused_key("listener.name.ssl.principal.builder.class=com.example.Builder"),
        "listener.name.ssl.principal.builder.class"
    );
    let text = format!(
        "principal.builder.class={DEFAULT_PRINCIPAL_BUILDER}\n\
         listener.name.ssl.principal.builder.class={DEFAULT_PRINCIPAL_BUILDER}"
    );
    let loaded = ServerConfig::from_properties(&text, &[]).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn authorizer_properties_are_recognised_not_ignored() {
    let loaded = ServerConfig::from_properties(
        "super.users=User:admin; User:CN=broker,O=x ;\nallow.everyone.if.no.acl.found=true",
        &[],
    )
    .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.config.super_user_list(),
        vec!["User:admin".to_string(), "User:CN=broker,O=x".into()]
    );
    assert!(loaded.config.allow_everyone_if_no_acl_found);
    assert_eq!(
        refused_key("allow.everyone.if.no.acl.found=maybe"),
        "allow.everyone.if.no.acl.found"
    );
}
