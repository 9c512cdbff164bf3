//! Handler registration: the code an op runs once exec has validated its arguments (async,
//! sync, or taking a typed argument struct), keyed by op whatever name it was registered by.

use super::{Gateway, GatewayError, HandlerError};
use crate::model::resolve::resolve_exec;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future a handler returns. Any executor can drive it: the gateway never spawns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Value, HandlerError>> + Send>>;
/// A registered handler, shared so a call can run it without holding the gateway.
pub(super) type Handler = Arc<dyn Fn(Value) -> HandlerFuture + Send + Sync>;

impl Gateway {
    /// Registers an async handler for an op (by op or tool name).
    pub fn handle<F, Fut>(&mut self, op: &str, f: F) -> Result<&mut Self, GatewayError>
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        let op = self.op_name(op)?;
        self.handlers
            .insert(op, Arc::new(move |args| Box::pin(f(args)) as HandlerFuture));
        Ok(self)
    }

    /// Registers a synchronous handler.
    pub fn handle_sync<F>(&mut self, op: &str, f: F) -> Result<&mut Self, GatewayError>
    where
        F: Fn(Value) -> Result<Value, HandlerError> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        self.handle(op, move |args| {
            let f = Arc::clone(&f);
            async move { f(args) }
        })
    }

    /// Registers a synchronous handler that takes typed arguments (e.g. a generated args
    /// struct); arguments are already validated, so a deserialization failure is INTERNAL.
    pub fn handle_typed<T, F>(&mut self, op: &str, f: F) -> Result<&mut Self, GatewayError>
    where
        T: serde::de::DeserializeOwned + 'static,
        F: Fn(T) -> Result<Value, HandlerError> + Send + Sync + 'static,
    {
        self.handle_sync(op, move |args| {
            let typed: T = serde_json::from_value(args).map_err(|e| {
                HandlerError::internal(format!("arguments did not fit the typed handler: {e}"))
            })?;
            f(typed)
        })
    }

    fn op_name(&self, op: &str) -> Result<String, GatewayError> {
        resolve_exec(&self.registry, op)
            .map(|(o, _)| o.to_string())
            .ok_or_else(|| GatewayError::UnknownOp(op.to_string()))
    }
}
