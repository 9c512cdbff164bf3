//! Stamp: the registry version, a content hash that changes with any semantic change and with
//! nothing else (not file names, file order or formatting).

use crate::model::canonical::{hashed_frame, write_hashed_op_entry};
use crate::model::registry::{OpRecord, Registry, FORMAT_VERSION, GENERATOR};

/// Ops serialized per job, and jobs per round: a round's texts (about 3 KB an op) are hashed
/// and dropped before the next is written, so the canonical text is never held whole.
const OPS_PER_JOB: usize = 64;
const JOBS_PER_ROUND: usize = 32;

/// `b3:` + the first 16 hex digits of blake3 over the generator, its format version and the
/// fully sorted compact JSON of the registry without its version and without `source` fields.
///
/// The ops' JSON is written on every core, a job of ops at a time, and hashed in op order:
/// the same bytes as writing the registry in one go (a unit test compares them), which was a
/// tenth of a second with one core busy and the other idle in a 10,000-op build.
pub fn registry_version(reg: &Registry) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(format!("{GENERATOR}\0format {FORMAT_VERSION}\0").as_bytes());
    let (before, after) = hashed_frame(reg);
    hasher.update(&before);
    let ops: Vec<(usize, (&String, &OpRecord))> = reg.ops.iter().enumerate().collect();
    let jobs: Vec<&[(usize, (&String, &OpRecord))]> = ops.chunks(OPS_PER_JOB).collect();
    for round in jobs.chunks(JOBS_PER_ROUND) {
        let texts = crate::compiler::parallel::map_in_order(round, |job| {
            let mut text = Vec::with_capacity(job.len() * 4096);
            for &(k, (op, record)) in job.iter() {
                write_hashed_op_entry(&mut text, k == 0, op, record);
            }
            text
        });
        for text in &texts {
            hasher.update(text);
        }
    }
    hasher.update(&after);
    crate::model::canonical::short_digest(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::canonical::{CanonicalRegistry, RegistryForm};

    /// The version as the registry written in one go hashes.
    fn version_in_one_go(reg: &Registry) -> String {
        let mut hasher = blake3::Hasher::new();
        hasher.update(format!("{GENERATOR}\0format {FORMAT_VERSION}\0").as_bytes());
        let canonical = CanonicalRegistry {
            registry: reg,
            form: RegistryForm::Hashed,
            spans: None,
            without_ops: false,
        };
        crate::model::canonical::hash_json(&mut hasher, &canonical);
        crate::model::canonical::short_digest(hasher.finalize())
    }

    /// Written op by op on every core, the version is the one-go form's, on every repo catalog
    /// and both fleets (each more than a round of jobs), on a registry with ops cut down to one
    /// and to none, and after a header field that holds the text `"ops":{}` changes.
    #[test]
    fn the_version_written_op_by_op_is_the_one_go_version() {
        for dir in crate::compiler::repo_and_fleet_catalogs() {
            let mut reg = crate::compiler::compile_repo_catalog(dir);
            assert_eq!(registry_version(&reg), version_in_one_go(&reg), "{dir}");
            assert_eq!(registry_version(&reg), reg.registry_version, "{dir}");
            reg.description = Some("a header with \"ops\":{} in it".into());
            assert_eq!(registry_version(&reg), version_in_one_go(&reg), "{dir}");
            let first = reg.ops.keys().next().cloned();
            reg.ops.retain(|k, _| Some(k) == first.as_ref());
            assert_eq!(registry_version(&reg), version_in_one_go(&reg), "{dir}");
            reg.ops.clear();
            assert_eq!(registry_version(&reg), version_in_one_go(&reg), "{dir}");
        }
    }
}
