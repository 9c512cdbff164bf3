//! Per-turn tool selection (seed 004): which ops to offer the model for one user message.
//!
//! Clusters from the overlay are chosen by trigger phrases in the message and by context
//! defaults; when no cluster is chosen, search picks the ops. Every choice says why. A telemetry
//! event records ops offered against ops used, so a team can measure misses.

use super::{Gateway, Scope};
use serde::{Deserialize, Serialize};

/// Why a cluster or op was offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Reason {
    /// A trigger phrase appeared in the message.
    Trigger { phrase: String },
    /// The cluster is a default of the conversation's context.
    Context { context: String },
    /// Search over the message ranked the op.
    Search { rank: usize },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterChoice {
    pub cluster: String,
    pub reasons: Vec<Reason>,
}

/// The ops to offer for one turn, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// Every op offered, sorted.
    pub ops: Vec<String>,
    pub clusters: Vec<ClusterChoice>,
    /// Ops added by the search fallback, best first.
    pub searched: Vec<String>,
}

/// The conversation around a message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectContext {
    /// e.g. `project`, `global`: clusters listing it are always offered.
    pub context: Option<String>,
    /// How many ops the search fallback adds (default 5).
    pub fallback_limit: Option<usize>,
}

/// Whether `phrase` occurs in `text` as whole words.
fn contains_words(text: &str, phrase: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(phrase).any(|(i, _)| {
        let before = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let end = i + phrase.len();
        let after = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
        before && after
    })
}

impl Gateway {
    /// Chooses the ops to offer for a message, within a scope.
    pub fn select(&self, message: &str, ctx: &SelectContext, scope: &Scope) -> Selection {
        let reg = self.registry();
        let text = message.to_lowercase();
        let mut clusters = Vec::new();
        let mut ops: Vec<String> = Vec::new();
        for (name, c) in &reg.clusters {
            let mut reasons: Vec<Reason> = c
                .triggers
                .iter()
                .filter(|t| contains_words(&text, t))
                .map(|t| Reason::Trigger { phrase: t.clone() })
                .collect();
            if let Some(context) = ctx.context.as_ref().filter(|x| c.contexts.contains(x)) {
                reasons.push(Reason::Context {
                    context: context.clone(),
                });
            }
            if !reasons.is_empty() {
                ops.extend(
                    c.ops
                        .iter()
                        .filter(|o| reg.ops.get(*o).is_some_and(|r| scope.refuses(r).is_none()))
                        .cloned(),
                );
                clusters.push(ClusterChoice {
                    cluster: name.clone(),
                    reasons,
                });
            }
        }
        let triggered = clusters.iter().any(|c| {
            c.reasons
                .iter()
                .any(|r| matches!(r, Reason::Trigger { .. }))
        });
        let mut searched = Vec::new();
        if !triggered {
            let limit = ctx.fallback_limit.unwrap_or(5);
            for (op, _) in self
                .index()
                .rank(reg, message, &|r| !r.hidden && scope.refuses(r).is_none())
                .into_iter()
                .take(limit)
            {
                if !ops.contains(&op) {
                    searched.push(op.clone());
                    ops.push(op);
                }
            }
        }
        ops.sort();
        ops.dedup();
        Selection {
            ops,
            clusters,
            searched,
        }
    }
}

/// One turn's telemetry: what was offered, what the model used, and the misses (used but not
/// offered: the selection failed) — serialize it to your event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnTelemetry {
    pub turn_id: String,
    pub registry_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    pub offered: Vec<String>,
    pub used: Vec<String>,
    /// Used without having been offered.
    pub missed: Vec<String>,
    /// How many offered ops went unused.
    pub unused: usize,
}

impl TurnTelemetry {
    pub fn record(
        turn_id: impl Into<String>,
        registry_version: &str,
        context: Option<&str>,
        selection: &Selection,
        used: &[String],
    ) -> Self {
        let mut used: Vec<String> = used.to_vec();
        used.sort();
        used.dedup();
        let missed = used
            .iter()
            .filter(|u| !selection.ops.contains(u))
            .cloned()
            .collect();
        let unused = selection.ops.iter().filter(|o| !used.contains(o)).count();
        TurnTelemetry {
            turn_id: turn_id.into(),
            registry_version: registry_version.to_string(),
            context: context.map(str::to_owned),
            offered: selection.ops.clone(),
            used,
            missed,
            unused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::contains_words;

    #[test]
    fn whole_words_only() {
        assert!(contains_words("add a task please", "task"));
        assert!(contains_words("remind me to call", "remind me"));
        assert!(!contains_words("multitasking", "task"));
    }
}
