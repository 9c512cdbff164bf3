// Every op's function calls `call`; the host connects it once to the gateway.

/** The gateway's answer: seed 000's envelope. */
export interface Envelope {
  op: string;
  ok: boolean;
  result?: unknown;
  error?: { code: string; message: string; details?: unknown; help_path?: string };
}

/** What runs a call: the runtime in process, or an MCP client calling `toolreg serve`'s exec tool. */
export interface Gateway {
  exec(call: { op: string; args: unknown }): Promise<Envelope>;
}

let gateway: Gateway | undefined;

/** Connects every function of the tree to a gateway. */
export function connect(g: Gateway): void {
  gateway = g;
}

/** A failed call: the envelope's error, with the help path to read. */
export class GatewayError extends Error {
  constructor(readonly envelope: Envelope) {
    super(envelope.error ? `${envelope.error.code}: ${envelope.error.message}` : "the call failed");
  }
}

/** Runs an op through the gateway; its result, or a GatewayError. */
export async function call(op: string, args: unknown): Promise<unknown> {
  if (gateway === undefined) throw new Error("codemode: call connect(gateway) first");
  const answer = await gateway.exec({ op, args });
  if (!answer.ok) throw new GatewayError(answer);
  return answer.result;
}
