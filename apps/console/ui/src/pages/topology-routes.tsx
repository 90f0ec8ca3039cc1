import { ReactNode, Suspense, lazy } from 'react';
import { Loading } from '../components';

// The topology pages carry the graph drawing, its layout and a YAML reader: loaded when one of
// them is opened, so the other pages stay as light as they were.
const Topologies = lazy(() => import('./Topologies').then((m) => ({ default: m.Topologies })));
const TopologyDefinition = lazy(() =>
  import('./TopologyDefinition').then((m) => ({ default: m.TopologyDefinition })),
);
const TopologyImport = lazy(() =>
  import('./TopologyImport').then((m) => ({ default: m.TopologyImport })),
);
const TopologyRuns = lazy(() =>
  import('./TopologyRuns').then((m) => ({ default: m.TopologyRuns })),
);
const TopologyRun = lazy(() => import('./TopologyRun').then((m) => ({ default: m.TopologyRun })));

function page(node: ReactNode) {
  return <Suspense fallback={<Loading what="the page" />}>{node}</Suspense>;
}

/**
 * The topology pages' addresses: definitions, one definition (`?version=`), import, runs (filters
 * in the query string) and one run. Null for any other address.
 */
export function topologyPage(path: string): ReactNode | null {
  if (path === '/topologies') return page(<Topologies />);
  if (path === '/topology-import') return page(<TopologyImport />);
  if (path === '/topology-runs') return page(<TopologyRuns />);
  const def = /^\/topologies\/([^/]+)$/.exec(path);
  if (def) return page(<TopologyDefinition key={def[1]} name={decodeURIComponent(def[1])} />);
  const run = /^\/topology-runs\/([^/]+)$/.exec(path);
  if (run) return page(<TopologyRun key={run[1]} id={decodeURIComponent(run[1])} />);
  return null;
}
