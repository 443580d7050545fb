//! Protocol versions and their negotiation in `initialize`: `MAJOR.MINOR`, where a minor version
//! only adds (methods, optional params, result and event fields, event types) and a major
//! version may break. A connection speaks the lower of the client's and the daemon's version
//! of the same major.

use std::fmt;

/// A protocol version, `MAJOR.MINOR` on the wire (e.g. `"1.1"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProtocolVersion {
    pub major: u32,
    pub minor: u32,
}

/// Why `initialize` refuses a client's `protocolVersion`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VersionRefusal {
    /// Not `MAJOR.MINOR` (or a bare `MAJOR`).
    Malformed(String),
    /// Another major version than the daemon's: nothing is promised across majors.
    OtherMajor {
        client: ProtocolVersion,
        daemon: ProtocolVersion,
    },
}

impl ProtocolVersion {
    /// Reads `MAJOR.MINOR`; a bare `MAJOR` means minor 0. Anything else (`1.x`, `1.0.3`,
    /// `v1`, spaces) is `None`.
    pub fn parse(text: &str) -> Option<ProtocolVersion> {
        let (major, minor) = match text.split_once('.') {
            Some((major, minor)) => (major, minor),
            None => (text, "0"),
        };
        Some(ProtocolVersion {
            major: number(major)?,
            minor: number(minor)?,
        })
    }

    /// The version this crate describes ([`crate::PROTOCOL_VERSION`]).
    pub fn current() -> ProtocolVersion {
        ProtocolVersion::parse(crate::PROTOCOL_VERSION)
            .unwrap_or(ProtocolVersion { major: 1, minor: 0 })
    }
}

/// The version a connection speaks when the client sends `client` to a daemon of `daemon`:
/// the lower of the two when the majors agree (an older client gets what it knows, a newer one
/// learns what this daemon lacks), else a refusal.
pub fn negotiate(client: &str, daemon: ProtocolVersion) -> Result<ProtocolVersion, VersionRefusal> {
    let parsed = ProtocolVersion::parse(client)
        .ok_or_else(|| VersionRefusal::Malformed(client.to_owned()))?;
    if parsed.major != daemon.major {
        return Err(VersionRefusal::OtherMajor {
            client: parsed,
            daemon,
        });
    }
    Ok(parsed.min(daemon))
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}.{}", self.major, self.minor)
    }
}

impl fmt::Display for VersionRefusal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionRefusal::Malformed(text) => write!(
                formatter,
                "malformed protocol version {text:?}: send MAJOR.MINOR, e.g. \"{}\"",
                crate::PROTOCOL_VERSION
            ),
            VersionRefusal::OtherMajor { client, daemon } => write!(
                formatter,
                "unsupported protocol version {client}: this daemon speaks {daemon} (any {}.x \
                 works); upgrade the client or the daemon",
                daemon.major
            ),
        }
    }
}

/// Plain decimal digits, no sign, no spaces.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(major: u32, minor: u32) -> ProtocolVersion {
        ProtocolVersion { major, minor }
    }

    #[test]
    fn a_connection_speaks_the_lower_version_of_the_same_major() {
        let daemon = version(1, 1);
        assert_eq!(negotiate("1.0", daemon), Ok(version(1, 0)));
        assert_eq!(negotiate("1.1", daemon), Ok(version(1, 1)));
        assert_eq!(negotiate("1.7", daemon), Ok(version(1, 1)));
        assert_eq!(negotiate("1", daemon), Ok(version(1, 0)));
        assert_eq!(negotiate("1.10", version(1, 9)), Ok(version(1, 9)));
    }

    #[test]
    fn another_major_or_a_malformed_version_is_refused_with_what_to_send() {
        let daemon = version(1, 1);
        let other = negotiate("2.0", daemon).unwrap_err();
        assert_eq!(
            other,
            VersionRefusal::OtherMajor {
                client: version(2, 0),
                daemon
            }
        );
        assert!(
            other.to_string().contains("this daemon speaks 1.1"),
            "{other}"
        );
        for bad in ["", "1.x", "1.0.3", "v1", " 1.0", "1.", ".1", "-1.0", "1.+2"] {
            let refusal = negotiate(bad, daemon).unwrap_err();
            assert_eq!(
                refusal,
                VersionRefusal::Malformed(bad.to_owned()),
                "{bad:?}"
            );
            assert!(refusal.to_string().contains("MAJOR.MINOR"), "{refusal}");
        }
    }

    #[test]
    fn the_current_version_parses() {
        assert_eq!(
            ProtocolVersion::parse(crate::PROTOCOL_VERSION),
            Some(ProtocolVersion::current())
        );
    }
}
