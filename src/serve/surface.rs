//! Which generated surface `serve` lists (`gateway`, `direct`, `profile:NAME`), found in the
//! build folder and read as MCP tools; a surface of another build than the registry is refused.

use super::ServeError;
use rmcp::model::Tool;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Which generated surface the server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SurfaceChoice {
    Gateway,
    Direct,
    Profile(String),
}

impl std::str::FromStr for SurfaceChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "gateway" => Ok(SurfaceChoice::Gateway),
            "direct" => Ok(SurfaceChoice::Direct),
            _ => match s.strip_prefix("profile:") {
                Some(p) if !p.is_empty() => Ok(SurfaceChoice::Profile(p.to_string())),
                _ => Err(format!(
                    "`{s}` is not a surface; use gateway, direct or profile:NAME"
                )),
            },
        }
    }
}

/// The surface's file; a profile is known to exist (its scope was resolved first).
pub(super) fn surface_file(dir: &Path, surface: &SurfaceChoice) -> Result<PathBuf, ServeError> {
    let surfaces = dir.join("surfaces");
    Ok(match surface {
        SurfaceChoice::Gateway => surfaces.join("gateway.json"),
        SurfaceChoice::Direct => surfaces.join("direct.json"),
        SurfaceChoice::Profile(name) => {
            // Long names get hashed file names; the header names the profile either way.
            let want = format!("profile {name}");
            let folder = surfaces.join("profiles");
            let entries = std::fs::read_dir(&folder).map_err(|e| ServeError::Surface {
                path: folder.display().to_string(),
                message: e.to_string(),
            })?;
            let mut paths: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            paths
                .into_iter()
                .find(|p| {
                    std::fs::read(p)
                        .ok()
                        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                        .is_some_and(|v| v.get("surface").and_then(Value::as_str) == Some(&want))
                })
                .ok_or_else(|| ServeError::Surface {
                    path: folder.display().to_string(),
                    message: format!(
                        "no surface file for the profile `{name}`; run `toolreg build`"
                    ),
                })?
        }
    })
}

/// The surface's tools as MCP tools: name, description and `inputSchema` = the parameters. A
/// surface of another build than the registry (`registry_version` differs) is refused: its tools
/// would be listed and then fail as unknown ops.
pub(super) fn read_surface(path: &Path, registry_version: &str) -> Result<Vec<Tool>, ServeError> {
    let err = |message: String| ServeError::Surface {
        path: path.display().to_string(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| err(e.to_string()))?;
    match doc.get("registry_version").and_then(Value::as_str) {
        Some(v) if v == registry_version => {}
        found => {
            return Err(err(format!(
                "it was built for registry {}, but registry.json is {registry_version}: the folder mixes two builds; run `toolreg build` (or `toolreg check`) on it",
                found.unwrap_or("(none)")
            )))
        }
    }
    let tools = doc
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| err("has no `tools` array".into()))?;
    tools
        .iter()
        .map(|t| {
            let f = t.get("function").unwrap_or(t);
            let tool = json!({
                "name": f.get("name"),
                "description": f.get("description"),
                "inputSchema": f.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
            serde_json::from_value::<Tool>(tool).map_err(|e| err(format!("a tool does not fit MCP: {e}")))
        })
        .collect()
}
