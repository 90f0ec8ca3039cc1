import {
  Controls,
  Edge,
  Handle,
  MarkerType,
  Node,
  NodeProps,
  Position,
  ReactFlow,
  ReactFlowProvider,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import './topology.css';
import { ReactNode, useMemo, useSyncExternalStore } from 'react';
import { Link, navigate } from '../router';
import { NODE_HEIGHT, NODE_WIDTH, layOut } from './layout';
import { NODE_STATUSES, NodeStatus, statusClass, statusLabel } from './model';

/** One node as the graph draws it: the page decides what it says. */
export interface DrawnNode {
  key: string;
  depends_on: readonly string[];
  /** What it does: its task type, "switch", ... */
  kind: string;
  /** In a run: its status (coloured, and always said in words). */
  status?: NodeStatus;
  /** A second line: attempt, progress, items. */
  detail?: ReactNode;
  /** Where a click on its name goes (its task). */
  href?: string | null;
  /** A problem to show on the node (a validation error, or why it failed). */
  problem?: string | null;
}

type BoxData = DrawnNode & Record<string, unknown>;

function NodeBox({ data }: NodeProps<Node<BoxData>>) {
  const cls = ['dag-node', data.status ? statusClass(data.status) : 'node-plain'];
  if (data.href) cls.push('has-link');
  if (data.problem && !data.status) cls.push('node-invalid');
  return (
    <div className={cls.join(' ')} data-node={data.key} data-status={data.status}>
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <div className="dag-node-head">
        {data.href ? (
          <Link href={data.href} className="dag-node-key">
            {data.key}
          </Link>
        ) : (
          <strong className="dag-node-key">{data.key}</strong>
        )}
        {data.status ? (
          <span className="dag-node-status">
            <span aria-hidden="true" className="dag-dot" />
            {statusLabel(data.status)}
          </span>
        ) : null}
      </div>
      <div className="dag-node-kind">{data.kind}</div>
      {data.detail ? <div className="dag-node-detail">{data.detail}</div> : null}
      {data.problem ? (
        <div className="dag-node-problem" title={data.problem}>
          {data.problem}
        </div>
      ) : null}
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </div>
  );
}

const NODE_TYPES = { box: NodeBox };

const onResize = (changed: () => void): (() => void) => {
  window.addEventListener('resize', changed);
  return () => window.removeEventListener('resize', changed);
};
const pageWidth = (): number => window.innerWidth;

/** What a node says of itself to screen readers: key, what it does, status, problem. */
function describe(n: DrawnNode): string {
  const parts = [n.key, n.kind];
  if (n.status) parts.push(statusLabel(n.status));
  if (n.problem) parts.push(n.problem);
  return parts.join(', ');
}

/**
 * A read-only DAG, laid out automatically (layout.ts), drawn with React Flow: pan by dragging,
 * zoom with the buttons; nothing can be moved or connected. A node's name links to its task when
 * it has one, so the keyboard reaches each node through its link, in reading order. The same
 * facts are in the node table each page shows beside it, for screen readers and small screens.
 */
export function DagGraph({ nodes, label }: { nodes: readonly DrawnNode[]; label: string }) {
  const shape = nodes.map((n) => `${n.key}<${n.depends_on.join(',')}`).join(';');
  // The layout depends on the shape only: a status change redraws without moving anything.
  const layout = useMemo(() => layOut(nodes), [shape]);
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const flowNodes: Node<BoxData>[] = layout.placed.map((p) => {
    const n = byKey.get(p.key) as DrawnNode;
    return {
      id: p.key,
      type: 'box',
      position: { x: p.x, y: p.y },
      data: { ...n },
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      draggable: false,
      selectable: false,
      connectable: false,
      ariaRole: 'group',
      ariaLabel: describe(n),
    };
  });
  const keys = new Set(nodes.map((n) => n.key));
  const edges: Edge[] = nodes.flatMap((n) =>
    n.depends_on
      .filter((d) => keys.has(d) && d !== n.key)
      .map((d) => ({
        id: `${d}->${n.key}`,
        source: d,
        target: n.key,
        markerEnd: { type: MarkerType.ArrowClosed },
        ariaLabel: `${n.key} depends on ${d}`,
      })),
  );
  // As tall as the graph once fitted to the width it has (a wide graph on a phone is shrunk).
  const width = useSyncExternalStore(onResize, pageWidth);
  const scale = Math.min(1, (width - 40) / (layout.width + 40));
  const height = Math.max(160, Math.min(560, (layout.height + 40) * scale + 24));
  return (
    <ReactFlowProvider>
      <div className="dag" style={{ height }}>
        <ReactFlow
          aria-label={label}
          nodes={flowNodes}
          edges={edges}
          nodeTypes={NODE_TYPES}
          fitView
          fitViewOptions={{ padding: 0.12, maxZoom: 1 }}
          minZoom={0.1}
          maxZoom={1.5}
          nodesDraggable={false}
          nodesConnectable={false}
          nodesFocusable={false}
          edgesFocusable={false}
          elementsSelectable={false}
          zoomOnScroll={false}
          zoomOnDoubleClick={false}
          preventScrolling={false}
          proOptions={{ hideAttribution: true }}
          // A large graph (up to 1,000 nodes) draws only the nodes in view; the table lists all.
          onlyRenderVisibleElements={nodes.length > 150}
          // A click anywhere on a node follows its link (the keyboard uses the link itself).
          onNodeClick={(_e, n) => {
            if (n.data.href) navigate(n.data.href);
          }}
        >
          <Controls showInteractive={false} position="bottom-right" />
        </ReactFlow>
      </div>
    </ReactFlowProvider>
  );
}

/** What each colour means, in words: colour is never the only sign of a status. */
export function StatusLegend() {
  return (
    <ul className="dag-legend" aria-label="Node statuses">
      {NODE_STATUSES.map((s) => (
        <li key={s.status} className={statusClass(s.status)} title={s.meaning}>
          <span aria-hidden="true" className="dag-dot" />
          {s.label}
          <span className="visually-hidden">: {s.meaning}</span>
        </li>
      ))}
    </ul>
  );
}
