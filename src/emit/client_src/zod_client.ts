/** One object level of an op's arguments: declared names, required names, extras. */
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

/**
 * Checks a result against the op's declared output schema (MCP `outputSchema`): every failing
 * field, as for arguments. An op that declares no result accepts any.
 */
export function checkResult(op: Op, result: unknown): FieldError[] {
  const schema = RESULT_SCHEMAS[op];
  return schema === undefined ? [] : fieldErrors(schema, result);
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

  async exec<O extends Op>(
    op: O,
    args: OpArgs[O],
    options: { idempotency_key?: string; dry_run?: boolean } = {},
  ): Promise<Envelope<OpResult[O]>> {
    const checked = check(op, args);
    if (!checked.ok) return envelope(checked.op, false, { error: checked.error }, checked.warnings) as Envelope<OpResult[O]>;
    const answer = await this.transport.call({ op, tool: OPS[op].tool, args: checked.args as OpArgs[O], ...options });
    if (checked.warnings.length > 0) answer.meta = { ...answer.meta, warnings: [...checked.warnings, ...(answer.meta?.warnings ?? [])] };
    return answer as Envelope<OpResult[O]>;
  }
}
