//! `[pure]` Who the load generator logs in as over SASL (`--sasl-mechanism`,
//! `--sasl-username`, `--sasl-password`, librdkafka's `sasl.mechanism`,
//! `sasl.username`, `sasl.password`); `loadgen::sasl` runs the exchange.

use anyhow::{anyhow, bail, Result};

use crate::config::sasl::SaslMechanism;

/// Who the load generator logs in as.
#[derive(Clone)]
pub struct SaslLogin {
    pub mechanism: SaslMechanism,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    /// The password is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} as {:?}", self.mechanism.name(), self.username)
    }
}

impl SaslLogin {
    /// `--sasl-mechanism` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; librdkafka's
    /// default is GSSAPI, which the load generator does not speak, so the
    /// flag is required) with the user name and password.
    pub fn new(
        mechanism: Option<&str>,
        username: Option<&str>,
        password: Option<&str>,
    ) -> Result<Self> {
        let name = mechanism.ok_or_else(|| {
            anyhow!("SASL needs --sasl-mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
        })?;
        let mechanism = match SaslMechanism::from_name(&name.to_ascii_uppercase()) {
            Some(SaslMechanism::OAuthBearer) | None => bail!(
                "--sasl-mechanism {name:?}: the load generator speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"
            ),
            Some(m) => m,
        };
        let (Some(username), Some(password)) = (username, password) else {
            bail!("SASL needs --sasl-username and --sasl-password");
        };
        Ok(Self {
            mechanism,
            username: username.to_owned(),
            password: password.to_owned(),
        })
    }
}
