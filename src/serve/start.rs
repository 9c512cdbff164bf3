//! Setting a [`Server`] up from the folder `toolreg build` wrote: the registry, help pages and
//! surface, the upstreams' pool and handlers, and the deferred start that answers `tools/list`
//! before the registry is loaded.

use super::call::forward;
use super::surface::{read_surface, surface_file};
use super::{drift, Inner, Pool, ServeError, ServeOptions, Server, SurfaceChoice, View};
use crate::model::lookup::Lookup;
use crate::model::registry::Registry;
use crate::runtime::idempotency::IdempotencyStore;
use crate::runtime::{Gateway, Options, Scope};
use rmcp::model::Tool;
use std::path::Path;
use std::sync::Arc;

impl Server {
    /// Loads `registry.json`, `help.json` and the chosen surface from `dir`, and registers a
    /// forwarding handler for every op an upstream owns. Idempotency keys stay in this process.
    pub fn load(dir: &Path, surface: &SurfaceChoice) -> Result<Server, ServeError> {
        Self::load_with_store(dir, surface, None)
    }

    /// As [`Server::load`], with keys in `store` when given (shared by replicas).
    pub fn load_with_store(
        dir: &Path,
        surface: &SurfaceChoice,
        store: Option<Arc<dyn IdempotencyStore>>,
    ) -> Result<Server, ServeError> {
        let options = ServeOptions {
            store,
            ..ServeOptions::default()
        };
        Self::load_with(dir, surface, options)
    }

    /// As [`Server::load`], with `options`. With the `semantic` feature and `vectors.json` in
    /// `dir`, `tool_search` ranks hybrid; vectors from another model or registry stop the start.
    pub fn load_with(
        dir: &Path,
        surface: &SurfaceChoice,
        options: ServeOptions,
    ) -> Result<Server, ServeError> {
        if crate::model::registry::interrupted_commit(dir) {
            return Err(crate::runtime::GatewayError::Interrupted {
                dir: dir.display().to_string(),
            }
            .into());
        }
        if let Some(lookup) = deferrable(dir) {
            return Self::load_deferred(dir, surface, options, lookup);
        }
        let (reg, help) = crate::runtime::read_dir(dir)?;
        let scope = surface_scope(&reg, surface)?;
        if !reg.upstreams.is_empty() {
            let approvals = match options.approvals {
                Some(a) => a,
                None => crate::trust::Approvals::load_default()?,
            };
            approvals.refuse_unapproved(&reg.upstreams)?;
        }
        let surface_path = surface_file(dir, surface)?;
        let surface_name = file_name(&surface_path);
        let tools = read_surface(&surface_path, &reg.registry_version)?;
        let version = reg.registry_version.clone();
        let owned = upstream_ops(&reg);
        let mut approved: std::collections::BTreeMap<_, std::collections::BTreeMap<_, _>> =
            Default::default();
        for (op, (upstream, tool)) in &owned {
            approved
                .entry(upstream.clone())
                .or_default()
                .insert(tool.clone(), reg.ops[op].pin.clone());
        }
        let pool = Arc::new(Pool::with_metrics(
            reg.upstreams.clone(),
            drift::DriftGate::new(options.drift, approved),
            Arc::clone(&options.observer.metrics),
        ));
        let upstream_of = owned
            .iter()
            .map(|(op, (up, _))| (op.clone(), up.clone()))
            .collect();
        #[cfg(feature = "semantic")]
        let hybrid = crate::runtime::hybrid::Hybrid::beside(dir, &reg, &options.hybrid)
            .map_err(ServeError::Semantic)?;
        let gateway = Gateway::with_options(
            reg,
            help,
            Options {
                scope,
                idempotency_store: options.store,
                ..Options::default()
            },
        )?
        .with_index_file(dir.join(crate::runtime::search::INDEX_FILE));
        #[cfg(feature = "semantic")]
        let gateway = match hybrid {
            Some(h) => gateway.with_hybrid(h),
            None => gateway,
        };
        let mut gateway = gateway;
        for (op, (upstream, tool)) in owned {
            let pool = Arc::clone(&pool);
            gateway
                .handle(&op, move |args| {
                    let (pool, upstream, tool) =
                        (Arc::clone(&pool), upstream.clone(), tool.clone());
                    async move { forward(&pool, &upstream, &tool, args).await }
                })
                .map_err(ServeError::Gateway)?;
        }
        let full = View::whole(tools, gateway.scope().clone());
        Ok(Server {
            inner: Arc::new(Inner {
                access_scopes: gateway.registry().access.keys().cloned().collect(),
                gateway: Arc::new(std::sync::OnceLock::from(gateway)),
                full,
                version,
                surface: surface_name,
                pool,
                observer: options.observer,
                upstream_of,
                list_ttl_ms: options.list_ttl_ms,
                views: Default::default(),
            }),
        })
    }

    /// A start that answers `initialize` and `tools/list` from the registry's head (its
    /// settings, profiles and access, from `lookup.json`) and the surface file, while a thread
    /// loads the registry and builds the gateway; the first call that needs it waits for it.
    /// Only for a folder whose ops no upstream serves (see [`deferrable`]): everything that can
    /// refuse a start (an interrupted build, an unknown profile, a surface of another registry)
    /// is still checked before serving. A registry that then fails to load leaves a gateway
    /// with no ops, which answers every call as unknown, and says why on stderr: it fails closed.
    fn load_deferred(
        dir: &Path,
        surface: &SurfaceChoice,
        options: ServeOptions,
        lookup: Lookup,
    ) -> Result<Server, ServeError> {
        // The head stands in for the registry until the thread has loaded it; the rest of the
        // index goes to the thread, which would otherwise read it again.
        let head = lookup.head.clone();
        let scope = surface_scope(&head, surface)?;
        let surface_path = surface_file(dir, surface)?;
        let surface_name = file_name(&surface_path);
        let tools = read_surface(&surface_path, &head.registry_version)?;
        let registry_version = head.registry_version.clone();
        let access_scopes = head.access.keys().cloned().collect();
        let pool = Arc::new(Pool::with_metrics(
            Default::default(),
            drift::DriftGate::new(options.drift, Default::default()),
            Arc::clone(&options.observer.metrics),
        ));
        let gateway: Arc<std::sync::OnceLock<Gateway>> = Default::default();
        let (slot, folder, start_scope) = (Arc::clone(&gateway), dir.to_path_buf(), scope.clone());
        let (store, version) = (options.store, head.registry_version.clone());
        let load = move || {
            let options = || Options {
                scope: start_scope.clone(),
                idempotency_store: store.clone(),
                ..Options::default()
            };
            let loaded = crate::runtime::read_dir_with(&folder, Some(lookup))
                .map_err(|e| e.to_string())
                .and_then(|(reg, help)| {
                    if reg.registry_version != version {
                        return Err(format!(
                            "registry.json is {} now, not the {version} this server started with",
                            reg.registry_version
                        ));
                    }
                    Gateway::with_options(reg, help, options()).map_err(|e| e.to_string())
                });
            let gw = loaded
                .map(|gw| gw.with_index_file(folder.join(crate::runtime::search::INDEX_FILE)))
                .unwrap_or_else(|e| {
                    eprintln!(
                        "error: `{}` did not load ({e}); every call is answered as an unknown op",
                        folder.display()
                    );
                    let empty = crate::model::help::HelpDoc::new(
                        head.generator.clone(),
                        head.registry_version.clone(),
                        Default::default(),
                    );
                    Gateway::with_options(head, empty, options())
                        .expect("the head and its empty pages share a version")
                });
            let _ = slot.set(gw);
        };
        std::thread::Builder::new()
            .name("toolreg-load".into())
            .spawn(load)
            .map_err(|e| crate::runtime::GatewayError::Io {
                path: dir.display().to_string(),
                source: e,
            })?;
        let full = View::whole(tools, scope);
        Ok(Server {
            inner: Arc::new(Inner {
                access_scopes,
                gateway,
                full,
                version: registry_version,
                surface: surface_name,
                pool,
                observer: options.observer,
                upstream_of: Default::default(),
                list_ttl_ms: options.list_ttl_ms,
                views: Default::default(),
            }),
        })
    }
}

/// The folder's `lookup.json` (its head is the registry but its ops and tree) when `dir` can
/// be served before its registry is loaded ([`Server::load_with`]): the lookup index matches its files, no
/// upstream serves its ops (their pins and sessions are set up at start) and no vectors lie
/// beside it (their check against the registry can refuse a start).
fn deferrable(dir: &Path) -> Option<Lookup> {
    let lookup = Lookup::open(dir)?;
    #[cfg(feature = "semantic")]
    if dir.join(crate::semantic::FILE).exists() {
        return None;
    }
    lookup.head.upstreams.is_empty().then_some(lookup)
}

/// The scope of the surface served: a profile's ops, or every op.
fn surface_scope(reg: &Registry, surface: &SurfaceChoice) -> Result<Scope, ServeError> {
    Ok(match surface {
        SurfaceChoice::Profile(name) => {
            Scope::profile(reg, name).ok_or_else(|| ServeError::UnknownProfile {
                name: name.clone(),
                known: reg.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
            })?
        }
        _ => Scope::all(),
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl View {
    /// What a caller without a principal sees: the whole surface, in `scope`.
    fn whole(tools: Vec<Tool>, scope: Scope) -> Arc<View> {
        Arc::new(View {
            tool_names: tools.iter().map(|t| t.name.to_string()).collect(),
            tools,
            scope,
            hide: None,
            search: std::sync::OnceLock::new(),
            allowed: Default::default(),
            help: std::sync::OnceLock::new(),
        })
    }
}

/// op -> (upstream, the tool's own name), for every op defined in an upstream's snapshot file.
fn upstream_ops(reg: &Registry) -> Vec<(String, (String, String))> {
    let by_file: std::collections::HashMap<&str, &str> = reg
        .upstreams
        .iter()
        .map(|(name, u)| (u.file.as_str(), name.as_str()))
        .collect();
    reg.ops
        .values()
        .filter_map(|r| {
            by_file
                .get(r.source.file.as_str())
                .map(|up| (r.op.clone(), (up.to_string(), r.tool_name.clone())))
        })
        .collect()
}
