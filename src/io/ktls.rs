//! `[io]` Kernel TLS (Linux `CONFIG_TLS`): whether the kernel can take a
//! TLS session's record layer after the handshake, so that a fetch over
//! TLS could keep `sendfile`. The probe reads
//! `/proc/sys/net/ipv4/tcp_available_ulp`, which lists `tls` once the
//! `tls` module is available. Where it is not (the hosts these tests run
//! on have `CONFIG_TLS` unset), records are encrypted in user space
//! (`server::tls_conn`): that is the path connections take today; the
//! hand-off of the session keys (`TCP_ULP` "tls" + `TLS_TX`/`TLS_RX`) is
//! not implemented, so the probe decides only what the log says.

/// Where the kernel lists its upper-layer protocols.
pub const AVAILABLE_ULP: &str = "/proc/sys/net/ipv4/tcp_available_ulp";

/// `[pure]` Whether the contents of `tcp_available_ulp` list `tls`.
pub fn lists_tls(available_ulp: &str) -> bool {
    available_ulp.split_whitespace().any(|ulp| ulp == "tls")
}

/// The record path TLS connections take on this host, as the start log
/// names it for each SSL listener.
pub fn record_path() -> &'static str {
    match std::fs::read_to_string(AVAILABLE_ULP) {
        Ok(ulps) if lists_tls(&ulps) => {
            "kernel TLS available (tcp_available_ulp lists tls), not used yet: records are \
             encrypted in user space"
        }
        Ok(_) => {
            "kernel TLS unavailable (tcp_available_ulp has no tls): records are encrypted in \
             user space"
        }
        Err(_) => {
            "kernel TLS unavailable (no tcp_available_ulp): records are encrypted in user space"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_is_one_of_the_listed_ulps() {
        assert!(lists_tls("espintcp mptcp tls\n"));
        assert!(lists_tls("tls"));
        assert!(!lists_tls("espintcp mptcp\n"));
        assert!(!lists_tls("ktls tls_x\n"));
        assert!(!lists_tls(""));
    }
}
