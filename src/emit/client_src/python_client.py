class FieldError(TypedDict):
    field: str
    pointer: str
    message: str
    hint: NotRequired[str]


class ErrorBody(TypedDict):
    code: str
    message: str
    details: dict[str, Any]
    help_path: str


class Meta(TypedDict):
    trace_id: str
    latency_ms: int
    warnings: list[str]
    dry_run: NotRequired[bool]


class Envelope(TypedDict):
    """seed 000's envelope, as `toolreg serve` answers."""

    op: str
    ok: bool
    result: NotRequired[Any]
    error: NotRequired[ErrorBody]
    meta: Meta


class Checked(TypedDict):
    ok: bool
    op: str
    args: NotRequired[dict[str, Any]]
    error: NotRequired[ErrorBody]
    warnings: list[str]


class Call(TypedDict):
    op: str
    tool: str
    args: dict[str, Any]
    idempotency_key: NotRequired[str]
    dry_run: NotRequired[bool]


MAX_FIELD_ERRORS: Final = 20
MAX_UNKNOWN_REPORTED: Final = 20
MAX_NAME_CHARS: Final = 64


def _shown(name: str) -> str:
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS] + "…"


def _child_pointer(at: str, key: str) -> str:
    return at + "/" + _shown(key).replace("~", "~0").replace("/", "~1")


def _field_of(pointer: str) -> str:
    return pointer.lstrip("/").replace("/", ".").replace("~1", "/").replace("~0", "~")


def _jaro_winkler(a: str, b: str) -> float:
    """Jaro-Winkler similarity over code points (the runtime's `strsim::jaro_winkler`)."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    reach = max(0, max(len(a), len(b)) // 2 - 1)
    a_flags = [False] * len(a)
    b_flags = [False] * len(b)
    matches = 0
    for i, ch in enumerate(a):
        for j in range(max(0, i - reach), min(len(b), i + reach + 1)):
            if b[j] == ch and not b_flags[j]:
                a_flags[i] = b_flags[j] = True
                matches += 1
                break
    if matches == 0:
        return 0.0
    transpositions = 0
    j = 0
    for i, ch in enumerate(a):
        if not a_flags[i]:
            continue
        while not b_flags[j]:
            j += 1
        if ch != b[j]:
            transpositions += 1
        j += 1
    transpositions //= 2
    jaro = (matches / len(a) + matches / len(b) + (matches - transpositions) / matches) / 3
    if jaro <= 0.7:
        return jaro
    prefix = 0
    while prefix < 4 and prefix < len(a) and prefix < len(b) and a[prefix] == b[prefix]:
        prefix += 1
    return jaro + 0.1 * prefix * (1 - jaro)


def _squash(name: str) -> str:
    return "".join(c for c in name if c.isalnum()).lower()


def _closest_property(unknown: str, names: list[str]) -> Optional[str]:
    squashed = _squash(unknown)
    for n in names:
        if _squash(n) == squashed:
            return n
    lowered = unknown.lower()
    best: Optional[tuple[float, str]] = None
    for n in names:
        s = _jaro_winkler(lowered, n.lower())
        if s < 0.7:
            continue
        if best is None or s > best[0] or (s == best[0] and n < best[1]):
            best = (s, n)
    return best[1] if best else None


def _unknown_arguments(level: Any, args: Any, at: str, depth: int, out: list[dict[str, Any]]) -> None:
    if level is None or not isinstance(args, dict) or depth > 32:
        return
    props: dict[str, Any] = level["p"]
    required: list[str] = level["r"]
    for key, value in args.items():
        if len(out) >= MAX_UNKNOWN_REPORTED:
            return
        pointer = _child_pointer(at, key)
        if key in props:
            _unknown_arguments(props[key], value, pointer, depth + 1, out)
            continue
        if level.get("x") == "closed":
            continue
        missing = [r for r in required if r not in args]
        closest = _closest_property(key, missing)
        if closest is None:
            k = _squash(key)
            inside = [r for r in missing if len(_squash(r)) >= 3 and (_squash(r) in k or k in _squash(r))]
            if len(inside) == 1:
                closest = inside[0]
        if closest is None:
            closest = _closest_property(key, list(props))
        out.append({
            "pointer": pointer,
            "name": _shown(key),
            "closest": closest,
            "closest_missing": closest is not None and closest in required and closest not in args,
        })


def _strip_undeclared(level: Any, args: Any, at: str, depth: int, out: set[str]) -> None:
    if level is None or not isinstance(args, dict) or depth > 32:
        return
    props: dict[str, Any] = level["p"]
    if "x" not in level:
        for key in [k for k in args if k not in props]:
            out.add(_child_pointer(at, key))
            del args[key]
    for key, value in args.items():
        if key in props:
            _strip_undeclared(props[key], value, _child_pointer(at, key), depth + 1, out)


def _apply_aliases(info: dict[str, Any], args: dict[str, Any], warnings: list[str]) -> None:
    for alias, target in info.get("aliases", {}).items():
        outer, dot, inner = alias.partition(".")
        missing = object()
        taken: Any = missing
        if dot:
            holder = args.get(outer)
            if isinstance(holder, dict) and inner in holder:
                taken = holder.pop(inner)
                if not holder:
                    del args[outer]
        elif alias in args:
            taken = args.pop(alias)
        if taken is missing:
            continue
        if target in args:
            warnings.append(f"dropped `{alias}`: `{target}` was also given")
        else:
            args[target] = taken
            warnings.append(f"renamed `{alias}` to `{target}`")


def _failure(op: str, code: str, message: str, details: dict[str, Any], errors: Optional[list[FieldError]] = None) -> ErrorBody:
    return {"code": code, "message": message, "details": {**details, "field_errors": errors or []}, "help_path": op}


def _resolve(args: Any, loc: tuple[Any, ...]) -> tuple[list[str], Any, bool]:
    """The longest prefix of a pydantic location that names values in `args` (a union's
    branch tags are not keys), the value there, and whether the whole location resolved."""
    keys: list[str] = []
    value = args
    for part in loc:
        if isinstance(value, dict) and isinstance(part, str) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and not isinstance(part, bool) and 0 <= part < len(value):
            value = value[part]
        else:
            return keys, value, False
        keys.append(str(part))
    return keys, value, True


def _field_errors(model: type[BaseModel], args: dict[str, Any]) -> list[FieldError]:
    try:
        model.model_validate_json(json.dumps(args), strict=True)
        return []
    except ValidationError as e:
        issues = e.errors(include_url=False, include_input=False)
    out: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for issue in issues:
        if len(out) >= MAX_FIELD_ERRORS:
            break
        loc = tuple(issue["loc"])
        kind = issue["type"]
        if kind == "missing":
            keys, _, _ = _resolve(args, loc[:-1])
            name = str(loc[-1])
            pointer = "".join(_child_pointer("", k) for k in keys + [name])
            error: FieldError = {"field": _field_of(pointer), "pointer": pointer, "message": f"missing required argument `{name}`", "hint": f"add `{name}`"}
        elif kind == "extra_forbidden":
            keys, _, _ = _resolve(args, loc)
            pointer = "".join(_child_pointer("", k) for k in keys)
            error = {"field": _field_of(pointer), "pointer": pointer, "message": f"unknown argument `{_shown(keys[-1]) if keys else ''}`"}
        else:
            keys, _, whole = _resolve(args, loc)
            pointer = "".join(_child_pointer("", k) for k in keys)
            error = {"field": _field_of(pointer) if pointer else "(arguments)", "pointer": pointer, "message": str(issue["msg"])}
            if not whole:
                # A union's branches each report the value: one error says it fits none.
                error["message"] = "matches none of the allowed types or values"
        if (error["pointer"], error["message"]) in seen:
            continue
        seen.add((error["pointer"], error["message"]))
        out.append(error)
    return out


def check(name: str, raw: Any) -> Checked:
    """Checks a call as exec does before its handler runs: the op (or its tool name), arguments
    (a JSON string is parsed), aliases, empty arguments, unknown names, then the model. The
    caller's arguments are not modified; a successful check returns the arguments to send."""
    warnings: list[str] = []
    op = name if name in OPS else TOOL_TO_OP.get(name)
    if op is None:
        return {"ok": False, "op": name, "error": _failure(name, "NOT_FOUND", f"unknown op `{_shown(name)}`", {}), "warnings": warnings}
    if op != name:
        warnings.append(f"`{name}` is a tool name; the op is `{op}`")
    info = OPS[op]
    args: Any = {} if raw is None else raw
    if isinstance(args, BaseModel):
        args = json.loads(args.model_dump_json(by_alias=True, exclude_unset=True))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as e:
            return {"ok": False, "op": op, "error": _failure(op, "MALFORMED_ARGS", f"`args` is not valid JSON: {e}", {}), "warnings": warnings}
        if isinstance(args, dict):
            warnings.append("`args` was a JSON string; parsed it as an object")
    if not isinstance(args, dict):
        kind = "null" if args is None else "an array" if isinstance(args, list) else f"a {type(args).__name__}"
        return {"ok": False, "op": op, "error": _failure(op, "MALFORMED_ARGS", f"`args` must be a JSON object, got {kind}", {}), "warnings": warnings}
    args = copy.deepcopy(args)
    _apply_aliases(info, args, warnings)
    if not args and info["required"]:
        message = f"`{op}` needs arguments: {', '.join(info['required'])}"
        return {"ok": False, "op": op, "error": _failure(op, "EMPTY_ARGS", message, {"required_args": info["required"], "usage": info["usage"]}), "warnings": warnings}
    unknown: list[dict[str, Any]] = []
    _unknown_arguments(info["shape"], args, "", 0, unknown)
    dropped: set[str] = set()
    if not info.get("pass_unknown"):
        _strip_undeclared(info["shape"], args, "", 0, dropped)
    errors = _field_errors(ARG_MODELS[op], args)
    for u in unknown:
        fate = ("the schema does not declare it, so it was dropped before the call" if u["pointer"] in dropped
                else "the schema lets it through, so it is passed on unchecked")
        field = u["pointer"].lstrip("/").replace("/", ".")
        closest = u["closest"]
        if closest is not None and u["closest_missing"]:
            for err in errors:
                if err["field"].split(".")[-1] == closest:
                    err["hint"] = f"you sent `{u['name']}`: rename it to `{closest}`"
            errors.append({"field": field, "pointer": u["pointer"],
                           "message": f"`{u['name']}` is not an argument of this op; did you mean `{closest}`?",
                           "hint": f"rename `{u['name']}` to `{closest}`"})
        elif closest is not None:
            warnings.append(f"`{field}` is not an argument of this op; did you mean `{closest}`? ({fate})")
        else:
            warnings.append(f"`{field}` is not an argument of this op ({fate})")
    if errors:
        n = len(errors)
        message = f"{n} argument problem{'' if n == 1 else 's'} in `{op}`"
        return {"ok": False, "op": op, "error": _failure(op, "VALIDATION_ERROR", message, {"usage": info["usage"]}, errors), "warnings": warnings}
    return {"ok": True, "op": op, "args": args, "warnings": warnings}


def check_result(op: str, result: Any) -> list[FieldError]:
    """Checks a result against the op's declared output schema (MCP `outputSchema`): every
    failing field, as for arguments. An op that declares no result accepts any."""
    model = RESULT_MODELS.get(op)
    if model is None or not isinstance(result, dict):
        return [] if model is None else [{"field": "(result)", "pointer": "", "message": "the result is not an object"}]
    return _field_errors(model, result)


class Transport(Protocol):
    """Runs a checked call and answers an envelope."""

    def call(self, call: Call) -> Envelope: ...


def _envelope(op: str, ok: bool, warnings: list[str], result: Any = None, error: Optional[ErrorBody] = None) -> Envelope:
    env: Envelope = {"op": op, "ok": ok, "meta": {"trace_id": "", "latency_ms": 0, "warnings": warnings}}
    if error is not None:
        env["error"] = error
    else:
        env["result"] = result
    return env


class HandlerError(Exception):
    """What a handler raises to answer an error with its own code (e.g. NOT_FOUND)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class HandlersTransport:
    """A transport over handlers in this process: a handler's return value is the result."""

    def __init__(self, handlers: Mapping[str, Callable[[dict[str, Any]], Any]]) -> None:
        self.handlers = handlers

    def call(self, call: Call) -> Envelope:
        handler = self.handlers.get(call["op"])
        if handler is None:
            return _envelope(call["op"], False, [], error=_failure(call["op"], "NOT_IMPLEMENTED", f"no handler for `{call['op']}`", {}))
        try:
            return _envelope(call["op"], True, [], result=handler(call["args"]))
        except HandlerError as e:
            return _envelope(call["op"], False, [], error=_failure(call["op"], e.code, e.message, {}))
        except Exception as e:  # noqa: BLE001 - a handler's failure is an envelope, as in the runtime
            return _envelope(call["op"], False, [], error=_failure(call["op"], "INTERNAL", str(e), {}))


class McpTransport:
    """A transport to `toolreg serve`: `call_tool(name, arguments)` is an MCP client's call (e.g.
    a wrapper of the `mcp` package's session); its result's structured content is the envelope."""

    def __init__(self, call_tool: Callable[[str, dict[str, Any]], Any], exec_tool: str = EXEC_TOOL) -> None:
        self.call_tool = call_tool
        self.exec_tool = exec_tool

    def call(self, call: Call) -> Envelope:
        request: dict[str, Any] = {"op": call["op"], "args": call["args"]}
        if "idempotency_key" in call:
            request["idempotency_key"] = call["idempotency_key"]
        if "dry_run" in call:
            request["dry_run"] = call["dry_run"]
        answer = self.call_tool(self.exec_tool, request)
        structured = answer.get("structuredContent") if isinstance(answer, dict) else getattr(answer, "structuredContent", None)
        if isinstance(structured, dict):
            return cast(Envelope, structured)
        return _envelope(call["op"], False, [], error=_failure(call["op"], "INTERNAL", "the server's answer was not an envelope", {}))


class Client:
    """A typed client: each call is checked here first, and only a valid one reaches the transport."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def exec(self, op: Op, args: Union[Mapping[str, Any], BaseModel], *, idempotency_key: Optional[str] = None, dry_run: Optional[bool] = None) -> Envelope:
        checked = check(op, dict(args) if isinstance(args, Mapping) else args)
        if not checked["ok"] or "args" not in checked:
            return _envelope(checked["op"], False, checked["warnings"], error=checked.get("error"))
        call: Call = {"op": checked["op"], "tool": OPS[checked["op"]]["tool"], "args": checked["args"]}
        if idempotency_key is not None:
            call["idempotency_key"] = idempotency_key
        if dry_run is not None:
            call["dry_run"] = dry_run
        answer = self.transport.call(call)
        if checked["warnings"]:
            answer["meta"]["warnings"] = checked["warnings"] + list(answer["meta"].get("warnings", []))
        return answer
