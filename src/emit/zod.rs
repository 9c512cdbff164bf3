//! `ts/client.ts` (emitter `zod`, opt-in): zod v4 schemas of every op's arguments, and a typed
//! client that checks a call the way the runtime's `exec` does before any handler runs.
//!
//! The module imports nothing but `zod` and the types of `ts/registry.ts` (written alongside,
//! the same file the `ts` emitter writes). `check(op, args)` answers what `exec` would: the
//! same field errors at the same pointers (missing, wrong type, unknown under a closed object,
//! a near miss of a missing required name), unknown names elsewhere dropped with a warning,
//! argument aliases renamed, `EMPTY_ARGS` for `{}`. `Client.exec` adds a transport: a map of
//! handlers, or an MCP client talking to `toolreg serve` (the gateway's exec tool).
//!
//! Catalog text reaches the file only as JSON string literals (valid TypeScript) or inside
//! doc comments with `*/` broken; names never become identifiers (schemas are named by stem).

use super::FileMap;
use crate::model::registry::{OpRecord, Registry};
use heck::ToUpperCamelCase;
use serde_json::Value;

pub const FILE: &str = "ts/client.ts";

/// A JSON string literal: a valid TypeScript string for any text.
fn lit(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// A property key of an object literal: `"__proto__"` written plainly would set the prototype.
fn key(name: &str) -> String {
    if name == "__proto__" {
        format!("[{}]", lit(name))
    } else {
        lit(name)
    }
}

/// zod for one op's schema; `$ref`s name `{stem}{Def}Schema` constants, lazily.
struct Zod<'a> {
    stem: &'a str,
}

impl Zod<'_> {
    fn reference(&self, r: &str) -> String {
        if r == "#" {
            return format!("z.lazy(() => {}ArgsSchema)", self.stem);
        }
        match ["#/$defs/", "#/definitions/"]
            .iter()
            .find_map(|p| r.strip_prefix(p))
        {
            Some(name) => format!(
                "z.lazy(() => {}{}Schema)",
                self.stem,
                name.to_upper_camel_case()
            ),
            None => "z.unknown()".into(),
        }
    }

    fn schema(&self, s: &Value, depth: usize) -> String {
        let Some(obj) = s.as_object() else {
            return if s == &Value::Bool(false) {
                "z.never()".into()
            } else {
                "z.unknown()".into()
            };
        };
        if depth > 64 {
            return "z.unknown()".into();
        }
        let mut parts: Vec<String> = Vec::new();
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            parts.push(self.reference(r));
        }
        // Listed values say the type already (a value of another type is not one of them).
        let listed = if let Some(c) = obj.get("const") {
            Some(one_of_values(std::slice::from_ref(c)))
        } else {
            obj.get("enum")
                .and_then(Value::as_array)
                .map(|values| one_of_values(values))
        };
        let has_listed = listed.is_some();
        parts.extend(listed);
        for k in ["oneOf", "anyOf"] {
            if let Some(items) = obj.get(k).and_then(Value::as_array) {
                let alts: Vec<String> = items.iter().map(|i| self.schema(i, depth + 1)).collect();
                parts.push(match alts.len() {
                    0 => "z.never()".into(),
                    1 => alts[0].clone(),
                    _ => format!("z.union([{}])", alts.join(", ")),
                });
            }
        }
        if let Some(items) = obj.get("allOf").and_then(Value::as_array) {
            parts.extend(items.iter().map(|i| self.schema(i, depth + 1)));
        }
        if !has_listed {
            parts.extend(self.typed(obj, depth));
        }
        match parts.len() {
            0 => "z.unknown()".into(),
            1 => parts.remove(0),
            _ => {
                let first = parts.remove(0);
                parts
                    .into_iter()
                    .fold(first, |acc, p| format!("z.intersection({acc}, {p})"))
            }
        }
    }

    /// The part of a schema its `type` (or, without one, its `properties` / `required`) says.
    fn typed(&self, obj: &serde_json::Map<String, Value>, depth: usize) -> Option<String> {
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if obj.contains_key("properties") || obj.contains_key("required") => {
                // Without a type, object keywords constrain objects only.
                let o = self.object(obj, depth);
                return Some(format!(
                    "z.union([{o}, z.unknown().refine((v) => !isObject(v))])"
                ));
            }
            _ => return None,
        };
        let alts: Vec<String> = types
            .iter()
            .map(|t| match *t {
                "string" => string(obj),
                "integer" => number(obj, true),
                "number" => number(obj, false),
                "boolean" => "z.boolean()".into(),
                "null" => "z.null()".into(),
                "array" => self.array(obj, depth),
                "object" => self.object(obj, depth),
                _ => "z.unknown()".into(),
            })
            .collect();
        Some(match alts.len() {
            0 => "z.unknown()".into(),
            1 => alts[0].clone(),
            _ => format!("z.union([{}])", alts.join(", ")),
        })
    }

    fn array(&self, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
        let items = match obj.get("items") {
            Some(i @ (Value::Object(_) | Value::Bool(_))) => self.schema(i, depth + 1),
            _ => "z.unknown()".into(),
        };
        let mut out = format!("z.array({items})");
        if let Some(n) = obj.get("minItems").and_then(Value::as_u64) {
            out.push_str(&format!(".min({n})"));
        }
        if let Some(n) = obj.get("maxItems").and_then(Value::as_u64) {
            out.push_str(&format!(".max({n})"));
        }
        if obj.get("uniqueItems") == Some(&Value::Bool(true)) {
            out.push_str(".refine(unique, \"items must be unique\")");
        }
        out
    }

    fn object(&self, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
        let required = crate::model::schema::required(&Value::Object(obj.clone()))
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        let mut members: Vec<String> = Vec::new();
        let props = obj.get("properties").and_then(Value::as_object);
        for (name, sub) in props.into_iter().flatten() {
            let z = self.schema(sub, depth + 1);
            if required.contains(name) {
                // zod's `unknown` and lazy schemas accept a missing key; a required one must be there.
                if z.contains("z.unknown()") || z.contains("z.lazy(") {
                    members.push(format!("{}: present({z})", key(name)));
                } else {
                    members.push(format!("{}: {z}", key(name)));
                }
            } else {
                members.push(format!("{}: {z}.optional()", key(name)));
            }
        }
        for name in &required {
            if !props.is_some_and(|p| p.contains_key(name)) {
                members.push(format!("{}: present(z.unknown())", key(name)));
            }
        }
        let indent = "  ".repeat(depth + 1);
        let shape = if members.is_empty() {
            "{}".to_string()
        } else {
            format!(
                "{{\n{indent}{},\n{}}}",
                members.join(&format!(",\n{indent}")),
                "  ".repeat(depth)
            )
        };
        match obj.get("additionalProperties") {
            Some(Value::Bool(false)) => format!("z.strictObject({shape})"),
            Some(extra @ Value::Object(_)) if !obj.contains_key("patternProperties") => {
                format!(
                    "z.object({shape}).catchall({})",
                    self.schema(extra, depth + 1)
                )
            }
            _ => format!("z.looseObject({shape})"),
        }
    }
}

/// `enum` / `const`: primitives as literals, anything else compared as JSON.
fn one_of_values(values: &[Value]) -> String {
    let alts: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::Null => "z.null()".into(),
            Value::String(s) => format!("z.literal({})", lit(s)),
            Value::Bool(_) | Value::Number(_) => format!("z.literal({v})"),
            other => format!(
                "z.unknown().refine((v) => sameJson(v, {}), \"must equal the value the schema gives\")",
                other
            ),
        })
        .collect();
    match alts.len() {
        0 => "z.never()".into(),
        1 => alts[0].clone(),
        _ => format!("z.union([{}])", alts.join(", ")),
    }
}

fn string(obj: &serde_json::Map<String, Value>) -> String {
    let mut out = "z.string()".to_string();
    // JSON Schema counts code points; JavaScript's length counts UTF-16 units.
    if let Some(n) = obj.get("minLength").and_then(Value::as_u64) {
        out.push_str(&format!(
            ".refine((v) => chars(v) >= {n}, \"shorter than {n} characters\")"
        ));
    }
    if let Some(n) = obj.get("maxLength").and_then(Value::as_u64) {
        out.push_str(&format!(
            ".refine((v) => chars(v) <= {n}, \"longer than {n} characters\")"
        ));
    }
    if let Some(p) = obj.get("pattern").and_then(Value::as_str) {
        out.push_str(&format!(
            ".refine(pattern({}), \"does not match the pattern\")",
            lit(p)
        ));
    }
    out
}

fn number(obj: &serde_json::Map<String, Value>, integer: bool) -> String {
    let mut out = if integer {
        "z.number().refine(Number.isInteger, \"expected an integer\")".to_string()
    } else {
        "z.number()".to_string()
    };
    for (key, method) in [
        ("minimum", "gte"),
        ("maximum", "lte"),
        ("exclusiveMinimum", "gt"),
        ("exclusiveMaximum", "lt"),
    ] {
        if let Some(n) = obj.get(key).filter(|v| v.is_number()) {
            out.push_str(&format!(
                ".refine((v) => v {} {n}, \"must be {} {n}\")",
                match method {
                    "gte" => ">=",
                    "lte" => "<=",
                    "gt" => ">",
                    _ => "<",
                },
                match method {
                    "gte" => "at least",
                    "lte" => "at most",
                    "gt" => "more than",
                    _ => "less than",
                }
            ));
        }
    }
    if let Some(n) = obj
        .get("multipleOf")
        .filter(|v| v.as_f64().is_some_and(|f| f > 0.0))
    {
        out.push_str(&format!(
            ".refine((v) => Number.isInteger(v / {n}), \"must be a multiple of {n}\")"
        ));
    }
    out
}

/// The op's schemas: its `$defs` first, then its arguments.
fn op_schemas(r: &OpRecord, stem: &str) -> String {
    let z = Zod { stem };
    let mut o = String::new();
    for k in ["$defs", "definitions"] {
        if let Some(defs) = r.parameters_schema.get(k).and_then(Value::as_object) {
            for (name, def) in defs {
                o.push_str(&format!(
                    "const {stem}{}Schema: z.ZodType = {};\n",
                    name.to_upper_camel_case(),
                    z.schema(def, 0)
                ));
            }
        }
    }
    o.push_str(&super::typescript::jsdoc(
        &format!("Arguments of `{}` (tool `{}`).", r.op, r.tool_name),
        "",
    ));
    o.push_str(&format!(
        "export const {stem}ArgsSchema: z.ZodType = {};\n\n",
        z.schema(&r.parameters_schema, 0)
    ));
    o
}

pub fn generate(reg: &Registry) -> String {
    let ops: Vec<&OpRecord> = reg.ops.values().collect();
    let stems = super::rust::stems(&ops);
    let mut o = format!(
        "// @generated by toolreg from registry {} ({}). Do not edit: run `toolreg build`.\n\
         // zod v4 schemas of every op's arguments and a typed client that checks a call as the\n\
         // runtime's exec does. Depends on zod only.\n\n\
         import {{ z }} from \"zod\";\n\
         import type {{ Op, OpArgs }} from \"./registry\";\n\n",
        lit(&reg.name),
        reg.registry_version
    );
    o.push_str(&format!(
        "/** The registry this client was generated from. */\nexport const REGISTRY_VERSION = {} as const;\n\
         /** The gateway's exec tool (what an MCP transport calls). */\nexport const EXEC_TOOL = {} as const;\n\n",
        lit(&reg.registry_version),
        lit(&reg.gateway.exec)
    ));
    o.push_str(HELPERS);
    for (r, stem) in ops.iter().zip(&stems) {
        o.push_str(&op_schemas(r, stem));
    }
    o.push_str("/** Each op's argument schema. */\nexport const ARG_SCHEMAS: { readonly [O in Op]: z.ZodType } = {\n");
    for (r, stem) in ops.iter().zip(&stems) {
        o.push_str(&format!("  {}: {stem}ArgsSchema,\n", lit(&r.op)));
    }
    o.push_str("};\n\n/** Each op's tool name, kind, usage, aliases and argument shape (what exec checks besides the schema). */\nexport const OPS: { readonly [O in Op]: OpInfo } = {\n");
    for r in &ops {
        let mut entry = super::arg_shape::op_table(r);
        entry["usage"] = Value::String(r.usage());
        // Parsed from JSON, not written as a literal: an argument named `__proto__` stays a name.
        o.push_str(&format!(
            "  {}: JSON.parse({}) as OpInfo,\n",
            lit(&r.op),
            lit(&serde_json::to_string(&entry).unwrap_or_else(|_| "null".into()))
        ));
    }
    o.push_str("};\n\n/** Tool name -> op. */\nexport const TOOL_TO_OP: { readonly [name: string]: Op | undefined } = {\n");
    for r in &ops {
        o.push_str(&format!("  {}: {},\n", lit(&r.tool_name), lit(&r.op)));
    }
    o.push_str("};\n\n");
    o.push_str(CLIENT);
    o
}

pub fn emit(reg: &Registry) -> FileMap {
    FileMap::from([
        (FILE.to_string(), generate(reg)),
        (
            super::typescript::FILE.to_string(),
            super::typescript::generate(reg),
        ),
    ])
}

/// Helpers the schemas use. Plain TypeScript, the same in every generated client.
const HELPERS: &str = r#"const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
/** A required property: present (even `undefined` is absent), then the schema. */
const present = (schema: z.ZodType): z.ZodType =>
  z.custom<unknown>((v) => v !== undefined, "required").pipe(schema);
/** JSON Schema counts code points. */
const chars = (v: string): number => Array.from(v).length;
/** A schema's pattern, compiled once; one JavaScript cannot compile checks nothing. */
const pattern = (source: string): ((v: string) => boolean) => {
  let re: RegExp | null = null;
  try {
    re = new RegExp(source, "u");
  } catch {
    re = null;
  }
  return (v) => re === null || re.test(v);
};
const canonical = (v: unknown): string =>
  isObject(v)
    ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`
    : Array.isArray(v)
      ? `[${v.map(canonical).join(",")}]`
      : JSON.stringify(v);
const sameJson = (a: unknown, b: unknown): boolean => canonical(a) === canonical(b);
const unique = (items: unknown[]): boolean => new Set(items.map(canonical)).size === items.length;

"#;

/// The checker and client. Mirrors `runtime::exec` (steps 3 to 6) and `runtime::validate`.
const CLIENT: &str = r#"/** One object level of an op's arguments: declared names, required names, extras. */
export interface Level {
  readonly p: { readonly [name: string]: Level | null };
  readonly r: readonly string[];
  readonly x?: "closed" | "open";
}

export interface OpInfo {
  readonly tool: string;
  readonly kind: "read" | "write";
  readonly required: readonly string[];
  readonly shape: Level | null;
  readonly usage: string;
  readonly aliases?: { readonly [alias: string]: string };
  readonly pass_unknown?: boolean;
}

/** One failing field, as exec reports it. */
export interface FieldError {
  field: string;
  pointer: string;
  message: string;
  hint?: string;
}

export interface ErrorBody {
  code: string;
  message: string;
  details: { field_errors: FieldError[]; [key: string]: unknown };
  help_path: string;
}

/** seed 000's envelope, as `toolreg serve` answers. */
export interface Envelope<R = unknown> {
  op: string;
  ok: boolean;
  result?: R;
  error?: ErrorBody;
  meta: { trace_id: string; latency_ms: number; warnings: string[]; dry_run?: boolean };
}

export type Checked<O extends Op> =
  | { ok: true; op: O; args: OpArgs[O]; warnings: string[] }
  | { ok: false; op: string; error: ErrorBody; warnings: string[] };

const MAX_FIELD_ERRORS = 20;
const MAX_UNKNOWN_REPORTED = 20;
const MAX_NAME_CHARS = 64;

const shown = (name: string): string => {
  const cs = Array.from(name);
  return cs.length <= MAX_NAME_CHARS ? name : `${cs.slice(0, MAX_NAME_CHARS).join("")}…`;
};
const childPointer = (at: string, key: string): string =>
  `${at}/${shown(key).replace(/~/g, "~0").replace(/\//g, "~1")}`;
const fieldOf = (pointer: string): string =>
  pointer.replace(/^\/+/, "").replace(/\//g, ".").replace(/~1/g, "/").replace(/~0/g, "~");

/** Jaro-Winkler similarity over code points (the runtime's `strsim::jaro_winkler`). */
function jaroWinkler(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  if (x.length === 0 && y.length === 0) return 1;
  if (x.length === 0 || y.length === 0) return 0;
  const range = Math.max(0, Math.floor(Math.max(x.length, y.length) / 2) - 1);
  const xf = new Array<boolean>(x.length).fill(false);
  const yf = new Array<boolean>(y.length).fill(false);
  let matches = 0;
  for (let i = 0; i < x.length; i++) {
    const lo = i > range ? i - range : 0;
    const hi = Math.min(y.length, i + range + 1);
    for (let j = lo; j < hi; j++) {
      if (x[i] === y[j] && !yf[j]) {
        xf[i] = true;
        yf[j] = true;
        matches++;
        break;
      }
    }
  }
  if (matches === 0) return 0;
  let transpositions = 0;
  let j = 0;
  for (let i = 0; i < x.length; i++) {
    if (!xf[i]) continue;
    while (!yf[j]) j++;
    if (x[i] !== y[j]) transpositions++;
    j++;
  }
  transpositions = Math.floor(transpositions / 2);
  const jaro = (matches / x.length + matches / y.length + (matches - transpositions) / matches) / 3;
  if (jaro <= 0.7) return jaro;
  let prefix = 0;
  while (prefix < 4 && prefix < x.length && prefix < y.length && x[prefix] === y[prefix]) prefix++;
  return jaro + 0.1 * prefix * (1 - jaro);
}

const squash = (name: string): string =>
  Array.from(name)
    .filter((c) => /[\p{L}\p{N}]/u.test(c))
    .join("")
    .toLowerCase();

/** The closest name to an unknown one: the same name spelt otherwise, else the most similar. */
function closestProperty(unknown: string, names: readonly string[]): string | undefined {
  const sq = squash(unknown);
  const same = names.find((n) => squash(n) === sq);
  if (same !== undefined) return same;
  const lw = unknown.toLowerCase();
  let best: [number, string] | undefined;
  for (const n of names) {
    const s = jaroWinkler(lw, n.toLowerCase());
    if (s < 0.7) continue;
    if (best === undefined || s > best[0] || (s === best[0] && n < best[1])) best = [s, n];
  }
  return best?.[1];
}

interface Unknown {
  pointer: string;
  name: string;
  closest?: string;
  closestMissing: boolean;
}

function unknownArguments(level: Level | null, args: unknown, at: string, depth: number, out: Unknown[]): void {
  if (level === null || !isObject(args) || depth > 32) return;
  const closed = level.x === "closed";
  for (const key of Object.keys(args)) {
    if (out.length >= MAX_UNKNOWN_REPORTED) return;
    const pointer = childPointer(at, key);
    if (Object.prototype.hasOwnProperty.call(level.p, key)) {
      unknownArguments(level.p[key] ?? null, args[key], pointer, depth + 1, out);
      continue;
    }
    if (closed) continue;
    const missing = level.r.filter((r) => !Object.prototype.hasOwnProperty.call(args, r));
    let closest = closestProperty(key, missing);
    if (closest === undefined) {
      const k = squash(key);
      const inside = missing.filter((r) => {
        const s = squash(r);
        return Array.from(s).length >= 3 && (k.includes(s) || s.includes(k));
      });
      if (inside.length === 1) closest = inside[0];
    }
    if (closest === undefined) closest = closestProperty(key, Object.keys(level.p));
    const closestMissing =
      closest !== undefined && level.r.includes(closest) && !Object.prototype.hasOwnProperty.call(args, closest);
    out.push({ pointer, name: shown(key), closest, closestMissing });
  }
}

function stripUndeclared(level: Level | null, args: unknown, at: string, depth: number, out: Set<string>): void {
  if (level === null || !isObject(args) || depth > 32) return;
  if (level.x === undefined) {
    for (const key of Object.keys(args)) {
      if (!Object.prototype.hasOwnProperty.call(level.p, key)) {
        out.add(childPointer(at, key));
        delete args[key];
      }
    }
  }
  for (const key of Object.keys(args)) {
    const sub = level.p[key];
    if (sub !== undefined) stripUndeclared(sub, args[key], childPointer(at, key), depth + 1, out);
  }
}

function applyAliases(info: OpInfo, args: Record<string, unknown>, warnings: string[]): void {
  for (const [alias, target] of Object.entries(info.aliases ?? {})) {
    const dot = alias.indexOf(".");
    let taken: unknown;
    if (dot >= 0) {
      const outer = args[alias.slice(0, dot)];
      if (isObject(outer) && Object.prototype.hasOwnProperty.call(outer, alias.slice(dot + 1))) {
        taken = outer[alias.slice(dot + 1)];
        delete outer[alias.slice(dot + 1)];
        if (Object.keys(outer).length === 0) delete args[alias.slice(0, dot)];
      }
    } else if (Object.prototype.hasOwnProperty.call(args, alias)) {
      taken = args[alias];
      delete args[alias];
    }
    if (taken === undefined) continue;
    if (Object.prototype.hasOwnProperty.call(args, target)) {
      warnings.push(`dropped \`${alias}\`: \`${target}\` was also given`);
    } else {
      args[target] = taken;
      warnings.push(`renamed \`${alias}\` to \`${target}\``);
    }
  }
}

const failure = (op: string, code: string, message: string, details: Record<string, unknown>, fieldErrors: FieldError[] = []): ErrorBody => ({
  code,
  message,
  details: { ...details, field_errors: fieldErrors },
  help_path: op,
});

/** A copy whose objects have no prototype: a key named `__proto__` is then read as the
 * argument it is, not as Object.prototype. */
const bare = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(bare);
  if (!isObject(v)) return v;
  const out: Record<string, unknown> = Object.create(null);
  for (const k of Object.keys(v)) out[k] = bare(v[k]);
  return out;
};

function fieldErrors(schema: z.ZodType, args: unknown): FieldError[] {
  const parsed = schema.safeParse(bare(args));
  if (parsed.success) return [];
  const out: FieldError[] = [];
  for (const issue of parsed.error.issues) {
    if (out.length >= MAX_FIELD_ERRORS) break;
    const path = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      const at = path.reduce((p, k) => childPointer(p, k), "");
      for (const key of issue.keys) {
        if (out.length >= MAX_FIELD_ERRORS) break;
        const pointer = childPointer(at, key);
        out.push({ field: fieldOf(pointer), pointer, message: `unknown argument \`${shown(key)}\`` });
      }
      continue;
    }
    const pointer = path.reduce((p, k) => childPointer(p, k), "");
    const parent = path.slice(0, -1).reduce<unknown>((v, k) => (isObject(v) ? v[k] : Array.isArray(v) ? v[Number(k)] : undefined), args);
    const name = path[path.length - 1];
    if (name !== undefined && isObject(parent) && !Object.prototype.hasOwnProperty.call(parent, name)) {
      out.push({ field: fieldOf(pointer), pointer, message: `missing required argument \`${name}\``, hint: `add \`${name}\`` });
    } else {
      out.push({ field: pointer === "" ? "(arguments)" : fieldOf(pointer), pointer, message: issue.message });
    }
  }
  return out;
}

/**
 * Checks a call as exec does before its handler runs: the op (or its tool name), arguments
 * (a JSON string is parsed), aliases, empty arguments, unknown names, then the schema.
 * The caller's object is not modified; a successful check returns the arguments to send.
 */
export function check<O extends Op>(op: O, args: unknown): Checked<O>;
export function check(op: string, args: unknown): Checked<Op>;
export function check(name: string, raw: unknown): Checked<Op> {
  const warnings: string[] = [];
  const op = (Object.prototype.hasOwnProperty.call(OPS, name) ? name : TOOL_TO_OP[name]) as Op | undefined;
  if (op === undefined) {
    return { ok: false, op: name, error: failure(name, "NOT_FOUND", `unknown op \`${shown(name)}\``, {}), warnings };
  }
  if (op !== name) warnings.push(`\`${name}\` is a tool name; the op is \`${op}\``);
  const info: OpInfo = OPS[op];
  let args: unknown = raw ?? {};
  if (typeof args === "string") {
    try {
      args = JSON.parse(args);
    } catch (e) {
      return { ok: false, op, error: failure(op, "MALFORMED_ARGS", `\`args\` is not valid JSON: ${String(e)}`, {}), warnings };
    }
    if (isObject(args)) warnings.push("`args` was a JSON string; parsed it as an object");
  }
  if (!isObject(args)) {
    const kind = args === null ? "null" : Array.isArray(args) ? "an array" : `a ${typeof args}`;
    return { ok: false, op, error: failure(op, "MALFORMED_ARGS", `\`args\` must be a JSON object, got ${kind}`, {}), warnings };
  }
  const copy = JSON.parse(JSON.stringify(args)) as Record<string, unknown>;
  applyAliases(info, copy, warnings);
  if (Object.keys(copy).length === 0 && info.required.length > 0) {
    return {
      ok: false,
      op,
      error: failure(op, "EMPTY_ARGS", `\`${op}\` needs arguments: ${info.required.join(", ")}`, { required_args: info.required, usage: info.usage }),
      warnings,
    };
  }
  const unknown: Unknown[] = [];
  unknownArguments(info.shape, copy, "", 0, unknown);
  const dropped = new Set<string>();
  if (!info.pass_unknown) stripUndeclared(info.shape, copy, "", 0, dropped);
  const errors = fieldErrors(ARG_SCHEMAS[op], copy);
  for (const u of unknown) {
    const fate = dropped.has(u.pointer)
      ? "the schema does not declare it, so it was dropped before the call"
      : "the schema lets it through, so it is passed on unchecked";
    const field = u.pointer.replace(/^\//, "").replace(/\//g, ".");
    if (u.closest !== undefined && u.closestMissing) {
      for (const e of errors) {
        if (e.field.split(".").pop() === u.closest) e.hint = `you sent \`${u.name}\`: rename it to \`${u.closest}\``;
      }
      errors.push({
        field,
        pointer: u.pointer,
        message: `\`${u.name}\` is not an argument of this op; did you mean \`${u.closest}\`?`,
        hint: `rename \`${u.name}\` to \`${u.closest}\``,
      });
    } else if (u.closest !== undefined) {
      warnings.push(`\`${field}\` is not an argument of this op; did you mean \`${u.closest}\`? (${fate})`);
    } else {
      warnings.push(`\`${field}\` is not an argument of this op (${fate})`);
    }
  }
  if (errors.length > 0) {
    const n = errors.length;
    return {
      ok: false,
      op,
      error: failure(op, "VALIDATION_ERROR", `${n} argument problem${n === 1 ? "" : "s"} in \`${op}\``, { usage: info.usage }, errors),
      warnings,
    };
  }
  return { ok: true, op, args: copy as unknown as OpArgs[Op], warnings };
}

/** What a checked call hands its transport. */
export interface Call<O extends Op = Op> {
  op: O;
  tool: string;
  args: OpArgs[O];
  idempotency_key?: string;
  dry_run?: boolean;
}

/** Runs a checked call and answers an envelope. */
export interface Transport {
  call(call: Call): Promise<Envelope>;
}

export type Handlers = { [O in Op]?: (args: OpArgs[O], call: Call<O>) => unknown };

const envelope = (op: string, ok: boolean, body: { result?: unknown; error?: ErrorBody }, warnings: string[]): Envelope => ({
  op,
  ok,
  ...body,
  meta: { trace_id: "", latency_ms: 0, warnings },
});

/** A transport over handlers in this process: a handler's return value is the result; a thrown `{code, message}` is passed through, anything else thrown is INTERNAL. */
export function handlersTransport(handlers: Handlers): Transport {
  return {
    async call(call) {
      const handler = handlers[call.op] as ((args: unknown, call: Call) => unknown) | undefined;
      if (handler === undefined) {
        return envelope(call.op, false, { error: failure(call.op, "NOT_IMPLEMENTED", `no handler for \`${call.op}\``, {}) }, []);
      }
      try {
        return envelope(call.op, true, { result: await handler(call.args, call) }, []);
      } catch (e) {
        const code = isObject(e) && typeof e.code === "string" ? e.code : "INTERNAL";
        const message = isObject(e) && typeof e.message === "string" ? e.message : String(e);
        return envelope(call.op, false, { error: failure(call.op, code, message, {}) }, []);
      }
    },
  };
}

/** The part of an MCP client (e.g. `@modelcontextprotocol/sdk`'s `Client`) the MCP transport uses. */
export interface McpClientLike {
  callTool(request: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
}

/** A transport to `toolreg serve`: calls the gateway's exec tool and reads its envelope. */
export function mcpTransport(client: McpClientLike, execTool: string = EXEC_TOOL): Transport {
  return {
    async call(call) {
      const request: Record<string, unknown> = { op: call.op, args: call.args };
      if (call.idempotency_key !== undefined) request.idempotency_key = call.idempotency_key;
      if (call.dry_run !== undefined) request.dry_run = call.dry_run;
      const answer = await client.callTool({ name: execTool, arguments: request });
      if (isObject(answer) && isObject(answer.structuredContent)) return answer.structuredContent as unknown as Envelope;
      const content = isObject(answer) && Array.isArray(answer.content) ? answer.content : [];
      const text = content.find((c): c is { type: "text"; text: string } => isObject(c) && c.type === "text" && typeof c.text === "string");
      if (text !== undefined) {
        try {
          return JSON.parse(text.text) as Envelope;
        } catch {
          // Not an envelope: reported below.
        }
      }
      return envelope(call.op, false, { error: failure(call.op, "INTERNAL", "the server's answer was not an envelope", {}) }, []);
    },
  };
}

/** A typed client: each call is checked here first, and only a valid one reaches the transport. */
export class Client {
  constructor(private readonly transport: Transport) {}

  async exec<O extends Op>(op: O, args: OpArgs[O], options: { idempotency_key?: string; dry_run?: boolean } = {}): Promise<Envelope> {
    const checked = check(op, args);
    if (!checked.ok) return envelope(checked.op, false, { error: checked.error }, checked.warnings);
    const answer = await this.transport.call({ op, tool: OPS[op].tool, args: checked.args as OpArgs[O], ...options });
    if (checked.warnings.length > 0) answer.meta = { ...answer.meta, warnings: [...checked.warnings, ...(answer.meta?.warnings ?? [])] };
    return answer;
  }
}
"#;
