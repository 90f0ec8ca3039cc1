import { NodeDef, NodeKind, kindOf } from './node-def';
import { NodeKindSpec } from './node-kind';
import { subTopologyKind } from './sub-topology.kind';
import { switchKind } from './switch.kind';
import { taskKind } from './task.kind';
import { waitKind } from './wait.kind';
import { approvalKind } from './approval.kind';

export * from './node-def';
export type { Evaluation, NodeKindSpec } from './node-kind';
export { MAX_FOR_EACH } from './task.kind';
export { switchChoice } from './switch.kind';
export { APPROVER_ROLES, type ApprovalDecision, type ApprovalRequest } from './approval.kind';
export { KEY, bad, isObject, strings } from './checks';

/** Every kind of node, by name: one file each; a new kind is a file and a line here. */
export const NODE_KINDS = {
  task: taskKind,
  switch: switchKind,
  topology: subTopologyKind,
  wait: waitKind,
  approval: approvalKind,
} satisfies { [K in NodeKind]: NodeKindSpec<Extract<NodeDef, { [F in K]: unknown }>> };

/** The kind's definition of a node, typed for that node. */
export function kindSpec(n: NodeDef): NodeKindSpec<NodeDef> {
  return NODE_KINDS[kindOf(n)] as unknown as NodeKindSpec<NodeDef>;
}
