//! Scopes: which ops a call may run (all, read-only, an explicit list, an overlay profile), and
//! why one is refused.

use crate::model::registry::{Kind, OpRecord, Registry};
use std::collections::BTreeSet;

/// Which ops a call may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub name: String,
    /// `None`: every op.
    pub ops: Option<BTreeSet<String>>,
    pub allow_writes: bool,
}

impl Scope {
    /// Every op, reads and writes.
    pub fn all() -> Scope {
        Scope {
            name: "all".into(),
            ops: None,
            allow_writes: true,
        }
    }

    /// Every op, reads only.
    pub fn read_only() -> Scope {
        Scope {
            name: "read_only".into(),
            ops: None,
            allow_writes: false,
        }
    }

    /// An explicit op list.
    pub fn ops(name: impl Into<String>, ops: impl IntoIterator<Item = impl Into<String>>) -> Scope {
        Scope {
            name: name.into(),
            ops: Some(ops.into_iter().map(Into::into).collect()),
            allow_writes: true,
        }
    }

    /// An overlay profile's ops.
    pub fn profile(reg: &Registry, name: &str) -> Option<Scope> {
        let p = reg.profiles.get(name)?;
        Some(Scope::ops(format!("profile {name}"), p.ops.iter().cloned()))
    }

    /// The same scope with writes allowed or not.
    pub fn writes(mut self, allowed: bool) -> Scope {
        self.allow_writes = allowed;
        self
    }

    /// Why the scope refuses an op, if it does.
    pub fn refuses(&self, r: &OpRecord) -> Option<String> {
        if self.ops.as_ref().is_some_and(|ops| !ops.contains(&r.op)) {
            return Some(format!(
                "`{}` is not available in scope `{}`",
                r.op, self.name
            ));
        }
        if r.kind == Kind::Write && !self.allow_writes {
            return Some(format!(
                "`{}` writes, and scope `{}` does not allow writes",
                r.op, self.name
            ));
        }
        None
    }

    pub fn contains(&self, r: &OpRecord) -> bool {
        self.ops.as_ref().is_none_or(|ops| ops.contains(&r.op))
    }

    /// Whether the scope lists `op` (every name when it lists none).
    pub fn contains_op(&self, op: &str) -> bool {
        self.ops.as_ref().is_none_or(|ops| ops.contains(op))
    }
}
