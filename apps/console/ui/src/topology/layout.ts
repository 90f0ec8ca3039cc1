import { Graph, layout } from '@dagrejs/dagre';

/** The size every node box is drawn at (the layout needs it before the page draws them). */
export const NODE_WIDTH = 210;
export const NODE_HEIGHT = 96;

export interface Placed {
  key: string;
  x: number;
  y: number;
}

/**
 * Places a DAG top to bottom in layers (dagre's layered layout, computed at once in the page):
 * each node below the nodes it depends on, crossings kept few. Dependencies naming no node are
 * left out, so a definition with mistakes can still be drawn to show them. Answers the positions
 * (top-left corners), in the order a reader meets them: layer by layer, left to right.
 */
export function layOut(nodes: readonly { key: string; depends_on: readonly string[] }[]): {
  placed: Placed[];
  width: number;
  height: number;
} {
  const g = new Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: 56, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const keys = new Set(nodes.map((n) => n.key));
  for (const n of nodes) g.setNode(n.key, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const n of nodes)
    for (const d of n.depends_on) if (keys.has(d) && d !== n.key) g.setEdge(d, n.key);
  layout(g);
  const placed = nodes.map((n) => {
    const p = g.node(n.key) as { x: number; y: number };
    return { key: n.key, x: p.x - NODE_WIDTH / 2, y: p.y - NODE_HEIGHT / 2 };
  });
  placed.sort((a, b) => a.y - b.y || a.x - b.x);
  const graph = g.graph() as { width?: number; height?: number };
  return { placed, width: graph.width ?? NODE_WIDTH, height: graph.height ?? NODE_HEIGHT };
}
