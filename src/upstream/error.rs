//! Why a session with an upstream failed, and what of it may be shown to whom.

use super::MAX_MESSAGE_BYTES;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("upstream `{name}`: cannot start `{command}`: {source}")]
    Spawn {
        name: String,
        command: String,
        source: std::io::Error,
    },
    #[error("upstream `{name}` needs the environment variable `{var}`, which is not set")]
    MissingEnv { name: String, var: String },
    #[error("upstream `{name}` has neither a `command` nor a `url`")]
    NoTransport { name: String },
    #[error("upstream `{name}` did not answer {what} within {} ms", .limit.as_millis())]
    Timeout {
        name: String,
        what: String,
        limit: Duration,
        stderr: String,
    },
    #[error("upstream `{name}` sent a message over {} MiB during {what}; its session was ended", MAX_MESSAGE_BYTES >> 20)]
    TooLarge { name: String, what: String },
    #[error("upstream `{name}` answered {what} with something that is not its result (a malformed MCP message); its session is kept")]
    Malformed { name: String, what: String },
    #[error("upstream `{name}` failed during {what}: {reason}")]
    Failed {
        name: String,
        what: String,
        reason: String,
        stderr: String,
    },
}

impl UpstreamError {
    /// A timeout (as opposed to a server that is gone or broken).
    pub fn is_timeout(&self) -> bool {
        matches!(self, UpstreamError::Timeout { .. })
    }

    /// A message over [`MAX_MESSAGE_BYTES`].
    pub fn is_too_large(&self) -> bool {
        matches!(self, UpstreamError::TooLarge { .. })
    }

    /// An answer that is no result of the request (the server itself is alive).
    pub fn is_malformed(&self) -> bool {
        matches!(self, UpstreamError::Malformed { .. })
    }

    /// The server's stderr tail, if this error kept one.
    pub fn stderr(&self) -> &str {
        match self {
            UpstreamError::Timeout { stderr, .. } | UpstreamError::Failed { stderr, .. } => {
                stderr.trim()
            }
            _ => "",
        }
    }

    /// The message with the end of the server's stderr, for the operator's own terminal or log
    /// only. The plain message (`Display`) never carries it: a server's stderr holds whatever it
    /// printed (tokens, connection strings), so it must not travel to a client.
    pub fn with_stderr(&self) -> String {
        format!("{self}{}", stderr_note(self.stderr()))
    }
}

fn stderr_note(stderr: &str) -> String {
    let s = stderr.trim();
    if s.is_empty() {
        String::new()
    } else {
        format!(
            "; its stderr ended with:\n{}",
            crate::model::diag::escape_controls(s)
        )
    }
}
