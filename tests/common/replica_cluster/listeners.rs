//! Named listeners of a [`super::Node`] (SECURITY.md §1): the listener
//! clients reach through the node's cuttable link, and optionally an
//! inter-broker listener on a port of its own, advertised directly, with
//! the protocol map and the SSL keys that go with them.

/// One node's listeners; `None` on a node keeps the plain layout
/// (`PLAINTEXT://` behind the link, inter-broker PLAINTEXT).
#[derive(Clone, Debug)]
pub struct Listeners {
    /// Name and protocol of the listener behind the link, e.g.
    /// `("SSL", "SSL")` or `("EXTERNAL", "PLAINTEXT")`; listed first.
    pub client: (String, String),
    /// Name, protocol and port of the inter-broker listener (advertised
    /// as `127.0.0.1:port`), which `inter.broker.listener.name` names — or,
    /// when its name is its protocol's (`SSL`), `security.inter.broker.protocol`
    /// (KafkaConfig: without a name the listener named like the protocol is
    /// the inter-broker one); the client listener is the inter-broker one
    /// when `None`.
    pub internal: Option<(String, String, u16)>,
    /// Further settings (the SSL keys, `ssl.client.auth`, ...).
    pub settings: Vec<String>,
}

/// The settings for `l` on a broker whose client listener listens on
/// `client_port` and is advertised as `advertised` (the link's address).
pub fn settings(l: &Listeners, client_port: u16, advertised: &str) -> Vec<String> {
    let (cname, cproto) = &l.client;
    let mut listeners = format!("{cname}://127.0.0.1:{client_port}");
    let mut adv = format!("{cname}://{advertised}");
    let mut map = format!("{cname}:{cproto}");
    let inter = match &l.internal {
        Some((iname, iproto, port)) => {
            listeners.push_str(&format!(",{iname}://127.0.0.1:{port}"));
            adv.push_str(&format!(",{iname}://127.0.0.1:{port}"));
            map.push_str(&format!(",{iname}:{iproto}"));
            if iname == iproto {
                format!("security.inter.broker.protocol={iproto}")
            } else {
                format!("inter.broker.listener.name={iname}")
            }
        }
        None => format!("inter.broker.listener.name={cname}"),
    };
    let mut out = vec![
        format!("listeners={listeners}"),
        format!("advertised.listeners={adv}"),
        format!("listener.security.protocol.map={map}"),
        inter,
    ];
    out.extend(l.settings.iter().cloned());
    out
}
