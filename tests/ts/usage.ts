// Uses the generated bindings the way an app would. tsc --strict must accept all of it, and the
// line under @ts-expect-error must fail to type-check (else tsc reports the unused directive).
import { ExecCall, OP_KIND, OP_TO_TOOL, Op, OpArgs, REGISTRY_VERSION, TOOL_TO_OP, ToolName } from "../../generated/ts/registry";
import * as fixture from "../fixture/generated/ts/registry";

const update: ExecCall<"onto.task.update"> = {
  op: "onto.task.update",
  args: { task_id: "t1", state_key: "done", priority: 1, due_at: null },
};

function exec<O extends Op>(call: ExecCall<O>): string {
  return `${call.op} -> ${OP_TO_TOOL[call.op]} (${OP_KIND[call.op]}, ${REGISTRY_VERSION})`;
}
exec(update);
exec({ op: "onto.project.create", args: { project: { name: "Podcast" }, tasks: [{ title: "Record pilot" }] } });

const tool: ToolName = "list_onto_tasks";
const op: Op = TOOL_TO_OP[tool];
const args: OpArgs["onto.task.list"] = { project_id: "p1", state_key: "todo", limit: 20 };
console.log(op, args);

const shipment: fixture.OpArgs["fx.order.ship"] = { order_id: "o1", shipment: { kind: "pickup", store_id: "s1" } };
const paint: fixture.FxWidgetPaintArgs = { widget_id: "w", color: { r: 1, g: 2, b: 3 } };
const ping: fixture.OpArgs["fx.health.ping"] = {};
console.log(shipment, paint, ping);

// A wrong argument: state_key is a union of literals, "finished" is not one of them.
// @ts-expect-error
exec({ op: "onto.task.update", args: { task_id: "t1", state_key: "finished" } });
