//! `[pure]` Named listeners, as Kafka 3.9 in ZooKeeper mode reads them:
//! `listeners`, `advertised.listeners`, `listener.security.protocol.map`,
//! `inter.broker.listener.name` / `security.inter.broker.protocol` and
//! `control.plane.listener.name` (KIP-291).
//!
//! Sources: Kafka's `server/src/main/java/org/apache/kafka/network/SocketServerConfigs.java`
//! (`listenerListToEndPoints`, `URI_PARSE_REGEXP`),
//! `core/src/main/scala/kafka/utils/CoreUtils.scala` (`listenerListToEndPoints`:
//! unique names and ports), `core/src/main/scala/kafka/server/KafkaConfig.scala`
//! (`validateValues`, `effectiveListenerSecurityProtocolMap`,
//! `getInterBrokerListenerNameAndSecurityProtocol`,
//! `getControlPlaneListenerNameAndSecurityProtocol`).

use std::fmt;
use std::str::FromStr;

use super::value::normalised;
use super::{topic, ConfigError, ConfigValue, Listener, ServerConfig};

/// Kafka's `SecurityProtocol` (`clients/.../security/auth/SecurityProtocol.java`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's protocol id (`SecurityProtocol.id`).
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    /// Kafka's protocol name (`SecurityProtocol.name`).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SecurityProtocol {
    type Err = String;

    /// `SecurityProtocol.forName`: the enum name, any case.
    fn from_str(text: &str) -> Result<Self, String> {
        let upper = text.trim().to_uppercase();
        SecurityProtocol::ALL
            .into_iter()
            .find(|p| p.name() == upper)
            .ok_or_else(|| format!("Invalid security protocol `{}`", text.trim()))
    }
}

/// `listener.security.protocol.map`: listener name → protocol, in the
/// order written (Kafka keeps a map; a repeated name keeps its last value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolMap(pub Vec<(String, SecurityProtocol)>);

impl ProtocolMap {
    /// Kafka's default: every protocol under its own name, rendered in
    /// the order of Kafka's Java `HashMap`
    /// (`SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT`).
    pub fn kafka_default() -> Self {
        ProtocolMap(
            [
                SecurityProtocol::SaslSsl,
                SecurityProtocol::Plaintext,
                SecurityProtocol::Ssl,
                SecurityProtocol::SaslPlaintext,
            ]
            .into_iter()
            .map(|p| (p.name().to_owned(), p))
            .collect(),
        )
    }

    /// The protocol of listener `name` (already normalised).
    pub fn get(&self, name: &str) -> Option<SecurityProtocol> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, p)| *p)
    }
}

impl ConfigValue for ProtocolMap {
    /// `CoreUtils.parseCsvMap`: `NAME:PROTOCOL` pairs split at the last
    /// `:`, names normalised (`ListenerName.normalised`), protocols by
    /// `SecurityProtocol.forName`.
    fn parse_value(text: &str) -> Result<Self, String> {
        let mut pairs = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, protocol) = entry
                .rsplit_once(':')
                .ok_or_else(|| format!("{entry:?} is not LISTENER_NAME:SECURITY_PROTOCOL"))?;
            let name = normalised(name.trim());
            if name.is_empty() {
                return Err(format!("{entry:?} has no listener name"));
            }
            pairs.push((name, protocol.parse::<SecurityProtocol>()?));
        }
        Ok(ProtocolMap(pairs))
    }
    fn show_value(&self) -> Option<String> {
        Some(
            self.0
                .iter()
                .map(|(n, p)| format!("{n}:{p}"))
                .collect::<Vec<_>>()
                .join(","),
        )
    }
    fn config_type() -> topic::ConfigType {
        topic::ConfigType::String
    }
}

/// True when `a` and `b` are one IPv4 and one IPv6 address (Kafka's
/// `CoreUtils.validateOneIsIpv4AndOtherIpv6`): they may share a port.
fn one_ipv4_other_ipv6(a: &str, b: &str) -> bool {
    let ipv4 = |h: &str| h.split('.').count() == 4 && h.split('.').all(|p| p.parse::<u8>().is_ok());
    let ipv6 = |h: &str| {
        h.contains(':')
            && h.chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.' || c == '%')
    };
    (ipv4(a) && ipv6(b)) || (ipv6(a) && ipv4(b))
}

fn invalid(key: &str, value: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

fn show(listeners: &[Listener]) -> String {
    ConfigValue::show_value(&listeners.to_vec()).unwrap_or_default()
}

/// `CoreUtils.listenerListToEndPoints`' checks: every name once, and (for
/// `listeners`) every non-zero port once unless one IPv4 and one IPv6
/// address share it; every name must be in the protocol map.
fn check_endpoints(
    key: &str,
    list: &[Listener],
    map: &ProtocolMap,
    distinct_ports: bool,
) -> Result<(), ConfigError> {
    for (i, l) in list.iter().enumerate() {
        if list[..i].iter().any(|o| o.name == l.name) {
            return Err(invalid(
                key,
                show(list),
                format!(
                    "Each listener must have a different name; {} is repeated",
                    l.name
                ),
            ));
        }
        let clash = list[..i]
            .iter()
            .any(|o| l.port != 0 && o.port == l.port && !one_ipv4_other_ipv6(&o.host, &l.host));
        if distinct_ports && clash {
            return Err(invalid(
                key,
                show(list),
                format!(
                    "Each listener must have a different port unless exactly one listener has \
                     an IPv4 address and the other IPv6 address; port {} is repeated",
                    l.port
                ),
            ));
        }
        if map.get(&l.name).is_none() {
            return Err(invalid(
                key,
                show(list),
                format!(
                    "No security protocol defined for listener {} in listener.security.protocol.map",
                    l.name
                ),
            ));
        }
    }
    Ok(())
}

/// `inter.broker.listener.name` and `security.inter.broker.protocol` both
/// set explicitly (Kafka: "Only one of inter.broker.listener.name and
/// security.inter.broker.protocol should be set.").
pub(super) fn refuse_both_inter_broker_keys(
    name_set: bool,
    protocol_set: bool,
) -> Result<(), ConfigError> {
    if name_set && protocol_set {
        return Err(invalid(
            "inter.broker.listener.name",
            "",
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set",
        ));
    }
    Ok(())
}

impl ServerConfig {
    /// Upper-case the listener names given by name
    /// (`inter.broker.listener.name`, `control.plane.listener.name`), as
    /// Kafka's `ListenerName.normalised` does.
    pub(super) fn normalise_listener_names(&mut self) {
        for name in [
            &mut self.inter_broker_listener_name,
            &mut self.control_plane_listener_name,
        ]
        .into_iter()
        .flatten()
        {
            *name = normalised(name);
        }
        self.security_inter_broker_protocol = normalised(&self.security_inter_broker_protocol);
    }

    /// The listener checks of `KafkaConfig.validateValues` (ZooKeeper mode).
    pub(super) fn validate_listeners(&self) -> Result<(), ConfigError> {
        let map = &self.listener_security_protocol_map;
        if self.listeners.is_empty() {
            return Err(invalid("listeners", "", "at least one listener"));
        }
        check_endpoints("listeners", &self.listeners, map, true)?;
        let advertised = self.effective_advertised_listeners();
        check_endpoints("advertised.listeners", advertised, map, false)?;
        if let Some(l) = advertised.iter().find(|l| l.host == "0.0.0.0") {
            return Err(invalid(
                "advertised.listeners",
                l.to_string(),
                "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a \
                 routable IP address.",
            ));
        }
        if let Some(l) = advertised
            .iter()
            .find(|a| !self.listeners.iter().any(|l| l.name == a.name))
        {
            return Err(invalid(
                "advertised.listeners",
                show(advertised),
                format!(
                    "advertised.listeners listener names must be equal to or a subset of the \
                     ones defined in listeners; {} is not",
                    l.name
                ),
            ));
        }
        let names = advertised
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let inter = self.inter_broker_listener();
        let (inter_key, inter_value) = match &self.inter_broker_listener_name {
            Some(name) => ("inter.broker.listener.name", name.clone()),
            None => {
                let p = self
                    .security_inter_broker_protocol
                    .parse::<SecurityProtocol>()
                    .map_err(|e| invalid("security.inter.broker.protocol", inter, e))?;
                ("security.inter.broker.protocol", p.name().to_owned())
            }
        };
        if map.get(&inter_value).is_none() {
            return Err(invalid(
                inter_key,
                inter_value.as_str(),
                format!(
                    "Listener with name {inter_value} not found in listener.security.protocol.map"
                ),
            ));
        }
        if !advertised.iter().any(|l| l.name == inter_value) {
            return Err(invalid(
                inter_key,
                inter_value.as_str(),
                format!(
                    "inter.broker.listener.name must be a listener name defined in \
                     advertised.listeners. The valid options based on currently configured \
                     listeners are {names}"
                ),
            ));
        }
        if let Some(control) = &self.control_plane_listener_name {
            let key = "control.plane.listener.name";
            if map.get(control).is_none() {
                return Err(invalid(
                    key,
                    control.as_str(),
                    format!("Listener with {control} defined in control.plane.listener.name not found in listener.security.protocol.map"),
                ));
            }
            if !advertised.iter().any(|l| &l.name == control) {
                return Err(invalid(
                    key,
                    control.as_str(),
                    format!("control.plane.listener.name must be a listener name defined in advertised.listeners ({names})"),
                ));
            }
            if *control == inter_value {
                return Err(invalid(
                    key,
                    control.as_str(),
                    format!(
                        "control.plane.listener.name, when defined, should have a different \
                         value from the inter broker listener name. Currently they both have \
                         the value {control}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The security protocol of listener `name` from
    /// `listener.security.protocol.map`. Validation made sure every
    /// configured listener is in the map; a name that is not (no listener
    /// of this broker) reads as PLAINTEXT.
    pub fn listener_protocol(&self, name: &str) -> SecurityProtocol {
        self.listener_security_protocol_map
            .get(name)
            .unwrap_or(SecurityProtocol::Plaintext)
    }

    /// `control.plane.listener.name` (KIP-291), if set.
    pub fn control_plane_listener(&self) -> Option<&str> {
        self.control_plane_listener_name.as_deref()
    }

    /// The listener the controller reaches brokers on, and brokers reach
    /// the controller on for AlterPartition (Kafka's
    /// `ControllerChannelManager.addNewBroker`,
    /// `MetadataCacheControllerNodeProvider`): the control-plane listener
    /// if set, else the inter-broker one.
    pub fn controller_listener(&self) -> &str {
        self.control_plane_listener()
            .unwrap_or_else(|| self.inter_broker_listener())
    }
}

#[cfg(test)]
use super::value::parse_listener;

#[cfg(test)]
mod tests;
